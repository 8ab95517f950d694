// Erasures' rows (docs/design.md, "Data lifetime"): what an erasure removes, batch by batch (purge.ts
// removes it), the workflows whose histories hold it and the rows they write, and the erasure's receipt.
import { messageWorkflowId } from '../domain/keys.js';
import type { ErasureSubject, PurgeCounts } from '../domain/lifetime.js';
import type { ConversationScope } from '../domain/types.js';
import type { Pool, Queryable } from './pool.js';
import { countersStatement, erasureNoticeTypes, messageKeyOf, type TargetMessage } from './purge.js';

const scopeValues = (key: ConversationScope) => [key.workspace, key.provider, key.accountId, key.conversationId];
const inScope = (alias: string) =>
  `${alias}.workspace = $1 AND ${alias}.provider = $2 AND ${alias}.account_id = $3 AND ${alias}.conversation_id = $4`;

/**
 * The next batch of what an erasure removes: album ids, and message ids outside those albums; for a
 * conversation, also the ids of raw events linked to it (those that name no child too) and of the
 * quarantined bodies that name it (conversationQuarantine).
 */
export async function erasureTargets(
  db: Queryable,
  subject: ErasureSubject,
  limit: number,
): Promise<{ albumPks: string[]; messagePks: string[]; eventPks?: string[]; quarantinePks?: string[] }> {
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
    // The last child of an album takes the album with it: an album of no children does not stay.
    const { rows } = await db.query<{ id: string; album_pk: string | null; alone: boolean }>(
      `SELECT id, album_pk, NOT EXISTS (SELECT 1 FROM messages o WHERE o.album_pk = m.album_pk AND o.id <> m.id) AS alone
         FROM messages m WHERE ${inScope('m')} AND message_id = $5`,
      [...scopeValues(key), subject.key.messageId],
    );
    const lastOfAlbum = rows.filter((row) => row.album_pk !== null && row.alone);
    return {
      albumPks: lastOfAlbum.map((row) => row.album_pk!),
      messagePks: rows.filter((row) => !lastOfAlbum.includes(row)).map((row) => row.id),
    };
  }
  const albums = await db.query<{ id: string }>(`SELECT id FROM albums a WHERE ${inScope('a')} ORDER BY id LIMIT $5`, [
    ...scopeValues(key),
    limit,
  ]);
  const messages = await db.query<{ id: string }>(
    `SELECT id FROM messages m WHERE ${inScope('m')} AND album_pk IS NULL ORDER BY id LIMIT $5`,
    [...scopeValues(key), limit],
  );
  const events = await db.query<{ id: string }>(
    `SELECT DISTINCT l.event_pk AS id FROM event_links l WHERE ${inScope('l')} ORDER BY 1 LIMIT $5`,
    [...scopeValues(key), limit],
  );
  const quarantined = await db.query<{ id: string }>(conversationQuarantine, [key.workspace, key.provider, key.conversationId, limit]);
  return {
    albumPks: albums.rows.map((row) => row.id),
    messagePks: messages.rows.map((row) => row.id),
    eventPks: events.rows.map((row) => row.id),
    quarantinePks: quarantined.rows.map((row) => row.id),
  };
}

/**
 * The workspace's quarantined bodies (they could not be parsed, so nothing links them) whose bytes name
 * the conversation ($1 workspace, $2 provider, $3 conversation id, $4 limit): its id as a JSON string,
 * or, for a numeric id, as a JSON number; a Telegram business chat (`<connection>:<chat id>`) by both
 * its connection id and its chat id. Bytes are compared in PostgreSQL's `escape` encoding, which keeps
 * ASCII as it is, so a body that is not UTF-8 is read too.
 */
const conversationQuarantine = `
WITH id AS (
  SELECT $3::text AS whole, substring($3::text from '^(.+):-?[0-9]+$') AS connection, substring($3::text from ':(-?[0-9]+)$') AS chat
), forms AS (
  SELECT encode(convert_to(to_jsonb(whole)::text, 'UTF8'), 'escape') AS quoted,
         CASE WHEN whole ~ '^-?[0-9]+$' THEN '[,:[][[:space:]]*' || whole || '[[:space:]]*[],}]' END AS number,
         CASE WHEN $2 = 'telegram' AND chat IS NOT NULL THEN encode(convert_to(to_jsonb(connection)::text, 'UTF8'), 'escape') END
           AS connection_quoted,
         '[,:[][[:space:]]*' || chat || '[[:space:]]*[],}]' AS chat_number
    FROM id
)
SELECT q.id FROM quarantine q, forms f, LATERAL (SELECT encode(q.raw, 'escape') AS body) b
 WHERE q.workspace = $1
   AND (strpos(b.body, f.quoted) > 0
        OR b.body ~ f.number
        OR (strpos(b.body, f.connection_quoted) > 0 AND b.body ~ f.chat_number))
 ORDER BY q.id LIMIT $4`;

/**
 * The rows a workflow writes by its id (decisions, notifications, operator actions): an erasure removes
 * those an album workflow wrote after its rows went and before it was deleted, keeping its last decision
 * seq (notification_counters) and the erasure's own notices.
 */
export async function purgeWorkflowRows(pool: Pool, workflowIds: readonly string[]): Promise<Partial<PurgeCounts>> {
  if (workflowIds.length === 0) return {};
  const { rows } = await pool.query<{ decisions: number; notifications: number }>(
    `WITH counted AS (${countersStatement('$1')}),
          decisions_gone AS (DELETE FROM decisions WHERE workflow_id = ANY($1::text[]) RETURNING 1),
          notifications_gone AS (
            DELETE FROM notifications WHERE workflow_id = ANY($1::text[]) AND type <> ALL($2::text[]) RETURNING 1
          ),
          actions_gone AS (DELETE FROM operator_actions WHERE workflow_id = ANY($1::text[]) RETURNING 1)
     SELECT (SELECT count(*)::int FROM decisions_gone) AS decisions, (SELECT count(*)::int FROM notifications_gone) AS notifications`,
    [workflowIds, erasureNoticeTypes],
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
