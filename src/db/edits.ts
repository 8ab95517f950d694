import type { MessageKey } from '../domain/types.js';
import type { AttachmentInput } from '../domain/child.js';
import { attachmentRecord, storeDeliveries, type EditDelivery, type IngestResult } from './ingest.js';
import type { Pool, PoolClient } from './pool.js';
import { withTransaction } from './transaction.js';

/**
 * What storing an edit did: `stored` — the child was not stored yet, the edit is stored as the child;
 * `applied` — its caption or media changed, the earlier version went to the history and the child was
 * queued for its workflow; `unchanged` — newer, but with the same caption and media (its file id is
 * kept); `stale` — not newer than the edit applied last (a redelivery, or one that came out of order);
 * `erased` — the child was erased: nothing is stored.
 */
export type EditOutcome = 'stored' | 'applied' | 'unchanged' | 'stale' | 'erased';

export interface StoredEdit extends IngestResult {
  outcome: EditOutcome;
}

interface StoredVersion {
  id: string;
  caption: string | null;
  edited_at: Date | null;
  versions: number;
  files: Array<{ position: number; file_unique_id: string | null; still_file_unique_id: string | null }>;
}

/** The stored child, locked for the rest of the transaction. */
async function lockVersion(client: PoolClient, key: MessageKey): Promise<StoredVersion> {
  const { rows } = await client.query<StoredVersion>(
    `SELECT m.id, m.caption, m.edited_at,
            (SELECT count(*)::int FROM message_history h WHERE h.message_pk = m.id) AS versions,
            COALESCE((SELECT json_agg(json_build_object('position', a.position, 'file_unique_id', a.telegram_file_unique_id,
                                                        'still_file_unique_id', a.still_telegram_file_unique_id))
                        FROM attachments a WHERE a.message_pk = m.id), '[]') AS files
       FROM messages m
      WHERE m.workspace = $1 AND m.provider = $2 AND m.account_id = $3 AND m.conversation_id = $4 AND m.message_id = $5
        FOR UPDATE OF m`,
    [key.workspace, key.provider, key.accountId, key.conversationId, key.messageId],
  );
  return rows[0]!;
}

/**
 * Stores an edit in a transaction of its own: the event is recorded; a child never stored is stored
 * as the edit brings it; otherwise, when the edit is newer than the one applied last, the child takes
 * its caption (also when it has none) and its media, and — if either changed — the version it replaces
 * is kept in `message_history` and the child is queued in the outbox, so its workflow learns of it.
 * The child's row is locked from the first statement on, so concurrent edits apply one after the other.
 */
export async function storeEdit(pool: Pool, edit: EditDelivery): Promise<{ result: StoredEdit; queued: number }> {
  return withTransaction(pool, async (client) => {
    const first = await storeDeliveries(client, [edit]);
    const stored = first.results[0]!;
    if (stored.erased) return { result: { ...stored, outcome: 'erased' }, queued: 0 };
    if (!stored.duplicate) return { result: { ...stored, outcome: 'stored' }, queued: first.queued };

    const current = await lockVersion(client, edit.child.key);
    if (current.edited_at !== null && Date.parse(edit.editedAt) <= current.edited_at.getTime()) {
      return { result: { ...stored, outcome: 'stale' }, queued: 0 };
    }
    const { caption, attachments } = edit.child;
    // A live photo's file is its video and its still: a new one of either replaces the media.
    const identity = (fileUniqueId: string | null | undefined, stillUniqueId: string | null | undefined) =>
      JSON.stringify([fileUniqueId ?? null, stillUniqueId ?? null]);
    const storedFiles = new Map(current.files.map((file) => [file.position, identity(file.file_unique_id, file.still_file_unique_id)]));
    const replaced = attachments.filter(
      (a) => storedFiles.get(a.position) !== identity(a.telegramFile?.fileUniqueId, a.telegramFile?.still?.fileUniqueId),
    );
    const changed = caption !== current.caption || replaced.length > 0;

    await client.query(`UPDATE messages SET caption = $2, edited_at = $3 WHERE id = $1`, [current.id, caption, edit.editedAt]);
    const replacedPositions = new Set(replaced.map((a) => a.position));
    const kept = attachments.filter((a) => !replacedPositions.has(a.position));
    if (replaced.length > 0) await replaceAttachments(client, current.id, replaced);
    // A file id may change over time for the same file: the newest is the one asked for.
    if (kept.length > 0) {
      await client.query(
        `UPDATE attachments a SET telegram_file_id = r.telegram_file_id, still_telegram_file_id = r.still_telegram_file_id, updated_at = now()
           FROM jsonb_to_recordset($2::jsonb) AS r (position int, telegram_file_id text, still_telegram_file_id text)
          WHERE a.message_pk = $1 AND a.position = r.position`,
        [
          current.id,
          JSON.stringify(
            kept.map((a) => ({
              position: a.position,
              telegram_file_id: a.telegramFile?.fileId ?? null,
              still_telegram_file_id: a.telegramFile?.still?.fileId ?? null,
            })),
          ),
        ],
      );
    }
    if (!changed) return { result: { ...stored, outcome: 'unchanged' }, queued: 0 };

    await client.query(
      `INSERT INTO message_history (message_pk, version, caption, media_replaced, replaced_at, traceparent) VALUES ($1, $2, $3, $4, $5, $6)`,
      [current.id, current.versions + 1, current.caption, replaced.length > 0, edit.editedAt, edit.traceparent ?? null],
    );
    await client.query(`INSERT INTO outbox (message_pk, traceparent) VALUES ($1, $2)`, [current.id, edit.traceparent ?? null]);
    return { result: { ...stored, outcome: 'applied' }, queued: 1 };
  });
}

/** Attachments whose file an edit replaced: stored as the edit brings them and downloaded again. */
async function replaceAttachments(client: PoolClient, messagePk: string, attachments: readonly AttachmentInput[]): Promise<void> {
  await client.query(
    `INSERT INTO attachments (message_pk, position, kind, url, mime_type, declared_size, file_name,
                              telegram_file_id, telegram_file_unique_id, width, height, still_telegram_file_id,
                              still_telegram_file_unique_id, status)
     SELECT $1, r.position, r.kind, NULL, r.mime_type, r.declared_size, r.file_name,
            r.telegram_file_id, r.telegram_file_unique_id, r.width, r.height, r.still_telegram_file_id,
            r.still_telegram_file_unique_id, 'pending'
       FROM jsonb_to_recordset($2::jsonb)
         AS r (position int, kind text, mime_type text, declared_size bigint, file_name text,
               telegram_file_id text, telegram_file_unique_id text, width int, height int, still_telegram_file_id text,
               still_telegram_file_unique_id text)
      ORDER BY r.position
     ON CONFLICT (message_pk, position) DO UPDATE
       SET kind = EXCLUDED.kind, url = NULL, mime_type = EXCLUDED.mime_type, declared_size = EXCLUDED.declared_size,
           file_name = EXCLUDED.file_name, telegram_file_id = EXCLUDED.telegram_file_id,
           telegram_file_unique_id = EXCLUDED.telegram_file_unique_id, width = EXCLUDED.width, height = EXCLUDED.height,
           still_telegram_file_id = EXCLUDED.still_telegram_file_id,
           still_telegram_file_unique_id = EXCLUDED.still_telegram_file_unique_id,
           status = 'pending', content_type = NULL, bytes = NULL, sha256 = NULL, error = NULL, attempts = 0,
           still_content_type = NULL, still_bytes = NULL, still_sha256 = NULL, updated_at = now()`,
    [messagePk, JSON.stringify(attachments.map(attachmentRecord))],
  );
}
