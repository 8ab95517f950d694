import type { ChildArrival, JsonValue, MessageKey } from '../../workflows/types.js';
import type { Pool, PoolClient } from './pool.js';

/** The channel a committed child notifies, so dispatchers in every process wake at once. */
export const outboxChannel = 'albumflow_outbox';

export interface OutboxRow {
  id: string;
  messagePk: string;
}

/**
 * Locks up to `limit` due rows, oldest first, skipping rows another dispatcher holds. The locks last
 * until the caller's transaction ends.
 */
export async function claimOutbox(
  client: PoolClient,
  options: { limit: number; workspacePrefix: string | undefined },
): Promise<OutboxRow[]> {
  const { rows } = await client.query<OutboxRow>(
    `SELECT o.id, o.message_pk AS "messagePk"
       FROM outbox o
      WHERE o.available_at <= now()
        AND ($2::text IS NULL
             OR EXISTS (SELECT 1 FROM messages m WHERE m.id = o.message_pk AND starts_with(m.workspace, $2::text)))
      ORDER BY o.id
      LIMIT $1
        FOR UPDATE OF o SKIP LOCKED`,
    [options.limit, options.workspacePrefix ?? null],
  );
  return rows;
}

/** A committed child as its workflow receives it; `albumId` is null for a standalone message. */
export interface StoredChild {
  messagePk: string;
  key: MessageKey;
  albumPk: string | null;
  albumId: string | null;
  arrival: ChildArrival;
}

interface StoredChildRow {
  message_pk: string;
  album_pk: string | null;
  workspace: string;
  provider: string;
  account_id: string;
  conversation_id: string;
  message_id: string;
  album_id: string | null;
  album_meta: JsonValue | null;
  album_index: number | null;
  album_total: number | null;
  metadata_invalid: boolean;
  caption: string | null;
  sent_at: Date | null;
  first_received_at: Date;
  attachments: ChildArrival['attachments'];
}

export async function loadChildren(client: PoolClient, messagePks: string[]): Promise<StoredChild[]> {
  const { rows } = await client.query<StoredChildRow>(
    `SELECT m.id AS message_pk, m.album_pk, m.workspace, m.provider, m.account_id, m.conversation_id, m.message_id,
            al.album_id, m.album_meta, m.album_index, m.album_total, m.metadata_invalid, m.caption, m.sent_at,
            m.first_received_at,
            COALESCE(
              (SELECT json_agg(json_build_object('position', a.position, 'url', a.url, 'mimeType', a.mime_type)
                               ORDER BY a.position)
                 FROM attachments a WHERE a.message_pk = m.id),
              '[]') AS attachments
       FROM messages m
       LEFT JOIN albums al ON al.id = m.album_pk
      WHERE m.id = ANY($1::bigint[])`,
    [messagePks],
  );
  return rows.map((row) => ({
    messagePk: row.message_pk,
    key: {
      workspace: row.workspace,
      provider: row.provider,
      accountId: row.account_id,
      conversationId: row.conversation_id,
      messageId: row.message_id,
    },
    albumPk: row.album_pk,
    albumId: row.album_id,
    arrival: {
      messageId: row.message_id,
      index: row.album_index,
      total: row.album_total,
      metadataInvalid: row.metadata_invalid,
      albumMeta: albumMeta(row.album_meta),
      caption: row.caption,
      sentAt: row.sent_at?.toISOString() ?? null,
      receivedAt: row.first_received_at.toISOString(),
      attachments: row.attachments,
    },
  }));
}

/** The `index` and `total` of the album object as received, whatever their type. */
function albumMeta(stored: JsonValue | null): ChildArrival['albumMeta'] {
  if (typeof stored !== 'object' || stored === null || Array.isArray(stored)) return null;
  const meta: NonNullable<ChildArrival['albumMeta']> = {};
  if (stored.index !== undefined) meta.index = stored.index;
  if (stored.total !== undefined) meta.total = stored.total;
  return meta;
}

/**
 * Of these albums, the ones whose stored distinct children reach the largest `total` any of them
 * carries: the children on their way complete the album (or might), so they should not wait.
 */
export async function albumsAtTotal(client: PoolClient, albumPks: string[]): Promise<Set<string>> {
  if (albumPks.length === 0) return new Set();
  const { rows } = await client.query<{ album_pk: string }>(
    `SELECT album_pk FROM messages
      WHERE album_pk = ANY($1::bigint[])
      GROUP BY album_pk
     HAVING count(*) >= max(album_total)`,
    [albumPks],
  );
  return new Set(rows.map((row) => row.album_pk));
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
