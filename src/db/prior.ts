import { canonicalReasons } from '../domain/album-metadata.js';
import type { AttachmentView, ChildRecord, PriorAlbum, StoredScope } from '../domain/types.js';
import { albumWorkflowId, messageWorkflowId } from '../domain/keys.js';
import { attachmentViewOf, type AttachmentOutcomeColumns } from './attachments.js';
import { loadChildren } from './children.js';
import { decisionsOf } from './decisions.js';
import { editNotices, lastPurgedSeq, mediaSettledNotices, unsentNotices } from './notifications.js';
import type { Pool, PoolClient } from './pool.js';
import { findAlbum } from './status.js';

async function storedMessagePks(client: PoolClient, scope: StoredScope, albumPk: string | null): Promise<string[]> {
  if (scope.kind === 'album') {
    if (albumPk === null) return [];
    const { rows } = await client.query<{ id: string }>(`SELECT id FROM messages WHERE album_pk = $1 ORDER BY first_received_at, id`, [
      albumPk,
    ]);
    return rows.map((row) => row.id);
  }
  const { key } = scope;
  const { rows } = await client.query<{ id: string }>(
    `SELECT id FROM messages
      WHERE workspace = $1 AND provider = $2 AND account_id = $3 AND conversation_id = $4 AND message_id = $5`,
    [key.workspace, key.provider, key.accountId, key.conversationId, key.messageId],
  );
  return rows.map((row) => row.id);
}

async function storedAttachments(client: PoolClient, messagePks: string[]): Promise<Map<string, AttachmentView[]>> {
  const { rows } = await client.query<AttachmentOutcomeColumns & { message_id: string }>(
    `SELECT m.message_id, a.position, a.status, a.content_type, a.bytes, a.sha256, a.error
       FROM attachments a JOIN messages m ON m.id = a.message_pk
      WHERE a.message_pk = ANY($1::bigint[])
      ORDER BY a.message_pk, a.position`,
    [messagePks],
  );
  const byMessage = new Map<string, AttachmentView[]>();
  for (const row of rows) {
    const list = byMessage.get(row.message_id) ?? [];
    list.push(attachmentViewOf(row));
    byMessage.set(row.message_id, list);
  }
  return byMessage;
}

/**
 * What PostgreSQL holds for one workflow when a fresh run starts: its decisions, its stored children
 * (as the dispatcher signals them) with their attachments' statuses, an album's review, and the
 * `album.media_settled` notices of its latest decision and the edits and withdrawals it notified with `album.updated`.
 */
export async function readPrior(pool: Pool, scope: StoredScope): Promise<PriorAlbum> {
  const workflowId = scope.kind === 'album' ? albumWorkflowId(scope.key) : messageWorkflowId(scope.key);
  const album = scope.kind === 'album' ? await findAlbum(pool, scope.key) : null;
  const decisions = await decisionsOf(pool, workflowId);
  const last = decisions[decisions.length - 1];
  const notices = last ? await mediaSettledNotices(pool, workflowId, last.seq) : 0;
  const edits = last && scope.kind === 'album' ? await editNotices(pool, workflowId) : {};
  const withdrawals = last && scope.kind === 'album' ? await unsentNotices(pool, workflowId) : [];
  const seqFloor = scope.kind === 'album' ? await lastPurgedSeq(pool, workflowId) : null;
  const client = await pool.connect();
  try {
    const messagePks = await storedMessagePks(client, scope, album?.id ?? null);
    const stored = await loadChildren(client, messagePks);
    const attachments = await storedAttachments(client, messagePks);
    const order = new Map(messagePks.map((pk, i) => [pk, i]));
    const children: ChildRecord[] = stored
      .sort((a, b) => (order.get(a.messagePk) ?? 0) - (order.get(b.messagePk) ?? 0))
      .map(({ arrival }) => ({ arrival, attachments: attachments.get(arrival.messageId) ?? [] }));
    return {
      decisions,
      children,
      reviewReasons: canonicalReasons(album?.reviewReasons ?? []),
      reviewResolved: album?.reviewResolved ?? null,
      mediaSettledNotices: notices,
      editNotices: edits,
      ...(withdrawals.length > 0 ? { unsentNotices: withdrawals } : {}),
      ...(seqFloor !== null ? { seqFloor } : {}),
    };
  } finally {
    client.release();
  }
}
