// The media collector's rows (docs/design.md, "Data lifetime"): the objects that purges left
// unreferenced, each collected under the media object's lock that a download's record takes too
// (recordDownloadResult, the record_download function, which queues the objects it wrote for a row that
// is gone), and the memory of the objects it removed.
import type { Pool, Queryable } from './pool.js';
import { withTransaction } from './transaction.js';

/** How long the collector remembers an object it removed (longer than any download takes). */
const removalMemoryHours = 24;

/** The objects queued for the collector, oldest first; an object set aside waits for its `retry_at`. */
export async function mediaGarbage(db: Queryable, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ sha256: string }>(
    `SELECT sha256 FROM media_garbage WHERE retry_at IS NULL OR retry_at <= now() ORDER BY since, sha256 LIMIT $1`,
    [limit],
  );
  return rows.map((row) => row.sha256);
}

/**
 * Queues an object whose thumbnail was just written when no attachment references it any more: a
 * collector pass that removed the file and its thumbnails meanwhile left this one behind.
 */
export async function queueThumbnailIfUnreferenced(pool: Pool, sha256: string): Promise<boolean> {
  return withTransaction(pool, async (client) => {
    await client.query(mediaLockStatement, [sha256]);
    const { rowCount } = await client.query(
      `INSERT INTO media_garbage (sha256)
       SELECT $1 WHERE NOT EXISTS (SELECT 1 FROM attachments WHERE sha256 = $1) AND NOT EXISTS (SELECT 1 FROM attachments WHERE still_sha256 = $1)
       ON CONFLICT (sha256) DO NOTHING`,
      [sha256],
    );
    return rowCount === 1;
  });
}

/** The transaction-scoped lock of one media object: the collector and a download's record take it. */
export const mediaLockStatement = `SELECT pg_advisory_xact_lock(hashtextextended('albumflow-media:' || $1::text, 0))`;

/** Why the store did not remove an object: it refused (and will refuse again), or it did not answer. */
export interface RemovalFailure {
  refused: boolean;
  /** The store's answer, as the store module words it: never a credential. */
  error: string;
}

export type Collected =
  | { removed: boolean; bytes: number }
  /** Not removed: kept queued; `setAside` when it waits for its retry time, else it may be tried again now. */
  | { removed: false; bytes: 0; failure: RemovalFailure; setAside: boolean };

export interface CollectOptions {
  /** The store's failure of `remove`; null for any other error, which is thrown (and nothing is recorded). */
  failureOf?: (err: unknown) => RemovalFailure | null;
  /** How long the store may not answer for an object before the object is set aside. */
  outageGraceMs?: number;
}

/** An error text kept in the queue is cut to this. */
const errorLength = 500;

/**
 * When a set-aside object is tried again: an hour after its first failure, then 2, 4, 8 and 16 hours,
 * then every 24 hours. `failures` is the row's count before this one.
 */
const retryAtSql = `now() + least(power(2, failures), 24) * interval '1 hour'`;

/**
 * Collects one queued object under its lock: when no attachment references it any more, `remove`
 * removes it from the store (answering the bytes it held, null when it was gone already) and the
 * removal is remembered; either way it leaves the queue. Null when another collector took it first.
 * A failure of `remove` that `failureOf` names keeps it queued with its error: a refusal sets it aside
 * at once (retry_at, see retryAtSql); the store not answering sets it aside once it has not answered for
 * this object for `outageGraceMs`, and until then the caller may try again. Any other failure rolls back.
 * A download records its object under the same lock (recordDownloadResult), so an object is never
 * removed after an attachment referenced it, and a download whose object was removed meanwhile sees it.
 */
export async function collectObject(
  pool: Pool,
  sha256: string,
  remove: () => Promise<number | null>,
  options: CollectOptions = {},
): Promise<Collected | null> {
  const { failureOf = () => null, outageGraceMs = 0 } = options;
  return withTransaction(pool, async (client): Promise<Collected | null> => {
    await client.query(mediaLockStatement, [sha256]);
    const queued = await client.query(`SELECT 1 FROM media_garbage WHERE sha256 = $1`, [sha256]);
    if (queued.rowCount === 0) return null;
    const { rows } = await client.query<{ referenced: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM attachments WHERE sha256 = $1) OR EXISTS (SELECT 1 FROM attachments WHERE still_sha256 = $1) AS referenced`,
      [sha256],
    );
    let bytes: number | null = 0;
    if (!rows[0]!.referenced) {
      try {
        bytes = await remove();
      } catch (err) {
        const failure = failureOf(err);
        if (!failure) throw err;
        return { removed: false, bytes: 0, failure, setAside: await recordFailure(client, sha256, failure, outageGraceMs) };
      }
    }
    await client.query(`DELETE FROM media_garbage WHERE sha256 = $1`, [sha256]);
    if (rows[0]!.referenced) return { removed: false, bytes: 0 };
    await client.query(`INSERT INTO media_removals (sha256) VALUES ($1) ON CONFLICT (sha256) DO UPDATE SET removed_at = now()`, [sha256]);
    // Not there: a collector that crashed after removing it and before committing removed it.
    return bytes === null ? { removed: false, bytes: 0 } : { removed: true, bytes };
  });
}

/** Records a failed removal on the queued object; answers whether it is set aside now. */
async function recordFailure(db: Queryable, sha256: string, failure: RemovalFailure, outageGraceMs: number): Promise<boolean> {
  const { rows } = await db.query<{ set_aside: boolean }>(
    `WITH decided AS (
       SELECT sha256, $3::boolean OR coalesce(failing_since, now()) <= now() - $4::int * interval '1 millisecond' AS set_aside
         FROM media_garbage WHERE sha256 = $1
     )
     UPDATE media_garbage g
        SET last_error = $2,
            failures = g.failures + CASE WHEN d.set_aside THEN 1 ELSE 0 END,
            retry_at = CASE WHEN d.set_aside THEN ${retryAtSql} ELSE g.retry_at END,
            failing_since = CASE WHEN d.set_aside THEN NULL ELSE coalesce(g.failing_since, now()) END
       FROM decided d
      WHERE g.sha256 = d.sha256
     RETURNING d.set_aside`,
    [sha256, failure.error.slice(0, errorLength), failure.refused, outageGraceMs],
  );
  return rows[0]?.set_aside ?? false;
}

/**
 * Sets these queued objects aside untried, with `error` (the store is down: the rest of a batch waits for
 * their retry time rather than for the store); answers how many were due and are set aside now.
 */
export async function setAsideMedia(db: Queryable, sha256s: readonly string[], error: string): Promise<number> {
  if (sha256s.length === 0) return 0;
  const set = await db.query(
    `UPDATE media_garbage SET last_error = $2, failures = failures + 1, retry_at = ${retryAtSql}, failing_since = NULL
      WHERE sha256 = ANY($1::text[]) AND (retry_at IS NULL OR retry_at <= now())`,
    [sha256s, error.slice(0, errorLength)],
  );
  return set.rowCount ?? 0;
}

/** The objects set aside (the store did not remove them; each is tried again at its retry time). */
export async function countSetAsideMedia(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM media_garbage WHERE retry_at IS NOT NULL`);
  return rows[0]!.n;
}

/** Forgets the removals older than the collector's memory (retention's purge of aged rows does it). */
export async function forgetOldRemovals(db: Queryable): Promise<void> {
  await db.query(`DELETE FROM media_removals WHERE removed_at < now() - $1::int * interval '1 hour'`, [removalMemoryHours]);
}
