// Data lifetime's rows (docs/design.md, "Data lifetime"): what retention and erasures select, purge in
// bounded batches, and the media objects they leave unreferenced. Every batch is one transaction: a
// crash rolls it back whole, and running it again finds what is left.
import { messageWorkflowId } from '../domain/keys.js';
import { noCounts, type ErasureSubject, type PurgeCounts } from '../domain/lifetime.js';
import type { ConversationScope, MessageKey } from '../domain/types.js';
import type { Pool, PoolClient, Queryable } from './pool.js';
import { withTransaction } from './transaction.js';

/** How long a tombstone keeps an erased child from being stored again: past every provider's redelivery horizon. */
export const tombstoneDays = 30;
/** How long the collector remembers an object it removed (longer than any download takes). */
const removalMemoryHours = 24;

/** A purge's batch: the rows it removed, and the workflows whose histories name them. */
export interface PurgedBatch {
  counts: PurgeCounts;
  /** Album and standalone-message workflow ids of what was removed. */
  workflowIds: string[];
}

/**
 * A workspace's retention in days as SQL over `r` (workspace_retention joined on the workspace) and the
 * default ($1, RETENTION_DAYS; null keeps everything): NULL means keep.
 */
const retentionDays = `(CASE WHEN r.workspace IS NULL THEN $1::numeric ELSE r.days END)`;
const expiredBefore = (column: string) => `${column} < now() - ${retentionDays} * interval '1 day'`;

/** Albums closed longer than their workspace's retention, oldest first. */
export async function expiredAlbums(db: Queryable, defaultDays: number | null, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT a.id FROM albums a LEFT JOIN workspace_retention r ON r.workspace = a.workspace
      WHERE a.state = 'closed' AND ${expiredBefore('a.updated_at')}
      ORDER BY a.updated_at LIMIT $2`,
    [defaultDays, limit],
  );
  return rows.map((row) => row.id);
}

/** Standalone messages last received longer ago than their workspace's retention. */
export async function expiredMessages(db: Queryable, defaultDays: number | null, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT m.id FROM messages m LEFT JOIN workspace_retention r ON r.workspace = m.workspace
      WHERE m.album_pk IS NULL AND ${expiredBefore('m.last_received_at')}
      ORDER BY m.last_received_at LIMIT $2`,
    [defaultDays, limit],
  );
  return rows.map((row) => row.id);
}

const scopeValues = (key: ConversationScope) => [key.workspace, key.provider, key.accountId, key.conversationId];
const inScope = (alias: string) =>
  `${alias}.workspace = $1 AND ${alias}.provider = $2 AND ${alias}.account_id = $3 AND ${alias}.conversation_id = $4`;

