import type { Pool, PoolClient } from '../src/db/pool.js';
import { loadChildren } from '../src/db/outbox.js';
import { decisionsOf, findAlbum } from '../src/db/status.js';
import { decisionsTotal } from '../src/metrics.js';
import { canonicalReasons, type ChildRecord, type PriorAlbum } from '../workflows/album-rules.js';
import { albumWorkflowId, messageWorkflowId } from '../workflows/keys.js';
import type { AlbumKey, AttachmentStatus, AttachmentView, DecisionView, MessageKey, ReviewReason } from '../workflows/types.js';
import type { ActivityDeps } from './index.js';

/** Whose stored state a fresh run loads: an album's, or one standalone message's. */
export type StoredScope = { kind: 'album'; key: AlbumKey } | { kind: 'message'; key: MessageKey };

export interface RecordDecisionInput {
  workflowId: string;
  decision: DecisionView;
  /** The album's review reasons at the decision; null for a standalone message (no albums row). */
  album: { reviewReasons: ReviewReason[] } | null;
}

export interface MarkClosedInput {
  workflowId: string;
  reviewReasons: ReviewReason[];
}

interface AttachmentRow {
  message_id: string;
  position: number;
  status: AttachmentStatus;
  content_type: string | null;
  bytes: string | null;
  sha256: string | null;
  error: string | null;
}

async function storedMessagePks(client: PoolClient, scope: StoredScope, albumPk: string | null): Promise<string[]> {
  if (scope.kind === 'album') {
    if (albumPk === null) return [];
    const { rows } = await client.query<{ id: string }>(
      `SELECT id FROM messages WHERE album_pk = $1 ORDER BY first_received_at, id`,
      [albumPk],
    );
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
  const { rows } = await client.query<AttachmentRow>(
    `SELECT m.message_id, a.position, a.status, a.content_type, a.bytes, a.sha256, a.error
       FROM attachments a JOIN messages m ON m.id = a.message_pk
      WHERE a.message_pk = ANY($1::bigint[])
      ORDER BY a.message_pk, a.position`,
    [messagePks],
  );
  const byMessage = new Map<string, AttachmentView[]>();
  for (const row of rows) {
    const list = byMessage.get(row.message_id) ?? [];
    list.push({
      position: row.position,
      status: row.status,
      contentType: row.content_type,
      bytes: row.bytes === null ? null : Number(row.bytes),
      sha256: row.sha256,
      error: row.error,
    });
    byMessage.set(row.message_id, list);
  }
  return byMessage;
}

/**
 * What PostgreSQL holds for one workflow when a fresh run starts: its decisions, its stored children
 * (as the dispatcher signals them) with their attachments' statuses, and an album's review reasons.
 */
async function readPrior(pool: Pool, scope: StoredScope): Promise<PriorAlbum> {
  const workflowId = scope.kind === 'album' ? albumWorkflowId(scope.key) : messageWorkflowId(scope.key);
  const album = scope.kind === 'album' ? await findAlbum(pool, scope.key) : null;
  const decisions = await decisionsOf(pool, workflowId);
  const client = await pool.connect();
  try {
    const messagePks = await storedMessagePks(client, scope, album?.id ?? null);
    const stored = await loadChildren(client, messagePks);
    const attachments = await storedAttachments(client, messagePks);
    const order = new Map(messagePks.map((pk, i) => [pk, i]));
    const children: ChildRecord[] = stored
      .sort((a, b) => (order.get(a.messagePk) ?? 0) - (order.get(b.messagePk) ?? 0))
      .map(({ arrival }) => ({ arrival, attachments: attachments.get(arrival.messageId) ?? [] }));
    return { decisions, children, reviewReasons: canonicalReasons(album?.reviewReasons ?? []) };
  } finally {
    client.release();
  }
}

export function createRecordActivities({ pool, logger }: ActivityDeps) {
  /**
   * Stores one decision with the exact children it included. Idempotent by (workflow id, seq): a retry
   * or a replayed workflow never stores or counts it twice.
   */
  async function recordDecision({ workflowId, decision, album }: RecordDecisionInput): Promise<{ inserted: boolean }> {
    // One statement, not a transaction of two: the album's row is locked only while PostgreSQL runs it,
    // never across a round trip to a worker that the CPU may not schedule for a while (the ingress
    // locks the same row when a child of the album arrives).
    const { rows } = await pool.query<{ inserted: number }>(
      `WITH inserted AS (
         INSERT INTO decisions (workflow_id, seq, trigger, child_message_ids, decided_at)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (workflow_id, seq) DO NOTHING
         RETURNING seq
       ), album AS (
         UPDATE albums SET state = 'processed', review_reasons = $6, updated_at = now()
          WHERE $7 AND workflow_id = $1
       )
       SELECT count(*)::int AS inserted FROM inserted`,
      [workflowId, decision.seq, decision.trigger, decision.childMessageIds, decision.decidedAt, album?.reviewReasons ?? [], album !== null],
    );
    const inserted = rows[0]?.inserted === 1;
    if (inserted) {
      decisionsTotal.inc({ trigger: decision.trigger });
      logger.info({ workflowId, seq: decision.seq, trigger: decision.trigger, children: decision.childMessageIds.length }, 'decision recorded');
    }
    return { inserted };
  }

  async function markClosed({ workflowId, reviewReasons }: MarkClosedInput): Promise<void> {
    await pool.query(`UPDATE albums SET state = 'closed', review_reasons = $2, updated_at = now() WHERE workflow_id = $1`, [
      workflowId,
      reviewReasons,
    ]);
  }

  return { recordDecision, loadPrior: (scope: StoredScope) => readPrior(pool, scope), markClosed };
}
