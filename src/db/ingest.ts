import { albumKeyString, albumWorkflowId, childKeyString } from '../../workflows/keys.js';
import type { AlbumKey } from '../../workflows/types.js';
import type { AttachmentInput, ChildMessage } from '../http/event.js';
import { enqueueChild } from './outbox.js';
import type { Pool, PoolClient } from './pool.js';
import { withTransaction } from './transaction.js';

/** The event source of every UnifyPort webhook (the `source` of the events table). */
export const unifyportSource = 'unifyport';

type Queryable = Pick<PoolClient, 'query'>;

/** A verified, validated child event ready to store. `raw` is the body text, stored as received. */
export interface ChildDelivery {
  eventId: string;
  type: string;
  raw: string;
  child: ChildMessage;
}

export interface IngestResult {
  /** The child was already stored (a redelivery, under the same or another event id). */
  duplicate: boolean;
  childKey: string;
  albumKey: string | null;
}

/** Stores one child in one transaction and commits; the caller may answer 2xx once this resolves. */
export async function ingestChild(pool: Pool, delivery: ChildDelivery): Promise<IngestResult> {
  return withTransaction(pool, (client) => storeChild(client, delivery));
}

/**
 * The statements of one child delivery, inside the caller's transaction: the event, the album, the
 * child, its attachments, and an outbox row (with a notification) when the child is new or gained a URL.
 */
export async function storeChild(client: PoolClient, delivery: ChildDelivery): Promise<IngestResult> {
  const { child } = delivery;
  await recordEvent(client, { workspace: child.key.workspace, eventId: delivery.eventId, type: delivery.type, raw: delivery.raw });
  const albumPk = child.albumKey ? await upsertAlbum(client, child.albumKey) : null;
  const message = await upsertMessage(client, child, albumPk, delivery.raw);
  const attachmentsChanged = await upsertAttachments(client, message.id, child.attachments);
  if (message.inserted || attachmentsChanged > 0) await enqueueChild(client, message.id);
  return {
    duplicate: !message.inserted,
    childKey: childKeyString(child.key),
    albumKey: child.albumKey ? albumKeyString(child.albumKey) : null,
  };
}

export interface EventRecord {
  workspace: string;
  eventId: string;
  type: string;
  raw: string;
}

/** Records a verified event; a redelivery (same workspace, source and id) bumps its delivery count. */
export async function recordEvent(db: Queryable, event: EventRecord): Promise<void> {
  await db.query(
    `INSERT INTO events (workspace, source, event_id, type, raw)
     VALUES ($1, $2, $3, $4, $5::jsonb)
     ON CONFLICT (workspace, source, event_id) DO UPDATE
       SET delivery_count = events.delivery_count + 1, last_received_at = now()`,
    [event.workspace, unifyportSource, event.eventId, event.type, event.raw],
  );
}

/**
 * The album's row, created on its first child. Not a single INSERT … ON CONFLICT DO UPDATE: albums has a
 * second unique constraint (workflow_id), and a concurrent first insert would violate it instead of
 * taking the conflict path; ON CONFLICT DO NOTHING without a target covers both.
 */
