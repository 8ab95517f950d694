// The purge of albums and messages that retention and erasures share (docs/design.md, "Data lifetime"):
// every row of theirs, in one transaction per batch, so a crash rolls it back whole and running it again
// finds what is left; the media objects they leave unreferenced are queued for the collector
// (media-collector.ts).
import { messageWorkflowId } from '../domain/keys.js';
import { addCounts, noCounts, type PurgeCounts } from '../domain/lifetime.js';
import type { AlbumKey, MessageKey } from '../domain/types.js';
import { recordNotification, type NotificationToRecord } from './deliveries.js';
import type { Pool, PoolClient, Queryable } from './pool.js';
import { withTransaction } from './transaction.js';

/** How long a tombstone keeps an erased child from being stored again: past every provider's redelivery horizon. */
export const tombstoneDays = 30;

/** An album that stays, less some of its children (a message's erasure): its rows are amended, not removed. */
export interface AmendedAlbum {
  workflowId: string;
  /** The erased children's message ids. */
  messageIds: string[];
}

/** A purge's batch: the rows it removed, and the workflows whose histories name them. */
export interface PurgedBatch {
  counts: PurgeCounts;
  /** Album and standalone-message workflow ids of what was removed. */
  workflowIds: string[];
  /** Albums that stay, less the erased children: their workflows are run again from what is stored (resumeAlbums). */
  amended: AmendedAlbum[];
}

/** A message a purge removes, as it reads it: its row, its identity and its album. */
export interface TargetMessage {
  id: string;
  workspace: string;
  provider: string;
  account_id: string;
  conversation_id: string;
  message_id: string;
  album_pk: string | null;
}

interface TargetAlbum {
  id: string;
  workflow_id: string;
  workspace: string;
  provider: string;
  account_id: string;
  conversation_id: string;
  album_id: string;
}

/**
 * What a purge removes: albums (with every child of theirs) and messages by id; and, for a
 * conversation's erasure, raw events and quarantined bodies by id (erasureTargets picks those of the
 * conversation that no child's removal takes with it).
 */
export interface PurgeTargets {
  albumPks: readonly string[];
  messagePks: readonly string[];
  eventPks?: readonly string[];
  quarantinePks?: readonly string[];
}

/**
 * Removes these albums (with every child of theirs) and these messages, in one transaction: their raw
 * events (every event linked to one of the children, event_links: an event that names several children
 * goes with the first of them removed, as it holds that child's content), outbox rows, earlier
 * versions, attachments, decisions, notifications and operator actions; and the raw events and
 * quarantined bodies given by id.
 * Each downloaded object they referenced is queued for the collector (collectObject), which removes it
 * once no kept attachment references it. With `tombstone`, every removed child's identity gets a
 * tombstone (an erasure). A message of an album that stays (a message's erasure) is taken out of the
 * album's decisions and notifications; the album keeps its other children, its decisions and its actions
 * (amendAlbums). The last decision seq of each removed workflow is kept (notification_counters), so a
 * later album under the same id never reuses a notification id. With `notices`, receivers are told what
 * went, without content: `album.erased`, `message.erased`, or `album.updated` (`"change": "erased"`).
 */
export async function purgeRows(
  pool: Pool,
  targets: PurgeTargets,
  options: { tombstone: boolean; notices?: boolean },
): Promise<PurgedBatch> {
  const eventPks = targets.eventPks ?? [];
  const quarantinePks = targets.quarantinePks ?? [];
  if ([targets.albumPks, targets.messagePks, eventPks, quarantinePks].every((pks) => pks.length === 0)) {
    return { counts: noCounts(), workflowIds: [], amended: [] };
  }
  return withTransaction(pool, async (client) => {
    const albums = await client.query<TargetAlbum>(
      `SELECT id, workflow_id, workspace, provider, account_id, conversation_id, album_id FROM albums
        WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE`,
      [targets.albumPks],
    );
    const messages = await client.query<TargetMessage>(
      `SELECT id, workspace, provider, account_id, conversation_id, message_id, album_pk FROM messages
        WHERE id = ANY($1::bigint[]) OR album_pk = ANY($2::bigint[]) ORDER BY id FOR UPDATE`,
      [targets.messagePks, albums.rows.map((row) => row.id)],
    );
    const purgedAlbums = new Set(albums.rows.map((row) => row.id));
    const amended = await amendedAlbumsOf(
      client,
      messages.rows.filter((row) => row.album_pk !== null && !purgedAlbums.has(row.album_pk)),
    );
    const standalone = messages.rows.filter((row) => row.album_pk === null);
    const workflowIds = [...albums.rows.map((row) => row.workflow_id), ...standalone.map((row) => messageWorkflowId(messageKeyOf(row)))];
    // Receivers are told only of what they may have been sent.
    const notified = options.notices
      ? await notifiedWorkflows(client, [...workflowIds, ...amended.map((album) => album.workflowId)])
      : new Set();
    const { rows } = await client.query<
      Pick<PurgeCounts, 'albums' | 'messages' | 'attachments' | 'events' | 'decisions' | 'notifications' | 'tombstones' | 'quarantine'>
    >(purgeStatement, [
      messages.rows.map((row) => row.id),
      albums.rows.map((row) => row.id),
      workflowIds,
      options.tombstone ? tombstoneDays : null,
      albums.rows.map((row) => row.workflow_id),
      eventPks,
      quarantinePks,
    ]);
    const counts = { ...noCounts(), ...rows[0]! };
    addCounts(counts, await amendAlbums(client, amended));
    const now = new Date();
    for (const album of albums.rows.filter((row) => notified.has(row.workflow_id))) {
      await recordNotification(client, erasedAlbumNotice(album, now));
    }
    for (const message of standalone) {
      const workflowId = messageWorkflowId(messageKeyOf(message));
      if (notified.has(workflowId)) await recordNotification(client, erasedMessageNotice(workflowId, messageKeyOf(message), now));
    }
    for (const album of amended.filter((row) => notified.has(row.workflowId))) {
      await recordNotification(client, erasedChildrenNotice(album, now));
    }
    return { counts, workflowIds, amended: amended.map(({ workflowId, messageIds }) => ({ workflowId, messageIds })) };
  });
}