/** The next batch of what an erasure removes: album ids, and message ids outside those albums. */
export async function erasureTargets(
  db: Queryable,
  subject: ErasureSubject,
  limit: number,
): Promise<{ albumPks: string[]; messagePks: string[] }> {
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

interface TargetMessage {
  id: string;
  workspace: string;
  provider: string;
  account_id: string;
  conversation_id: string;
  message_id: string;
  album_pk: string | null;
}

/**
 * Removes these albums (with every child of theirs) and these messages, in one transaction: their raw
 * events, outbox rows, earlier versions, attachments, decisions, notifications and operator actions.
 * Each downloaded object they referenced is queued for the collector (collectObject), which removes it
 * once no kept attachment references it. With `tombstone`, every removed child's identity gets a
 * tombstone (an erasure). A message of an album that stays (a message's erasure) leaves the album's
 * decisions naming the album's other children, and closes the album: its notifications and workflow go
 * (they hold the message's caption), so the caller deletes that workflow too.
 */
export async function purgeRows(
  pool: Pool,
  targets: { albumPks: readonly string[]; messagePks: readonly string[] },
  options: { tombstone: boolean },
): Promise<PurgedBatch> {
  if (targets.albumPks.length === 0 && targets.messagePks.length === 0) return { counts: noCounts(), workflowIds: [] };
  return withTransaction(pool, async (client) => {
    const albums = await client.query<{ id: string; workflow_id: string }>(
      `SELECT id, workflow_id FROM albums WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE`,
      [targets.albumPks],
    );
    const messages = await client.query<TargetMessage>(
      `SELECT id, workspace, provider, account_id, conversation_id, message_id, album_pk FROM messages
        WHERE id = ANY($1::bigint[]) OR album_pk = ANY($2::bigint[]) ORDER BY id FOR UPDATE`,
      [targets.messagePks, albums.rows.map((row) => row.id)],
    );
    const purgedAlbums = new Set(albums.rows.map((row) => row.id));
    // Albums that stay, minus one child: their decisions forget it, their notifications and workflow go.
    const strippedAlbums = await strippedAlbumsOf(
      client,
      messages.rows.filter((row) => row.album_pk !== null && !purgedAlbums.has(row.album_pk)),
    );
    const workflowIds = [
      ...albums.rows.map((row) => row.workflow_id),
      ...messages.rows.filter((row) => row.album_pk === null).map((row) => messageWorkflowId(messageKeyOf(row))),
    ];
    const { rows } = await client.query<
      Pick<PurgeCounts, 'albums' | 'messages' | 'attachments' | 'events' | 'decisions' | 'notifications' | 'tombstones'>
    >(purgeStatement, [
      messages.rows.map((row) => row.id),
      albums.rows.map((row) => row.id),
      workflowIds,
      options.tombstone ? tombstoneDays : null,
      strippedAlbums.map((album) => album.workflowId),
      JSON.stringify(strippedAlbums.map((album) => ({ workflow_id: album.workflowId, message_ids: album.messageIds }))),
    ]);
    return {
      counts: { ...noCounts(), ...rows[0]! },
      workflowIds: [...workflowIds, ...strippedAlbums.map((album) => album.workflowId)],
    };
  });
}

const messageKeyOf = (row: TargetMessage): MessageKey => ({
  workspace: row.workspace,
  provider: row.provider,
  accountId: row.account_id,
  conversationId: row.conversation_id,
  messageId: row.message_id,
});

async function strippedAlbumsOf(
  client: PoolClient,
  children: readonly TargetMessage[],
): Promise<Array<{ workflowId: string; messageIds: string[] }>> {
  if (children.length === 0) return [];
  const { rows } = await client.query<{ id: string; workflow_id: string }>(
    `SELECT id, workflow_id FROM albums WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE`,
    [[...new Set(children.map((child) => child.album_pk!))]],
  );
  return rows.map((album) => ({
    workflowId: album.workflow_id,
    messageIds: children.filter((child) => child.album_pk === album.id).map((child) => child.message_id),
  }));
}

/**
 * $1 message ids, $2 album ids, $3 their workflow ids, $4 tombstone days (null: none), $5 workflow ids
 * of the albums that lose a child and stay, $6 those albums' removed message ids. Children before their
 * parents; the foreign keys are checked at the statement's end.
 */
// Every data-modifying CTE runs to completion whether or not the final SELECT reads it.
const purgeStatement = `
WITH target AS (
  SELECT id, workspace, child_identity(workspace, provider, account_id, conversation_id, message_id) AS identity
    FROM messages WHERE id = ANY($1::bigint[])
), tombstoned AS (
  INSERT INTO tombstones (identity, workspace, expires_at)
  SELECT identity, workspace, now() + $4::int * interval '1 day' FROM target WHERE $4::int IS NOT NULL
   ORDER BY identity
  ON CONFLICT (identity) DO UPDATE SET expires_at = GREATEST(tombstones.expires_at, EXCLUDED.expires_at)
  RETURNING 1
), events_gone AS (
  DELETE FROM events WHERE child_identity IN (SELECT identity FROM target) RETURNING 1
), outbox_gone AS (
  DELETE FROM outbox WHERE message_pk IN (SELECT id FROM target) RETURNING 1
), history_gone AS (
  DELETE FROM message_history WHERE message_pk IN (SELECT id FROM target) RETURNING 1
), attachments_gone AS (
  DELETE FROM attachments WHERE message_pk IN (SELECT id FROM target) RETURNING sha256, still_sha256
), garbage AS (
  INSERT INTO media_garbage (sha256)
  SELECT sha256 FROM attachments_gone WHERE sha256 IS NOT NULL
   UNION
  SELECT still_sha256 FROM attachments_gone WHERE still_sha256 IS NOT NULL
  ON CONFLICT (sha256) DO NOTHING
  RETURNING 1
), messages_gone AS (
  DELETE FROM messages WHERE id IN (SELECT id FROM target) RETURNING 1
), decisions_gone AS (
  DELETE FROM decisions WHERE workflow_id = ANY($3::text[]) RETURNING 1
), decisions_stripped AS (
  UPDATE decisions d
     SET child_message_ids = ARRAY(SELECT u.id FROM unnest(d.child_message_ids) WITH ORDINALITY AS u (id, n)
                                    WHERE u.id NOT IN (SELECT jsonb_array_elements_text(s.message_ids)) ORDER BY u.n)
    FROM jsonb_to_recordset($6::jsonb) AS s (workflow_id text, message_ids jsonb)
   WHERE d.workflow_id = s.workflow_id
  RETURNING 1
), notifications_gone AS (
  DELETE FROM notifications WHERE workflow_id = ANY($3::text[]) OR workflow_id = ANY($5::text[]) RETURNING 1
), actions_gone AS (
  DELETE FROM operator_actions WHERE workflow_id = ANY($3::text[]) RETURNING 1
), albums_closed AS (
  UPDATE albums SET state = 'closed', updated_at = now() WHERE workflow_id = ANY($5::text[]) RETURNING 1
), albums_gone AS (
  DELETE FROM albums WHERE id = ANY($2::bigint[]) RETURNING 1
)
SELECT (SELECT count(*)::int FROM albums_gone) AS albums,
       (SELECT count(*)::int FROM messages_gone) AS messages,
       (SELECT count(*)::int FROM attachments_gone) AS attachments,
       (SELECT count(*)::int FROM events_gone) AS events,
       (SELECT count(*)::int FROM decisions_gone) AS decisions,
       (SELECT count(*)::int FROM notifications_gone) AS notifications,
       (SELECT count(*)::int FROM tombstoned) AS tombstones`;

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

/**
 * What retention removes besides albums and messages, one bounded batch of each: raw events that name
 * no child (other event types, and those stored before events named their child) and quarantined
 * bodies older than their workspace's retention; expired tombstones; the collector's old memory.
 */
export async function purgeAged(pool: Pool, defaultDays: number | null, limit: number): Promise<Partial<PurgeCounts>> {
  const events = await pool.query(
    `DELETE FROM events WHERE id IN (
       SELECT e.id FROM events e LEFT JOIN workspace_retention r ON r.workspace = e.workspace
        WHERE e.child_identity IS NULL AND ${expiredBefore('e.last_received_at')} LIMIT $2)`,
    [defaultDays, limit],
  );
  const quarantine = await pool.query(
    `DELETE FROM quarantine WHERE id IN (
       SELECT q.id FROM quarantine q LEFT JOIN workspace_retention r ON r.workspace = q.workspace
        WHERE ${expiredBefore('q.received_at')} LIMIT $2)`,
    [defaultDays, limit],
  );
  const tombstones = await pool.query(
    `DELETE FROM tombstones WHERE identity IN (SELECT identity FROM tombstones WHERE expires_at <= now() LIMIT $1)`,
    [limit],
  );
  await pool.query(`DELETE FROM media_removals WHERE removed_at < now() - $1::int * interval '1 hour'`, [removalMemoryHours]);
  return { events: events.rowCount ?? 0, quarantine: quarantine.rowCount ?? 0, tombstones: tombstones.rowCount ?? 0 };
}

/** The objects queued for the collector, oldest first. */
export async function mediaGarbage(db: Queryable, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ sha256: string }>(`SELECT sha256 FROM media_garbage ORDER BY since, sha256 LIMIT $1`, [limit]);
  return rows.map((row) => row.sha256);
}

