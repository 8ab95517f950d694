// A workspace full of albums that closed long ago, written straight into PostgreSQL and the media store
// (as the ingress, the workflows and the downloads would have left them), for retention to purge.
import crypto from 'node:crypto';
import { Readable } from 'node:stream';
import type { Pool } from '../../src/db/pool.js';
import type { MediaStore } from '../../src/media/store.js';

export interface ExpiredAlbums {
  workspace: string;
  /** The files the albums reference (each by several albums). */
  shas: string[];
}

/**
 * `albums` closed albums of two children each, every child with one downloaded attachment of one of
 * `files` distinct files, its raw event, a decision and a notification per album; closed in 2020.
 */
export async function fillExpiredAlbums(
  pool: Pool,
  store: MediaStore,
  options: { workspace: string; albums: number; files: number },
): Promise<ExpiredAlbums> {
  const shas: string[] = [];
  for (let i = 0; i < options.files; i++) {
    const body = crypto.randomBytes(1024 + i);
    const { sha256 } = await store.write(Readable.from([body]), { maxBytes: body.length, contentType: 'image/jpeg' });
    shas.push(sha256);
  }
  const { workspace, albums } = options;
  await pool.query(
    `WITH new_albums AS (
       INSERT INTO albums (workspace, provider, account_id, conversation_id, album_id, workflow_id, state, updated_at)
       SELECT $1, 'whatsapp', 'acc', 'conv-' || (n % 50), 'alb-' || n,
              'album:' || $1 || ':whatsapp:acc:conv-' || (n % 50) || ':alb-' || n, 'closed', '2020-01-01'
         FROM generate_series(1, $2::int) n
       RETURNING id, album_id, conversation_id, workflow_id
     ), new_messages AS (
       INSERT INTO messages (workspace, provider, account_id, conversation_id, message_id, album_pk, caption, raw, last_received_at)
       SELECT $1, 'whatsapp', 'acc', a.conversation_id, a.album_id || '-m' || c, a.id, 'a caption', '{}', '2020-01-01'
         FROM new_albums a, generate_series(0, 1) c
       RETURNING id, conversation_id, message_id
     ), new_attachments AS (
       INSERT INTO attachments (message_pk, position, kind, url, status, content_type, bytes, sha256)
       SELECT m.id, 0, 'image', 'https://example.test/' || m.message_id, 'downloaded', 'image/jpeg', 1024,
              ($3::text[])[1 + (m.id % cardinality($3::text[]))]
         FROM new_messages m
     ), new_events AS (
       INSERT INTO events (workspace, source, event_id, type, raw, first_received_at, last_received_at)
       SELECT $1, 'unifyport', 'evt-' || m.message_id, 'message.received',
              jsonb_build_object('provider', 'whatsapp', 'account_id', 'acc', 'data',
                                 jsonb_build_object('conversation', jsonb_build_object('id', m.conversation_id),
                                                    'message', jsonb_build_object('id', m.message_id))),
              '2020-01-01', '2020-01-01'
         FROM new_messages m
       RETURNING id, raw
     ), new_links AS (
       INSERT INTO event_links (event_pk, workspace, provider, account_id, conversation_id, message_id)
       SELECT e.id, $1, 'whatsapp', 'acc', e.raw #>> '{data,conversation,id}', e.raw #>> '{data,message,id}' FROM new_events e
     ), new_decisions AS (
       INSERT INTO decisions (workflow_id, seq, trigger, child_message_ids, decided_at)
       SELECT a.workflow_id, 1, 'expected_count_reached', ARRAY[a.album_id || '-m0', a.album_id || '-m1'], '2020-01-01' FROM new_albums a
     )
     INSERT INTO notifications (id, workflow_id, workspace, type, payload)
     SELECT a.workflow_id || '/1', a.workflow_id, $1, 'album.ready', '{"caption": "a caption"}' FROM new_albums a`,
    [workspace, albums, shas],
  );
  await pool.query(`INSERT INTO workspace_retention (workspace, days) VALUES ($1, 1) ON CONFLICT (workspace) DO UPDATE SET days = 1`, [
    workspace,
  ]);
  return { workspace, shas };
}

/** What is left of the workspace's rows, by table (an empty object: nothing). */
export async function workspaceLeftovers(pool: Pool, workspace: string): Promise<Record<string, number>> {
  const { rows } = await pool.query<{ table: string; count: number }>(
    `SELECT 'albums' AS table, (SELECT count(*)::int FROM albums WHERE workspace = $1) AS count
     UNION ALL SELECT 'messages', (SELECT count(*)::int FROM messages WHERE workspace = $1)
     UNION ALL SELECT 'attachments', (SELECT count(*)::int FROM attachments a JOIN messages m ON m.id = a.message_pk WHERE m.workspace = $1)
     UNION ALL SELECT 'events', (SELECT count(*)::int FROM events WHERE workspace = $1)
     UNION ALL SELECT 'decisions', (SELECT count(*)::int FROM decisions WHERE workflow_id LIKE 'album:' || $1 || ':%')
     UNION ALL SELECT 'notifications', (SELECT count(*)::int FROM notifications WHERE workflow_id LIKE 'album:' || $1 || ':%')`,
    [workspace],
  );
  return Object.fromEntries(rows.filter((row) => row.count > 0).map((row) => [row.table, row.count]));
}
