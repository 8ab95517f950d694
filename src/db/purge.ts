// The purge of albums and messages that retention and erasures share (docs/design.md, "Data lifetime"):
// every row of theirs, in one transaction per batch, so a crash rolls it back whole and running it again
// finds what is left; the media objects they leave unreferenced are queued for the collector
// (media-collector.ts).
import { messageWorkflowId } from '../domain/keys.js';
import { noCounts, type PurgeCounts } from '../domain/lifetime.js';
import type { MessageKey } from '../domain/types.js';
import type { Pool, PoolClient } from './pool.js';
import { withTransaction } from './transaction.js';

/** How long a tombstone keeps an erased child from being stored again: past every provider's redelivery horizon. */
export const tombstoneDays = 30;

/** A purge's batch: the rows it removed, and the workflows whose histories name them. */
export interface PurgedBatch {
  counts: PurgeCounts;
  /** Album and standalone-message workflow ids of what was removed. */
  workflowIds: string[];
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
 * tombstone (an erasure). A message of an album that stays (a message's erasure) leaves the album's
 * decisions naming the album's other children, and closes the album: its notifications and workflow go
 * (they hold the message's caption), so the caller deletes that workflow too.
 */
export async function purgeRows(pool: Pool, targets: PurgeTargets, options: { tombstone: boolean }): Promise<PurgedBatch> {
  const eventPks = targets.eventPks ?? [];
  const quarantinePks = targets.quarantinePks ?? [];
  if ([targets.albumPks, targets.messagePks, eventPks, quarantinePks].every((pks) => pks.length === 0)) {
    return { counts: noCounts(), workflowIds: [] };
  }
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
      Pick<PurgeCounts, 'albums' | 'messages' | 'attachments' | 'events' | 'decisions' | 'notifications' | 'tombstones' | 'quarantine'>
    >(purgeStatement, [
      messages.rows.map((row) => row.id),
      albums.rows.map((row) => row.id),
      workflowIds,
      options.tombstone ? tombstoneDays : null,
      strippedAlbums.map((album) => album.workflowId),
      JSON.stringify(strippedAlbums.map((album) => ({ workflow_id: album.workflowId, message_ids: album.messageIds }))),
      eventPks,
      quarantinePks,
    ]);
    return {
      counts: { ...noCounts(), ...rows[0]! },
      workflowIds: [...workflowIds, ...strippedAlbums.map((album) => album.workflowId)],
    };
  });
}

export const messageKeyOf = (row: TargetMessage): MessageKey => ({
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
 * of the albums that lose a child and stay, $6 those albums' removed message ids, $7 ids of further raw
 * events and $8 of quarantined bodies (a conversation's erasure). Children before their parents; the
 * foreign keys are checked at the statement's end.
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
    SELECT unnest($7::bigint[]))
  RETURNING 1
), quarantine_gone AS (
  DELETE FROM quarantine WHERE id = ANY($8::bigint[]) RETURNING 1
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
       (SELECT count(*)::int FROM quarantine_gone) AS quarantine,
       (SELECT count(*)::int FROM decisions_gone) AS decisions,
       (SELECT count(*)::int FROM notifications_gone) AS notifications,
       (SELECT count(*)::int FROM tombstoned) AS tombstones`;