async function upsertAlbum(db: Queryable, key: AlbumKey): Promise<string> {
  const touch = async () => {
    const { rows } = await db.query<{ id: string }>(
      `UPDATE albums SET last_received_at = now()
        WHERE workspace = $1 AND provider = $2 AND account_id = $3 AND conversation_id = $4 AND album_id = $5
        RETURNING id`,
      [key.workspace, key.provider, key.accountId, key.conversationId, key.albumId],
    );
    return rows[0]?.id;
  };
  const existing = await touch();
  if (existing) return existing;
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO albums (workspace, provider, account_id, conversation_id, album_id, workflow_id)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT DO NOTHING
     RETURNING id`,
    [key.workspace, key.provider, key.accountId, key.conversationId, key.albumId, albumWorkflowId(key)],
  );
  const id = rows[0]?.id ?? (await touch());
  if (!id) throw new Error(`album ${albumWorkflowId(key)} was neither inserted nor found`);
  return id;
}

/** A redelivery keeps the first stored values; a caption or sent_at missing so far is filled in, never erased. */
async function upsertMessage(
  db: Queryable,
  child: ChildMessage,
  albumPk: string | null,
  raw: string,
): Promise<{ id: string; inserted: boolean }> {
  const { key, album } = child;
  const { rows } = await db.query<{ id: string; inserted: boolean }>(
    `INSERT INTO messages (workspace, provider, account_id, conversation_id, message_id, album_pk, album_meta,
                           album_index, album_total, metadata_invalid, caption, sent_at, raw)
     VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $10, $11, $12, $13::jsonb)
     ON CONFLICT (workspace, provider, account_id, conversation_id, message_id) DO UPDATE
       SET delivery_count = messages.delivery_count + 1,
           last_received_at = now(),
           caption = COALESCE(messages.caption, EXCLUDED.caption),
           sent_at = COALESCE(messages.sent_at, EXCLUDED.sent_at)
     RETURNING id, (xmax = 0) AS inserted`,
    [
      key.workspace,
      key.provider,
      key.accountId,
      key.conversationId,
      key.messageId,
      albumPk,
      album ? JSON.stringify(album.raw) : null,
      album?.index ?? null,
      album?.total ?? null,
      album?.metadataInvalid ?? false,
      child.caption,
      child.sentAt,
      raw,
    ],
  );
  return rows[0]!;
}

/**
 * One row per attachment position. A position stored without a URL takes the URL of a later delivery
 * and becomes pending again. Returns how many rows were inserted or gained a URL.
 */
async function upsertAttachments(db: Queryable, messagePk: string, attachments: AttachmentInput[]): Promise<number> {
  if (attachments.length === 0) return 0;
  const { rowCount } = await db.query(
    `INSERT INTO attachments (message_pk, position, kind, url, mime_type, declared_size, file_name, status)
     SELECT $1, a.position, a.kind, a.url, a.mime_type, a.declared_size, a.file_name,
            CASE WHEN a.url IS NULL THEN 'unavailable' ELSE 'pending' END
       FROM unnest($2::int[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[])
         AS a (position, kind, url, mime_type, declared_size, file_name)
     ON CONFLICT (message_pk, position) DO UPDATE
       SET url = EXCLUDED.url,
           status = 'pending',
           kind = COALESCE(attachments.kind, EXCLUDED.kind),
           mime_type = COALESCE(attachments.mime_type, EXCLUDED.mime_type),
           declared_size = COALESCE(attachments.declared_size, EXCLUDED.declared_size),
           file_name = COALESCE(attachments.file_name, EXCLUDED.file_name),
           updated_at = now()
       WHERE attachments.url IS NULL AND EXCLUDED.url IS NOT NULL`,
    [
      messagePk,
      attachments.map((a) => a.position),
      attachments.map((a) => a.kind),
      attachments.map((a) => a.url),
      attachments.map((a) => a.mimeType),
      attachments.map((a) => a.declaredSize),
      attachments.map((a) => a.fileName),
    ],
  );
  return rowCount ?? 0;
}

export interface QuarantineRecord {
  workspace: string;
  reason: string;
  detail: string;
  raw: Buffer;
}

/** Keeps a verified body that could not be stored as a child, byte for byte, with the reason. */
export async function quarantine(db: Queryable, record: QuarantineRecord): Promise<void> {
  await db.query(`INSERT INTO quarantine (workspace, reason, detail, raw) VALUES ($1, $2, $3, $4)`, [
    record.workspace,
    record.reason,
    record.detail,
    record.raw,
  ]);
}

/** PostgreSQL refused a value of the event itself (class 22: e.g. `\u0000` or a lone surrogate in jsonb). */
export function isDataException(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('22');
}
