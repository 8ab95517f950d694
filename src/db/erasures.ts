// Erasures' rows (docs/design.md, "Data lifetime"): what an erasure removes, batch by batch (purge.ts
// removes it), the workflows whose histories hold it and the rows they write, and the erasure's receipt.
import { messageWorkflowId } from '../domain/keys.js';
import type { ErasureSubject, PurgeCounts } from '../domain/lifetime.js';
import type { ConversationScope } from '../domain/types.js';
import type { Pool, Queryable } from './pool.js';
import { messageKeyOf, type TargetMessage } from './purge.js';

const scopeValues = (key: ConversationScope) => [key.workspace, key.provider, key.accountId, key.conversationId];
const inScope = (alias: string) =>
  `${alias}.workspace = $1 AND ${alias}.provider = $2 AND ${alias}.account_id = $3 AND ${alias}.conversation_id = $4`;

/** The next batch of what an erasure removes: album ids, and message ids outside those albums. */
export async function erasureTargets(
  db: Queryable,
  subject: ErasureSubject,
  limit: number,
): Promise<{ albumPks: string[]; messagePks: string[] }> {
  if (subject.scope === 'workspace') {
    const albums = await db.query<{ id: string }>(`SELECT id FROM albums WHERE workspace = $1 ORDER BY id LIMIT $2`, [
      subject.key.workspace,
      limit,
    ]);
    const messages = await db.query<{ id: string }>(
      `SELECT id FROM messages WHERE workspace = $1 AND album_pk IS NULL ORDER BY id LIMIT $2`,
      [subject.key.workspace, limit],
    );
    return { albumPks: albums.rows.map((row) => row.id), messagePks: messages.rows.map((row) => row.id) };
  }
  const key = subject.key;
  if (subject.scope === 'album') {
    const { rows } = await db.query<{ id: string }>(`SELECT id FROM albums a WHERE ${inScope('a')} AND album_id = $5`, [
      ...scopeValues(key),
      subject.key.albumId,
    ]);
    return { albumPks: rows.map((row) => row.id), messagePks: [] };
  }
  if (subject.scope === 'message') {
    const { rows } = await db.query<{ id: string }>(`SELECT id FROM messages m WHERE ${inScope('m')} AND message_id = $5`, [
      ...scopeValues(key),
      subject.key.messageId,
    ]);
    return { albumPks: [], messagePks: rows.map((row) => row.id) };
  }
  const albums = await db.query<{ id: string }>(`SELECT id FROM albums a WHERE ${inScope('a')} ORDER BY id LIMIT $5`, [
    ...scopeValues(key),
    limit,
  ]);
  const messages = await db.query<{ id: string }>(
    `SELECT id FROM messages m WHERE ${inScope('m')} AND album_pk IS NULL ORDER BY id LIMIT $5`,
    [...scopeValues(key), limit],
  );
  return { albumPks: albums.rows.map((row) => row.id), messagePks: messages.rows.map((row) => row.id) };
}

/**
 * The rows a workflow writes by its id (decisions, notifications, operator actions): an erasure removes
 * those an album workflow wrote after its rows went and before it was deleted.
 */
export async function purgeWorkflowRows(pool: Pool, workflowIds: readonly string[]): Promise<Partial<PurgeCounts>> {
  if (workflowIds.length === 0) return {};
  const { rows } = await pool.query<{ decisions: number; notifications: number }>(
    `WITH decisions_gone AS (DELETE FROM decisions WHERE workflow_id = ANY($1::text[]) RETURNING 1),
          notifications_gone AS (DELETE FROM notifications WHERE workflow_id = ANY($1::text[]) RETURNING 1),
          actions_gone AS (DELETE FROM operator_actions WHERE workflow_id = ANY($1::text[]) RETURNING 1)
     SELECT (SELECT count(*)::int FROM decisions_gone) AS decisions, (SELECT count(*)::int FROM notifications_gone) AS notifications`,
    [workflowIds],
  );
  return rows[0]!;
}

export interface ErasureReceipt {
  id: string;
  workspace: string;
  scope: ErasureSubject['scope'];
  subject: unknown;
  requestedBy: string;
  requestedAt: Date;
  state: 'running' | 'done';
  counts: Partial<PurgeCounts>;
  finishedAt: Date | null;
}

interface ReceiptRow {
  id: string;
  workspace: string;
  scope: ErasureSubject['scope'];
  subject: unknown;
  requested_by: string;
  requested_at: Date;
  state: 'running' | 'done';
  counts: Partial<PurgeCounts>;
  finished_at: Date | null;
}

const receiptOf = (row: ReceiptRow): ErasureReceipt => ({
  id: row.id,
  workspace: row.workspace,
  scope: row.scope,
  subject: row.subject,
  requestedBy: row.requested_by,
  requestedAt: row.requested_at,
  state: row.state,
  counts: row.counts,
  finishedAt: row.finished_at,
});

/** Records an erasure request (its receipt, state running). */
export async function recordErasure(db: Queryable, subject: ErasureSubject, requestedBy: string): Promise<ErasureReceipt> {
  const { rows } = await db.query<ReceiptRow>(
    `INSERT INTO erasures (workspace, scope, subject, requested_by) VALUES ($1, $2, $3, $4) RETURNING *`,
    [subject.key.workspace, subject.scope, JSON.stringify(subject.key), requestedBy],
  );
  return receiptOf(rows[0]!);
}

export async function findErasure(db: Queryable, workspace: string, id: string): Promise<ErasureReceipt | null> {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)) return null;
  const { rows } = await db.query<ReceiptRow>(`SELECT * FROM erasures WHERE id = $1 AND workspace = $2`, [id, workspace]);
  return rows[0] ? receiptOf(rows[0]) : null;
}

/** The erasure's counts so far, and done when `done`. */
export async function recordErasureProgress(db: Queryable, id: string, counts: PurgeCounts, done: boolean): Promise<void> {
  await db.query(
    `UPDATE erasures SET counts = $2, state = CASE WHEN $3 THEN 'done' ELSE state END,
            finished_at = CASE WHEN $3 THEN now() ELSE finished_at END
      WHERE id = $1`,
    [id, JSON.stringify(counts), done],
  );
}

/** The workflows whose histories hold these albums and messages: the albums', a message's album's, a standalone message's. */
export async function workflowIdsOf(
  db: Queryable,
  targets: { albumPks: readonly string[]; messagePks: readonly string[] },
): Promise<string[]> {
  const albums = await db.query<{ workflow_id: string }>(
    `SELECT workflow_id FROM albums WHERE id = ANY($1::bigint[])
      UNION
     SELECT a.workflow_id FROM messages m JOIN albums a ON a.id = m.album_pk WHERE m.id = ANY($2::bigint[])`,
    [targets.albumPks, targets.messagePks],
  );
  const standalone = await db.query<TargetMessage>(
    `SELECT id, workspace, provider, account_id, conversation_id, message_id, album_pk FROM messages
      WHERE id = ANY($1::bigint[]) AND album_pk IS NULL`,
    [targets.messagePks],
  );
  return [...albums.rows.map((row) => row.workflow_id), ...standalone.rows.map((row) => messageWorkflowId(messageKeyOf(row)))];
}

/** Takes back a receipt whose workflow could not be started. */
export async function deleteErasure(db: Queryable, id: string): Promise<void> {
  await db.query(`DELETE FROM erasures WHERE id = $1`, [id]);
}
