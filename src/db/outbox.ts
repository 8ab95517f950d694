import type { Pool, PoolClient } from './pool.js';

/** The channel the outbox's trigger notifies when a statement queued children, so dispatchers in every process wake at once. */
export const outboxChannel = 'albumflow_outbox';

export interface OutboxRow {
  id: string;
  messagePk: string;
  /** Milliseconds since the child was committed, by PostgreSQL's clock. */
  ageMs: number;
  /** The W3C traceparent of the request that queued the child; null when it was not traced. */
  traceparent: string | null;
}

/**
 * Locks up to `limit` due rows, oldest first, skipping rows another dispatcher holds. The locks last
 * until the caller's transaction ends.
 */
export async function claimOutbox(client: PoolClient, limit: number): Promise<OutboxRow[]> {
  const { rows } = await client.query<OutboxRow>(
    `SELECT id, message_pk AS "messagePk", extract(epoch FROM now() - created_at)::float8 * 1000 AS "ageMs", traceparent
       FROM outbox
      WHERE available_at <= now()
      ORDER BY id
      LIMIT $1
        FOR UPDATE SKIP LOCKED`,
    [limit],
  );
  return rows;
}

/**
 * Of these albums (by row id, with the most children their platform allows, null for no limit), the
 * ones whose stored distinct children reach the largest `total` any of them carries, or that limit. It
 * is a superset of the albums whose count trigger or `album_full` can fire now (the rules also want the
 * totals to agree and the indexes to be distinct), cheap enough for every pass: the dispatcher never
 * holds back a signal that may complete an album.
 */
export async function albumsThatMayComplete(client: PoolClient, albums: ReadonlyMap<string, number | null>): Promise<Set<string>> {
  if (albums.size === 0) return new Set();
  const { rows } = await client.query<{ album_pk: string }>(
    `SELECT m.album_pk FROM messages m
       JOIN jsonb_to_recordset($1::jsonb) AS a (pk bigint, max_children int) ON a.pk = m.album_pk
      GROUP BY m.album_pk, a.max_children
     HAVING count(*) >= LEAST(max(m.album_total), a.max_children)`,
    [JSON.stringify([...albums].map(([pk, maxChildren]) => ({ pk, max_children: maxChildren })))],
  );
  return new Set(rows.map((row) => row.album_pk));
}

/**
 * Every other row of these albums, due or held back, locked like claimOutbox's: the children a signal to
 * the album takes along, so that it carries every child of the album still waiting.
 */
export async function claimAlbumRows(client: PoolClient, albumPks: string[], claimedIds: string[]): Promise<OutboxRow[]> {
  if (albumPks.length === 0) return [];
  const { rows } = await client.query<OutboxRow>(
    `SELECT o.id, o.message_pk AS "messagePk", extract(epoch FROM now() - o.created_at)::float8 * 1000 AS "ageMs", o.traceparent
       FROM outbox o
       JOIN messages m ON m.id = o.message_pk
      WHERE m.album_pk = ANY($1::bigint[]) AND o.id <> ALL($2::bigint[])
      ORDER BY o.id
        FOR UPDATE OF o SKIP LOCKED`,
    [albumPks, claimedIds],
  );
  return rows;
}

export async function deleteOutboxRows(client: PoolClient, ids: string[]): Promise<void> {
  await client.query(`DELETE FROM outbox WHERE id = ANY($1::bigint[])`, [ids]);
}

/** Leaves rows for a later pass, without counting an attempt. */
export async function deferOutboxRows(client: PoolClient, ids: string[], delayMs: number): Promise<void> {
  await client.query(`UPDATE outbox SET available_at = now() + $2::float8 * interval '1 millisecond' WHERE id = ANY($1::bigint[])`, [
    ids,
    delayMs,
  ]);
}

/**
 * Counts a failed attempt on each row. A row is claimed again after `baseDelayMs` doubled for each of its
 * earlier attempts, at most `maxDelayMs` (a base of 0: at the next pass).
 */
export async function recordOutboxFailure(
  client: PoolClient,
  ids: string[],
  failure: { error: string; baseDelayMs: number; maxDelayMs: number },
): Promise<void> {
  await client.query(
    `UPDATE outbox
        SET attempts = attempts + 1,
            last_error = $2,
            available_at = now() + LEAST($4::float8, $3::float8 * power(2, LEAST(attempts, 30))) * interval '1 millisecond'
      WHERE id = ANY($1::bigint[])`,
    [ids, failure.error, failure.baseDelayMs, failure.maxDelayMs],
  );
}

export async function outboxStats(pool: Pool): Promise<{ depth: number; oldestAgeSeconds: number }> {
  const { rows } = await pool.query<{ depth: number; oldest_age_seconds: number }>(
    `SELECT count(*)::int AS depth,
            COALESCE(extract(epoch FROM now() - min(created_at)), 0)::float8 AS oldest_age_seconds
       FROM outbox`,
  );
  return { depth: rows[0]!.depth, oldestAgeSeconds: rows[0]!.oldest_age_seconds };
}
