// The media collector's rows (docs/design.md, "Data lifetime"): the objects that purges left
// unreferenced, each collected under the media object's lock that a download's record takes too
// (recordDownloadResult), and the memory of the objects it removed.
import type { Pool, Queryable } from './pool.js';
import { withTransaction } from './transaction.js';

/** How long the collector remembers an object it removed (longer than any download takes). */
const removalMemoryHours = 24;

/** The objects queued for the collector, oldest first. */
export async function mediaGarbage(db: Queryable, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ sha256: string }>(`SELECT sha256 FROM media_garbage ORDER BY since, sha256 LIMIT $1`, [limit]);
  return rows.map((row) => row.sha256);
}

/**
 * Queues objects for the collector (it keeps those an attachment references). Called under their locks
 * (mediaLockStatement) by what wrote them for a row that may be gone: a download's record, a thumbnail.
 */
export async function queueForCollection(db: Queryable, objects: readonly string[]): Promise<void> {
  await db.query(`INSERT INTO media_garbage (sha256) SELECT unnest($1::text[]) ORDER BY 1 ON CONFLICT (sha256) DO NOTHING`, [objects]);
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

/**
 * Collects one queued object under its lock: when no attachment references it any more, `remove`
 * removes it from the store (answering the bytes it held, null when it was gone already) and the
 * removal is remembered; either way
 * it leaves the queue. Null when another collector took it first; a failure of `remove` keeps it queued.
 * A download records its object under the same lock (recordDownloadResult), so an object is never
 * removed after an attachment referenced it, and a download whose object was removed meanwhile sees it.
 */
export async function collectObject(
  pool: Pool,
  sha256: string,
  remove: () => Promise<number | null>,
): Promise<{ removed: boolean; bytes: number } | null> {
  return withTransaction(pool, async (client): Promise<{ removed: boolean; bytes: number } | null> => {
    await client.query(mediaLockStatement, [sha256]);
    const queued = await client.query(`DELETE FROM media_garbage WHERE sha256 = $1`, [sha256]);
    if (queued.rowCount === 0) return null;
    const { rows } = await client.query<{ referenced: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM attachments WHERE sha256 = $1) OR EXISTS (SELECT 1 FROM attachments WHERE still_sha256 = $1) AS referenced`,
      [sha256],
    );
    if (rows[0]!.referenced) return { removed: false, bytes: 0 };
    const bytes = await remove();
    await client.query(`INSERT INTO media_removals (sha256) VALUES ($1) ON CONFLICT (sha256) DO UPDATE SET removed_at = now()`, [sha256]);
    // Not there: a collector that crashed after removing it and before committing removed it.
    return bytes === null ? { removed: false, bytes: 0 } : { removed: true, bytes };
  });
}

/** Forgets the removals older than the collector's memory (retention's purge of aged rows does it). */
export async function forgetOldRemovals(db: Queryable): Promise<void> {
  await db.query(`DELETE FROM media_removals WHERE removed_at < now() - $1::int * interval '1 hour'`, [removalMemoryHours]);
}
