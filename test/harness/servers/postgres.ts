// PostgreSQL for the tests, the fault suite and the bench: a cluster of their own (the embedded
// PostgreSQL albumflow runs without DATABASE_URL, its own data directory and port, so restarting it
// disturbs nobody else), and the admin connection that creates, migrates and drops the databases of a run.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { migrate } from '../../../src/db/migrate.js';
import { withDatabase } from '../../../src/db/pool.js';
import { startEmbeddedPostgres, type EmbeddedPostgres, type EmbeddedPostgresOptions } from '../../../src/embedded/postgres.js';

export interface PrivateCluster {
  /** DATABASE_URL of the `albumflow` database on this cluster (created by the service on first start). */
  databaseUrl: string;
  port: number;
  /** Starts it again on the same port and data. */
  start(): Promise<void>;
  /** Fast shutdown: connections are closed, in-flight transactions rolled back. */
  stop(): Promise<void>;
  /** Stops the cluster and deletes its directory. */
  remove(): Promise<void>;
}

export interface PrivateClusterOptions {
  /** The data directory; default one in a fresh temporary directory. */
  dataDir?: string;
  settings?: Record<string, string>;
  /** Default: nothing logged. */
  log?: EmbeddedPostgresOptions['log'];
}

/** Its warnings on the console. */
export const warningsLog: NonNullable<EmbeddedPostgresOptions['log']> = { info: () => undefined, warn: (message) => console.warn(message) };

export async function startPrivateCluster(options: PrivateClusterOptions = {}): Promise<PrivateCluster> {
  const root = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-pg-'));
  // As root, PostgreSQL runs as the postgres user, which must reach its directory.
  if (!options.dataDir) fs.chmodSync(root, 0o755);
  const embedded: EmbeddedPostgresOptions = {
    dataDir: options.dataDir ?? path.join(root, 'data'),
    settings: options.settings ?? {},
    ...(options.log ? { log: options.log } : {}),
  };
  let server: EmbeddedPostgres | undefined = await startEmbeddedPostgres(embedded);
  const {
    url,
    ports: [port],
  } = server;
  return {
    databaseUrl: url,
    port,
    async start() {
      server = await startEmbeddedPostgres({ ...embedded, port });
    },
    async stop() {
      await server?.stop();
      server = undefined;
    },
    async remove() {
      await server?.stop().catch(() => undefined);
      server = undefined;
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}

/** The server's `postgres` database, where a run creates and drops its databases. */
export interface Admin {
  /** Creates a database and migrates it, or copies a migrated one (`template`). */
  createDatabase(name: string, options?: { template?: string }): Promise<void>;
  dropDatabase(name: string): Promise<void>;
  /** Drops every database whose name starts with `prefix`. */
  dropDatabases(prefix: string): Promise<void>;
  end(): Promise<void>;
}

export async function connectAdmin(base: pg.ClientConfig): Promise<Admin> {
  const client = new pg.Client(withDatabase(base, 'postgres'));
  await client.connect();
  const drop = (name: string) => client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
  return {
    async createDatabase(name, { template } = {}) {
      if (template === undefined) {
        await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
        await migrate(withDatabase(base, name));
        return;
      }
      for (let attempt = 1; ; attempt++) {
        try {
          await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)} TEMPLATE ${pg.escapeIdentifier(template)}`);
          return;
        } catch (err) {
          // Two copies of one template at once: PostgreSQL refuses the second while the first reads it.
          if ((err as { code?: string }).code !== '55006' || attempt === 20) throw err;
          await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
        }
      }
    },
    async dropDatabase(name) {
      await drop(name);
    },
    async dropDatabases(prefix) {
      const { rows } = await client.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE starts_with(datname, $1)`, [prefix]);
      for (const { datname } of rows) await drop(datname);
    },
    end: () => client.end(),
  };
}
