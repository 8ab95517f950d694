import os from 'node:os';
import pg from 'pg';
import { parseIntoClientConfig } from 'pg-connection-string';
import type { Logger } from '../common/log.js';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
/** What runs a statement: the pool, or one of its clients (inside a transaction). */
export type Queryable = Pick<PoolClient, 'query'>;

const defaultDatabase = 'albumflow';

/**
 * Connection settings for DATABASE_URL, database `albumflow` when the URL names none. There is no
 * default server: without DATABASE_URL, `npm start` runs its embedded PostgreSQL and passes its URL here.
 */
export function connectionConfig(databaseUrl: string | undefined): pg.ClientConfig {
  if (!databaseUrl) {
    throw new Error('DATABASE_URL is not set (only `npm start` runs an embedded PostgreSQL of its own when it is unset)');
  }
  const parsed = parseIntoClientConfig(databaseUrl);
  // As libpq does, a URL without a user name connects as PGUSER or the OS user.
  return { ...parsed, user: parsed.user || process.env.PGUSER || os.userInfo().username, database: parsed.database || defaultDatabase };
}

export interface PoolOptions {
  max?: number;
  applicationName?: string;
  /** How long an unused connection stays open, ms (default 30 s); 0 keeps it until the pool ends. */
  idleTimeoutMillis?: number;
  /** Told of an idle connection that failed (the server restarted, or ended it). */
  logger?: Pick<Logger, 'warn'>;
}

/** Resolves once PostgreSQL answered a statement through the pool (the readiness probe). */
export async function pingDatabase(pool: Pool): Promise<void> {
  await pool.query('SELECT 1');
}

export function createPool(config: pg.ClientConfig, options: PoolOptions = {}): Pool {
  const pool = new pg.Pool({
    ...config,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'albumflow',
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: options.idleTimeoutMillis ?? 30_000,
  });
  // An idle client losing its connection (server restart) must not crash the process; the pool
  // discards it and the next query gets a fresh connection.
  pool.on('error', (err) => options.logger?.warn({ err }, 'an idle PostgreSQL connection failed; the pool replaces it'));
  // pg-pool listens for errors only while a client is idle. A checked-out client whose connection drops
  // between two queries (a transaction awaiting Temporal while the server restarts) would emit 'error'
  // with no listener and crash the process; with this one, its next query fails instead and the pool
  // discards it on release.
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}

/**
 * A connection outside any pool. When the server ends it (57P01 as it shuts down, or a crash), pg emits
 * 'error', which would end the process without a listener: the statement it runs fails instead.
 */
export function standaloneClient(config: pg.ClientConfig): pg.Client {
  const client = new pg.Client(config);
  client.on('error', () => undefined);
  return client;
}

/**
 * Creates the configured database when it does not exist yet, connecting to the server's
 * `postgres` database to do so. Safe when several processes race to create it.
 */
export async function ensureDatabase(config: pg.ClientConfig): Promise<void> {
  const probe = standaloneClient(config);
  try {
    await probe.connect();
    return;
  } catch (err) {
    if ((err as { code?: string }).code !== '3D000') throw err; // invalid_catalog_name
  } finally {
    await probe.end().catch(() => undefined);
  }
  const name = databaseName(config);
  const admin = standaloneClient(withDatabase(config, 'postgres'));
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
  } catch (err) {
    const code = (err as { code?: string }).code;
    // 42P04 duplicate_database; 23505 when two creators race on pg_database's unique index.
    if (code !== '42P04' && code !== '23505') throw err;
  } finally {
    await admin.end();
  }
}

export function databaseName(config: pg.ClientConfig): string {
  return config.database ?? defaultDatabase;
}

export function withDatabase(config: pg.ClientConfig, database: string): pg.ClientConfig {
  return { ...config, database };
}

/** Errors that mean "the database is unreachable or restarting", as opposed to a bad statement. */
export function isUnavailable(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | null;
  if (!e) return false;
  const code = e.code ?? '';
  if (['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'ETIMEDOUT', 'EPIPE', 'ENOENT', 'EAI_AGAIN'].includes(code)) return true;
  // 08 connection exception, 57P01-03 admin/crash shutdown or cannot connect now, 53300 too many connections.
  if (code.startsWith('08') || ['57P01', '57P02', '57P03', '53300'].includes(code)) return true;
  const message = e.message ?? '';
  return /timeout exceeded when trying to connect|Connection terminated|Client has encountered a connection error|connection timeout/i.test(
    message,
  );
}

/** A `postgresql://` URL for a connection config, for child processes and DATABASE_URL. */
export function connectionUrl(config: pg.ClientConfig): string {
  const url = new URL('postgresql://localhost');
  const host = config.host ?? '127.0.0.1';
  if (host.startsWith('/')) url.searchParams.set('host', host);
  else url.host = `${host}:${config.port ?? 5432}`;
  url.username = encodeURIComponent(config.user ?? '');
  if (typeof config.password === 'string') url.password = encodeURIComponent(config.password);
  url.pathname = `/${encodeURIComponent(config.database ?? defaultDatabase)}`;
  return url.toString();
}