export const messageKeyOf = (row: TargetMessage): MessageKey => ({
  workspace: row.workspace,
  provider: row.provider,
  accountId: row.account_id,
  conversationId: row.conversation_id,
  messageId: row.message_id,
});

async function amendedAlbumsOf(
  client: PoolClient,
  children: readonly TargetMessage[],
): Promise<Array<AmendedAlbum & { workspace: string; key: AlbumKey }>> {
  if (children.length === 0) return [];
  const { rows } = await client.query<TargetAlbum>(
    `SELECT id, workflow_id, workspace, provider, account_id, conversation_id, album_id FROM albums
      WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE`,
    [[...new Set(children.map((child) => child.album_pk!))]],
  );
  return rows.map((album) => ({
    workflowId: album.workflow_id,
    workspace: album.workspace,
    key: albumKeyOf(album),
    messageIds: children.filter((child) => child.album_pk === album.id).map((child) => child.message_id),
  }));
}

const albumKeyOf = (row: TargetAlbum): AlbumKey => ({
  workspace: row.workspace,
  provider: row.provider,
  accountId: row.account_id,
  conversationId: row.conversation_id,
  albumId: row.album_id,
});

/** The erasure notices: what receivers may have been sent is gone; their data names it, with no content. */
export const erasureNoticeTypes = ['album.erased', 'message.erased'] as const;

/** Of these workflows, those that recorded a notification (receivers may hold what it carried). */
async function notifiedWorkflows(client: PoolClient, workflowIds: readonly string[]): Promise<Set<string>> {
  const { rows } = await client.query<{ workflow_id: string }>(
    `SELECT DISTINCT workflow_id FROM notifications WHERE workflow_id = ANY($1::text[]) AND type <> ALL($2::text[])`,
    [workflowIds, erasureNoticeTypes],
  );
  return new Set(rows.map((row) => row.workflow_id));
}

/** `album.erased`: the album is gone. Its id goes after the album's last decision (a later album under the id numbers after it). */
function erasedAlbumNotice(album: TargetAlbum, recordedAt: Date): NotificationToRecord {
  return {
    id: `${album.workflow_id}/erased/${recordedAt.getTime()}`,
    workflowId: album.workflow_id,
    workspace: album.workspace,
    type: 'album.erased',
    data: { album: { workflowId: album.workflow_id, key: albumKeyOf(album) } },
    recordedAt,
  };
}

/** `message.erased`: a standalone message is gone. */
function erasedMessageNotice(workflowId: string, key: MessageKey, recordedAt: Date): NotificationToRecord {
  return {
    id: `${workflowId}/erased`,
    workflowId,
    workspace: key.workspace,
    type: 'message.erased',
    data: { message: { workflowId, key } },
    recordedAt,
  };
}

/** `album.updated` (`"change": "erased"`): these children of an album that stays are gone. */
function erasedChildrenNotice(album: AmendedAlbum & { workspace: string; key: AlbumKey }, recordedAt: Date): NotificationToRecord {
  const ids = [...album.messageIds].sort();
  return {
    id: `${album.workflowId}/erased/${ids.map(encodeURIComponent).join(',')}`,
    workflowId: album.workflowId,
    workspace: album.workspace,
    type: 'album.updated',
    data: { change: 'erased', album: { workflowId: album.workflowId, key: album.key }, erased: { messageIds: ids } },
    recordedAt,
  };
}

/**
 * Takes erased children out of albums that stay: out of their decisions, and out of their notifications
 * (the album view's children and every list of message ids; the counts stay as they were sent); the
 * notifications about an erased child itself (its edits, its withdrawal) go. Idempotent.
 */
