// What PostgreSQL did over a phase: the transactions committed and the rows written in each database of
// the run (pg_stat_database), and the WAL the whole server wrote meanwhile.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool } from '../src/db/pool.js';
import type { PostgresActivity, RowsWritten } from './report.js';

/** One database's counters: transactions committed and rows written. */
interface DatabaseCounters {
  commits: number;
  rowsWritten: RowsWritten;
}

/** The server's WAL position and the counters of every database of the run, by its name less the run's prefix ("app" for the app's). */
export interface PostgresCounters {
  walLsn: string;
  databases: Record<string, DatabaseCounters>;
}

/**
 * How long a backend may keep the counts of its transactions before it adds them to pg_stat_database:
 * a busy one adds them at most once a second (PostgreSQL 15 and later). One idle since its last
 * transaction adds them only after 10 s, so the last second of a connection that went idle at the end of
 * a phase is counted in the next phase.
 */
const statsFlushMs = 1_100;

/**
 * The counters of every database whose name starts with `runPrefix` (the app's, the ceiling's, the
 * variants', the real Temporal server's), read through `pool`.
 */
export async function postgresCounters(pool: Pool, runPrefix: string): Promise<PostgresCounters> {
  const { rows } = await pool.query<{
    wal_lsn: string;
    datname: string | null;
    commits: string;
    inserted: string;
    updated: string;
    deleted: string;
  }>(
    `SELECT pg_current_wal_lsn()::text AS wal_lsn, d.datname, d.xact_commit AS commits, d.tup_inserted AS inserted,
            d.tup_updated AS updated, d.tup_deleted AS deleted
       FROM (SELECT 1) AS one
       LEFT JOIN pg_stat_database AS d ON left(d.datname, length($1)) = $1`,
    [runPrefix],
  );
  const databases: Record<string, DatabaseCounters> = {};
  for (const row of rows) {
    if (row.datname === null) continue;
    databases[row.datname.slice(runPrefix.length).replace(/^_/, '') || 'app'] = {
      commits: Number(row.commits),
      rowsWritten: { inserted: Number(row.inserted), updated: Number(row.updated), deleted: Number(row.deleted) },
    };
  }
  return { walLsn: rows[0]!.wal_lsn, databases };
}

/** The counters after a phase, once the backends that worked in it added theirs (see statsFlushMs). */
export async function postgresCountersAfter(pool: Pool, runPrefix: string): Promise<PostgresCounters> {
  await sleep(statsFlushMs);
  return postgresCounters(pool, runPrefix);
}

/** The bytes of WAL between two positions (`X/Y`, as pg_current_wal_lsn() writes them). */
export function walBytesBetween(before: string, after: string): number {
  const position = (lsn: string) => {
    const [high, low] = lsn.split('/');
    return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
  };
  return Number(position(after) - position(before));
}

/**
 * What PostgreSQL did between two readings: the totals of the run's databases (a database created
 * meanwhile counts from zero), each database's own figures, and the server's WAL.
 */
export function postgresActivity(before: PostgresCounters, after: PostgresCounters): PostgresActivity {
  const total: DatabaseCounters = { commits: 0, rowsWritten: { inserted: 0, updated: 0, deleted: 0 } };
  const databases: Record<string, DatabaseCounters> = {};
  for (const [name, counters] of Object.entries(after.databases)) {
    const earlier = before.databases[name];
    const rows = counters.rowsWritten;
    const delta: DatabaseCounters = {
      commits: counters.commits - (earlier?.commits ?? 0),
      rowsWritten: {
        inserted: rows.inserted - (earlier?.rowsWritten.inserted ?? 0),
        updated: rows.updated - (earlier?.rowsWritten.updated ?? 0),
        deleted: rows.deleted - (earlier?.rowsWritten.deleted ?? 0),
      },
    };
    if (delta.commits === 0) continue;
    databases[name] = delta;
    total.commits += delta.commits;
    total.rowsWritten.inserted += delta.rowsWritten.inserted;
    total.rowsWritten.updated += delta.rowsWritten.updated;
    total.rowsWritten.deleted += delta.rowsWritten.deleted;
  }
  return { ...total, walBytes: walBytesBetween(before.walLsn, after.walLsn), databases };
}
