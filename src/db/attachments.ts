import type { AttachmentStatus, AttachmentView, DownloadResult, MessageKey } from '../domain/types.js';
import { mediaLockStatement } from './media-collector.js';
import type { Pool, Queryable } from './pool.js';
import { withTransaction } from './transaction.js';

/** The columns of an attachment's outcome, as a query returns them (bigint `bytes` as text, or a number from JSON). */
export interface AttachmentOutcomeColumns {
  position: number;
  status: AttachmentStatus;
  content_type: string | null;
  bytes: string | number | null;
  sha256: string | null;
  error: string | null;
}

export function attachmentViewOf(row: AttachmentOutcomeColumns): AttachmentView {
  return {
    position: row.position,
    status: row.status,
    contentType: row.content_type,
    bytes: row.bytes === null ? null : Number(row.bytes),
    sha256: row.sha256,
    error: row.error,
  };
}

/** A file stored in the media store, as a download wrote it. */
export interface StoredObject {
  contentType: string | null;
  bytes: number;
  sha256: string;
}

/** A live photo's still (Bot API 10): a second file of the attachment, downloaded with the video. */
export interface StoredStill {
  fileId: string;
  fileUniqueId: string;
  /** Null until it is downloaded (or when it could not be). */
  object: StoredObject | null;
}

/** One attachment row as the download activity reads it. */
export interface StoredAttachment extends AttachmentView {
  messagePk: string;
  url: string | null;
  kind: string | null;
  mimeType: string | null;
  declaredSize: number | null;
  /** A Telegram file: what getFile takes, and the file's identity (an edit may replace it). */
  telegramFile: { fileId: string; fileUniqueId: string } | null;
  /** A Telegram live photo's still; null for every other attachment. */
  still: StoredStill | null;
  /** LINE content: the channel of the workspace whose access token fetches it (by the child's message id). */
  lineChannel: string | null;
}

interface StoredAttachmentColumns extends AttachmentOutcomeColumns {
  message_pk: string;
  url: string | null;
  kind: string | null;
  mime_type: string | null;
  declared_size: string | null;
  telegram_file_id: string | null;
  telegram_file_unique_id: string | null;
  still_telegram_file_id: string | null;
  still_telegram_file_unique_id: string | null;
  still_content_type: string | null;
  still_bytes: string | null;
  still_sha256: string | null;
  line_channel: string | null;
}

export async function findAttachment(pool: Pool, key: MessageKey, position: number): Promise<StoredAttachment | null> {
  const { rows } = await pool.query<StoredAttachmentColumns>(
    `SELECT a.message_pk, a.position, a.url, a.kind, a.mime_type, a.declared_size, a.telegram_file_id, a.telegram_file_unique_id,
            a.still_telegram_file_id, a.still_telegram_file_unique_id, a.still_content_type, a.still_bytes, a.still_sha256,
            a.line_channel, a.status, a.content_type, a.bytes, a.sha256, a.error
       FROM attachments a
       JOIN messages m ON m.id = a.message_pk
      WHERE m.workspace = $1 AND m.provider = $2 AND m.account_id = $3 AND m.conversation_id = $4
        AND m.message_id = $5 AND a.position = $6`,
    [key.workspace, key.provider, key.accountId, key.conversationId, key.messageId, position],
  );
  const row = rows[0];
  if (!row) return null;
  const fileId = row.telegram_file_id;
  const fileUniqueId = row.telegram_file_unique_id;
  return {
    messagePk: row.message_pk,
    url: row.url,
    kind: row.kind,
    mimeType: row.mime_type,
    declaredSize: row.declared_size === null ? null : Number(row.declared_size),
    telegramFile: fileId !== null && fileUniqueId !== null ? { fileId, fileUniqueId } : null,
    still: stillOf(row),
    lineChannel: row.line_channel,
    ...attachmentViewOf(row),
  };
}

function stillOf(row: StoredAttachmentColumns): StoredStill | null {
  const fileId = row.still_telegram_file_id;
  const fileUniqueId = row.still_telegram_file_unique_id;
  if (fileId === null || fileUniqueId === null) return null;
  const sha256 = row.still_sha256;
  const object = sha256 === null ? null : { contentType: row.still_content_type, bytes: Number(row.still_bytes), sha256 };
  return { fileId, fileUniqueId, object };
}

