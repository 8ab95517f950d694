import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres, type EmbeddedPostgres, type EmbeddedPostgresOptions } from '../../../src/embedded/postgres.js';

/** A PostgreSQL cluster of its own (own data directory and port), so restarting it disturbs nobody else. */
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

/** The embedded PostgreSQL albumflow runs without DATABASE_URL, with the settings of a load test. */
export async function startPrivateCluster(): Promise<PrivateCluster> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-faults-pg-'));
  // As root, PostgreSQL runs as the postgres user, which must reach its directory.
  fs.chmodSync(root, 0o755);
  const options: EmbeddedPostgresOptions = {
    dataDir: path.join(root, 'data'),
    settings: { max_connections: '300', fsync: 'off', full_page_writes: 'off' },
    log: { info: () => undefined, warn: (message) => console.warn(message) },
  };
  let server: EmbeddedPostgres | undefined = await startEmbeddedPostgres(options);
  const {
    url,
    ports: [port],
  } = server;
  return {
    databaseUrl: url,
    port,
    async start() {
      server = await startEmbeddedPostgres({ ...options, port });
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
