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

/** One attachment row as the download activity reads it. */
export interface StoredAttachment extends AttachmentView {
  messagePk: string;
  url: string | null;
  kind: string | null;
  mimeType: string | null;
  declaredSize: number | null;
  /** A Telegram file: what getFile takes, and the file's identity (an edit may replace it). */
  telegramFile: { fileId: string; fileUniqueId: string } | null;
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
  line_channel: string | null;
}

export async function findAttachment(pool: Pool, key: MessageKey, position: number): Promise<StoredAttachment | null> {
  const { rows } = await pool.query<StoredAttachmentColumns>(
    `SELECT a.message_pk, a.position, a.url, a.kind, a.mime_type, a.declared_size, a.telegram_file_id, a.telegram_file_unique_id,
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
    lineChannel: row.line_channel,
    ...attachmentViewOf(row),
  };
}

/**
 * What recording a download's outcome did: `recorded`; `replaced` — an edit replaced the attachment's
 * Telegram file since it was read (the outcome is the old file's and is not recorded); `object_removed` —
 * the collector removed the downloaded object since the download found or wrote it (not recorded: the
 * file must be stored again).
 */
export type RecordOutcome = 'recorded' | 'replaced' | 'object_removed';

/**
 * A download attempt's outcome, counted as an attempt. A downloaded object is recorded under its lock
 * (src/db/media-collector.ts, collectObject): when the collector removed that object lately, `stillStored`
 * asks the store whether it is there before the attachment may reference it.
 */
export async function recordDownloadResult(
  pool: Pool,
  attachment: StoredAttachment,
  result: DownloadResult,
  stillStored: (sha256: string) => Promise<boolean>,
): Promise<RecordOutcome> {
  const record = async (db: Queryable): Promise<RecordOutcome> => {
    const { rowCount } = await db.query(
      `UPDATE attachments
          SET status = $3, content_type = $4, bytes = $5, sha256 = $6, error = $7, attempts = attempts + 1, updated_at = now()
        WHERE message_pk = $1 AND position = $2 AND telegram_file_unique_id IS NOT DISTINCT FROM $8`,
      [
        attachment.messagePk,
        attachment.position,
        result.status,
        result.contentType,
        result.bytes,
        result.sha256,
        result.error,
        attachment.telegramFile?.fileUniqueId ?? null,
      ],
    );
    return rowCount === 1 ? 'recorded' : 'replaced';
  };
  const sha256 = result.sha256;
  if (sha256 === null) return record(pool);
  return withTransaction(pool, async (client) => {
    await client.query(mediaLockStatement, [sha256]);
    const removed = await client.query(`SELECT 1 FROM media_removals WHERE sha256 = $1`, [sha256]);
    if (removed.rowCount !== 0 && !(await stillStored(sha256))) return 'object_removed';
    return record(client);
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