/**
 * What recording a download's outcome did: `recorded`; `replaced` — an edit replaced the attachment's
 * Telegram file since it was read (the outcome is the old file's and is not recorded); `object_removed` —
 * the collector removed the downloaded object since the download found or wrote it (not recorded: the
 * file must be stored again).
 */
export type RecordOutcome = 'recorded' | 'replaced' | 'object_removed';

/**
 * A download attempt's outcome, counted as an attempt, with the object of a live photo's still when the
 * attempt stored one (null: none, or it could not be had). Each downloaded object is recorded under its
 * lock (src/db/media-collector.ts, collectObject), in one round trip (the record_download function); when
 * the collector removed one lately, `stillStored` asks the store whether it is there before the attachment
 * may reference it.
 */
export async function recordDownloadResult(
  pool: Pool,
  attachment: StoredAttachment,
  result: DownloadResult,
  stillStored: (sha256: string) => Promise<boolean>,
  still: StoredObject | null = null,
): Promise<RecordOutcome> {
  // Locked in one order, so that two downloads of attachments sharing both objects never wait for each other.
  const objects = [...new Set([result.sha256, still?.sha256].filter((sha256) => typeof sha256 === 'string'))].sort();
  /** `confirmed`: the objects removed lately that the store was found to hold (under their locks). */
  const record = async (db: Queryable, confirmed: string[] = []): Promise<RecordOutcome | 'removed'> => {
    const { rows } = await db.query<{ outcome: RecordOutcome | 'removed' }>(
      `SELECT record_download($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) AS outcome`,
      [
        attachment.messagePk,
        attachment.position,
        result.status,
        result.contentType,
        result.bytes,
        result.sha256,
        result.error,
        attachment.telegramFile?.fileUniqueId ?? null,
        attachment.still?.fileUniqueId ?? null,
        still?.contentType ?? null,
        still?.bytes ?? null,
        still?.sha256 ?? null,
        objects,
        confirmed,
      ],
    );
    return rows[0]!.outcome;
  };
  const outcome = await record(pool);
  if (outcome !== 'removed') return outcome;
  // The store is asked under the objects' locks, which the transaction holds until it records.
  return withTransaction(pool, async (client) => {
    for (const sha256 of objects) await client.query(mediaLockStatement, [sha256]);
    const { rows } = await client.query<{ sha256: string }>(`SELECT sha256 FROM media_removals WHERE sha256 = ANY($1::text[])`, [objects]);
    for (const { sha256 } of rows) if (!(await stillStored(sha256))) return 'object_removed';
    const recorded = await record(
      client,
      rows.map(({ sha256 }) => sha256),
    );
    // Under the locks this transaction holds, no removal comes after the one it read.
    if (recorded === 'removed') throw new Error('record_download saw a removal that its caller did not');
    return recorded;
  });
}

/** A failed attempt that will be retried: its error is shown meanwhile, the status stays pending. */
export async function recordDownloadRetry(pool: Pool, attachment: StoredAttachment, error: string): Promise<void> {
  await pool.query(
    `UPDATE attachments SET error = $3, attempts = attempts + 1, updated_at = now() WHERE message_pk = $1 AND position = $2`,
    [attachment.messagePk, attachment.position, error],
  );
}

/** Sets these failed or expired attachments of an album back to pending (an operator's retry). */
export async function markRetried(
  pool: Pool,
  albumPk: string,
  attachments: ReadonlyArray<{ messageId: string; position: number }>,
): Promise<void> {
  if (attachments.length === 0) return;
  await pool.query(
    `UPDATE attachments a SET status = 'pending', error = NULL, updated_at = now()
       FROM messages m, jsonb_to_recordset($2::jsonb) AS r (message_id text, position int)
      WHERE m.id = a.message_pk AND m.album_pk = $1 AND m.message_id = r.message_id AND a.position = r.position
        AND a.status IN ('failed', 'expired')`,
    [albumPk, JSON.stringify(attachments.map(({ messageId, position }) => ({ message_id: messageId, position })))],
  );
}