/** The transaction-scoped lock of one media object: the collector and a download's record take it. */
export const mediaLockStatement = `SELECT pg_advisory_xact_lock(hashtextextended('albumflow-media:' || $1::text, 0))`;

/**
 * Collects one queued object under its lock: when no attachment references it any more, `remove`
 * removes it from the store (answering the bytes it held, null when it was gone already) and the
 * removal is remembered; either way
 * it leaves the queue. Null when another collector took it first; a failure of `remove` keeps it queued.
 * A download records its object under the same lock (recordDownloadResult), so an object is never
 * removed after an attachment referenced it, and a download whose object was removed meanwhile sees it.
 */
export async function collectObject(
  pool: Pool,
  sha256: string,
  remove: () => Promise<number | null>,
): Promise<{ removed: boolean; bytes: number } | null> {
  return withTransaction(pool, async (client): Promise<{ removed: boolean; bytes: number } | null> => {
    await client.query(mediaLockStatement, [sha256]);
    const queued = await client.query(`DELETE FROM media_garbage WHERE sha256 = $1`, [sha256]);
    if (queued.rowCount === 0) return null;
    const { rows } = await client.query<{ referenced: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM attachments WHERE sha256 = $1) OR EXISTS (SELECT 1 FROM attachments WHERE still_sha256 = $1) AS referenced`,
      [sha256],
    );
    if (rows[0]!.referenced) return { removed: false, bytes: 0 };
    const bytes = await remove();
    await client.query(`INSERT INTO media_removals (sha256) VALUES ($1) ON CONFLICT (sha256) DO UPDATE SET removed_at = now()`, [sha256]);
    // Not there: a collector that crashed after removing it and before committing removed it.
    return bytes === null ? { removed: false, bytes: 0 } : { removed: true, bytes };
  });
}

/** Per-workspace retention (workspace_retention): days, null to keep everything; `undefined` takes RETENTION_DAYS again. */
export async function setWorkspaceRetention(db: Queryable, workspace: string, days: number | null | undefined): Promise<void> {
  if (days === undefined) {
    await db.query(`DELETE FROM workspace_retention WHERE workspace = $1`, [workspace]);
    return;
  }
  await db.query(
    `INSERT INTO workspace_retention (workspace, days) VALUES ($1, $2)
     ON CONFLICT (workspace) DO UPDATE SET days = EXCLUDED.days, updated_at = now()`,
    [workspace, days],
  );
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