export async function amendAlbums(db: Queryable, albums: readonly AmendedAlbum[]): Promise<Pick<PurgeCounts, 'notifications'>> {
  if (albums.length === 0) return { notifications: 0 };
  const { rows } = await db.query<{ notifications: number }>(
    `WITH amended AS (
       SELECT s.workflow_id, ARRAY(SELECT jsonb_array_elements_text(s.message_ids)) AS erased
         FROM jsonb_to_recordset($1::jsonb) AS s (workflow_id text, message_ids jsonb)
     ), decisions_amended AS (
       UPDATE decisions d
          SET child_message_ids = ARRAY(SELECT u.id FROM unnest(d.child_message_ids) WITH ORDINALITY AS u (id, n)
                                         WHERE u.id <> ALL (a.erased) ORDER BY u.n)
         FROM amended a
        WHERE d.workflow_id = a.workflow_id AND d.child_message_ids && a.erased
     ), notices_gone AS (
       DELETE FROM notifications n USING amended a
        WHERE n.workflow_id = a.workflow_id AND n.type <> ALL($2::text[])
          AND (n.payload->'edit'->>'messageId' = ANY (a.erased)
               OR n.payload->(n.payload->>'change')->>'messageId' = ANY (a.erased))
       RETURNING 1
     ), notifications_amended AS (
       UPDATE notifications n SET payload = notification_without_children(n.payload, a.erased)
         FROM amended a
        WHERE n.workflow_id = a.workflow_id AND n.type <> ALL($2::text[])
          AND (n.payload->'edit'->>'messageId' = ANY (a.erased)
               OR n.payload->(n.payload->>'change')->>'messageId' = ANY (a.erased)) IS NOT TRUE
     )
     SELECT (SELECT count(*)::int FROM notices_gone) AS notifications`,
    [JSON.stringify(albums.map((album) => ({ workflow_id: album.workflowId, message_ids: album.messageIds }))), erasureNoticeTypes],
  );
  return rows[0]!;
}

/**
 * Runs these albums' workflows again from what is stored: one child of each album that is not closed is
 * queued in the outbox, and the dispatcher starts the workflow, which loads the album's stored state.
 */
export async function resumeStoredAlbums(db: Queryable, workflowIds: readonly string[]): Promise<void> {
  await db.query(
    `INSERT INTO outbox (message_pk)
     SELECT DISTINCT ON (a.id) m.id FROM albums a JOIN messages m ON m.album_pk = a.id
      WHERE a.workflow_id = ANY($1::text[]) AND a.state <> 'closed'
      ORDER BY a.id, m.id`,
    [workflowIds],
  );
}

/**
 * A CTE's statement that keeps the last decision seq of the album workflows `$n` names (text[]) before
 * their decisions go: a later album under the same workflow id numbers its decisions after it.
 */
export const countersStatement = (ids: string) => `INSERT INTO notification_counters (workflow_id, last_seq)
  SELECT workflow_id, max(seq) FROM decisions WHERE workflow_id = ANY(${ids}::text[]) GROUP BY workflow_id
  ON CONFLICT (workflow_id) DO UPDATE SET last_seq = GREATEST(notification_counters.last_seq, EXCLUDED.last_seq)
  RETURNING 1`;

/**
 * $1 message ids, $2 album ids, $3 their workflow ids, $4 tombstone days (null: none), $5 the albums' workflow
 * ids (their last decision seq is kept), $6 ids of further raw events and $7 of quarantined bodies (a
 * conversation's erasure). Children before their parents; the foreign keys are checked at the statement's end.
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
  -- Every raw event linked to a removed child (its links go with it), and the further ones asked for.
  DELETE FROM events WHERE id IN (
    SELECT l.event_pk FROM messages m JOIN event_links l USING (workspace, provider, account_id, conversation_id, message_id)
     WHERE m.id IN (SELECT id FROM target)
     UNION ALL
    SELECT unnest($6::bigint[]))
  RETURNING 1
), quarantine_gone AS (
  DELETE FROM quarantine WHERE id = ANY($7::bigint[]) RETURNING 1
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
), counted AS (
  ${countersStatement('$5')}
), decisions_gone AS (
  DELETE FROM decisions WHERE workflow_id = ANY($3::text[]) RETURNING 1
), notifications_gone AS (
  DELETE FROM notifications WHERE workflow_id = ANY($3::text[]) RETURNING 1
), actions_gone AS (
  DELETE FROM operator_actions WHERE workflow_id = ANY($3::text[]) RETURNING 1
), albums_gone AS (
  DELETE FROM albums WHERE id = ANY($2::bigint[]) RETURNING 1
)
SELECT (SELECT count(*)::int FROM albums_gone) AS albums,
       (SELECT count(*)::int FROM messages_gone) AS messages,
       (SELECT count(*)::int FROM attachments_gone) AS attachments,
       (SELECT count(*)::int FROM events_gone) AS events,
       (SELECT count(*)::int FROM quarantine_gone) AS quarantine,
       (SELECT count(*)::int FROM decisions_gone) AS decisions,
       (SELECT count(*)::int FROM notifications_gone) AS notifications,
       (SELECT count(*)::int FROM tombstoned) AS tombstones`;
