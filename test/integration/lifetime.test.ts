import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { albumWorkflowId, messageWorkflowId } from '../../src/domain/keys.js';
import type { AlbumKey, MessageKey } from '../../src/domain/types.js';
import { recordDownloadResult, findAttachment } from '../../src/db/attachments.js';
import { collectObject } from '../../src/db/media-collector.js';
import { openMediaStore, thumbnailKey, type MediaStore } from '../../src/media/store.js';
import { locateTemporalCli } from '../../src/embedded/temporal-cli.js';
import { ensureRetentionSchedule, retentionScheduleId } from '../../src/temporal/lifetime.js';
import { eventually, settled, storeAttachment, testAlbum, workspaceInbox, type TestAlbum } from '../harness/albums.js';
import { albumEvent } from '../harness/events.js';
import { jpeg } from '../harness/images.js';
import { unique } from '../harness/random.js';
import { startMediaServer, type MediaServer } from '../harness/servers/media.js';
import { startStack, type Stack } from '../harness/stack.js';

const run = promisify(execFile);
const sha256 = (body: Buffer) => crypto.createHash('sha256').update(body).digest('hex');

/**
 * Every row anything of these children or workflows left, by table (an empty object: nothing). The
 * erasure notices (ids only) are what an erasure leaves on purpose: receivers erase their copies by them.
 */
async function leftovers(stack: Stack, keys: readonly MessageKey[], workflowIds: readonly string[]): Promise<Record<string, number>> {
  const tuples = JSON.stringify(keys.map((k) => [k.workspace, k.provider, k.accountId, k.conversationId, k.messageId]));
  const { rows } = await stack.pool.query<{ table: string; count: number }>(
    `WITH k AS (SELECT e->>0 AS w, e->>1 AS p, e->>2 AS a, e->>3 AS c, e->>4 AS m FROM jsonb_array_elements($1::jsonb) e),
          ms AS (SELECT id FROM messages JOIN k ON workspace = w AND provider = p AND account_id = a AND conversation_id = c AND message_id = m)
     SELECT 'messages' AS table, (SELECT count(*)::int FROM ms) AS count
     UNION ALL SELECT 'attachments', (SELECT count(*)::int FROM attachments WHERE message_pk IN (SELECT id FROM ms))
     UNION ALL SELECT 'events', (SELECT count(DISTINCT event_pk)::int FROM event_links
                                  JOIN k ON workspace = w AND provider = p AND account_id = a AND conversation_id = c AND message_id = m)
     UNION ALL SELECT 'albums', (SELECT count(*)::int FROM albums WHERE workflow_id = ANY($2::text[]))
     UNION ALL SELECT 'decisions', (SELECT count(*)::int FROM decisions WHERE workflow_id = ANY($2::text[]))
     UNION ALL SELECT 'notifications', (SELECT count(*)::int FROM notifications WHERE workflow_id = ANY($2::text[])
                                          AND type NOT IN ('album.erased', 'message.erased'))`,
    [tuples, workflowIds],
  );
  return Object.fromEntries(rows.filter((row) => row.count > 0).map((row) => [row.table, row.count]));
}

const childKey = (album: AlbumKey, messageId: string): MessageKey => ({ ...album, messageId });

describe('data lifetime', () => {
  let stack: Stack;
  let media: MediaServer;
  let store: MediaStore;
  const keptWorkspace = unique('ws-kept');
  const token = unique('lifetime-token');
  const auth = { authorization: `Bearer ${token}` };
  const adminToken = unique('lifetime-admin');
  const files = {} as Record<'shared' | 'expiring' | 'standalone' | 'erased', Buffer>;

  beforeAll(async () => {
    stack = await startStack((workspace) => ({
      QUIET_PERIOD_MS: '200',
      LATE_WINDOW_MS: '300',
      // Two seconds: an album closed for that long is expired.
      RETENTION_DAYS: String(2 / 86_400),
      WORKSPACE_SECRETS: JSON.stringify({ [workspace]: ['stack-secret'], [keptWorkspace]: ['kept-secret'] }),
      API_TOKENS: JSON.stringify({ [token]: [workspace, keptWorkspace], [adminToken]: ['*'] }),
    }));
    media = await startMediaServer();
    store = openMediaStore(stack.config.media);
    files.shared = await jpeg(64, 48, 10);
    files.expiring = await jpeg(64, 48, 90);
    files.standalone = await jpeg(64, 48, 170);
    files.erased = await jpeg(64, 48, 250);
    // The kept workspace keeps everything whatever RETENTION_DAYS says (the admin API sets it, and audits it).
    const retention = (method: 'PUT' | 'DELETE', payload?: unknown) =>
      stack.app.inject({
        method,
        url: `/admin/workspaces/${keptWorkspace}/retention`,
        headers: { authorization: `Bearer ${adminToken}` },
        ...(payload ? { payload } : {}),
      });
    expect((await retention('PUT', { days: 3 })).statusCode).toBe(204);
    expect((await retention('DELETE')).statusCode).toBe(204);
    expect((await stack.pool.query(`SELECT 1 FROM workspace_retention WHERE workspace = $1`, [keptWorkspace])).rowCount).toBe(0);
    expect((await retention('PUT', { days: 0 })).statusCode).toBe(400);
    expect((await retention('PUT', { days: null })).statusCode).toBe(400);
    expect((await retention('PUT', { days: 'forever' })).statusCode).toBe(204);
    const audit = await stack.pool.query<{ subject: string }>(
      `SELECT subject FROM admin_audit WHERE action = 'workspace.retention' ORDER BY id`,
    );
    expect(audit.rows.map((row) => row.subject)).toEqual([
      `retention of workspace ${keptWorkspace}: 3 days`,
      `retention of workspace ${keptWorkspace}: RETENTION_DAYS`,
      `retention of workspace ${keptWorkspace}: forever`,
    ]);
    const unknown = await stack.app.inject({
      method: 'PUT',
      url: '/admin/workspaces/no-such-workspace/retention',
      headers: { authorization: `Bearer ${adminToken}` },
      payload: { days: 1 },
    });
    expect(unknown.statusCode).toBe(404);
  });

  afterAll(async () => {
    await stack?.client.schedule
      .getHandle(retentionScheduleId(stack.config.temporal.taskQueue))
      .delete()
      .catch(() => undefined);
    store?.close();
    await media?.close();
    await stack?.close();
  });

  const photo = (body: Buffer) => [{ type: 'image', url: media.file(body, 'image/jpeg'), mime_type: 'image/jpeg' }];

  async function closedAlbum(album: TestAlbum, photos: Buffer[]): Promise<void> {
    for (const [index, body] of photos.entries()) {
      await album.send({ messageId: `m${index}`, index, total: photos.length, attachments: photo(body) });
    }
    await album.until((status) => {
      settled(status);
      expect(status.state).toBe('closed');
      expect(status.media.downloaded).toBe(photos.length);
    });
  }

  it('purges on its Schedule every row and file of the albums closed longer than their retention, and keeps a file a kept album shares', async () => {
    const inbox = workspaceInbox(stack, stack.workspace, 'stack-secret');
    const expiring = testAlbum(inbox, unique('alb-expiring'));
    const kept = testAlbum(workspaceInbox(stack, keptWorkspace, 'kept-secret'), unique('alb-kept'));
    await closedAlbum(expiring, [files.shared, files.expiring]);
    await closedAlbum(kept, [files.shared]);
    // An album still collecting (one child of two) is not closed: retention leaves it, however old.
    const open = testAlbum(inbox, unique('alb-open'));
    await open.send({ messageId: 'm0', index: 0, total: 2, attachments: photo(files.shared) });
    // A standalone message expires by when it was last received.
    const standalone = { conversationId: unique('conv-standalone'), messageId: 'solo' };
    expect((await inbox.post(albumEvent({ ...standalone, attachments: photo(files.standalone) }))).statusCode).toBe(202);
    const standaloneKey: MessageKey = { workspace: stack.workspace, provider: 'whatsapp', accountId: 'acc_1', ...standalone };
    await eventually(async () => {
      const row = await findAttachment(stack.pool, standaloneKey, 0);
      expect(row?.status).toBe('downloaded');
    });
    // A thumbnail the console made of the expiring file goes with it.
    const thumbnail = await store.tempFile('thumb-');
    fs.writeFileSync(thumbnail, 'webp');
    await store.putFile(thumbnailKey(sha256(files.expiring), 'w320'), thumbnail, 'image/webp');
    expect(await store.stat(sha256(files.expiring))).not.toBeNull();

    // Retention's other rows: an event of another type and a quarantined body, both received long ago, and
    // a tombstone past its expiry, go; a live tombstone stays.
    await stack.pool.query(
      `INSERT INTO events (workspace, source, event_id, type, raw, first_received_at, last_received_at)
       VALUES ($1, 'unifyport', $2, 'conversation.updated', '{}', '2020-01-01', '2020-01-01')`,
      [stack.workspace, unique('old-event')],
    );
    await stack.pool.query(
      `INSERT INTO quarantine (workspace, reason, detail, raw, received_at) VALUES ($1, 'test', '', '\\x00', '2020-01-01')`,
      [stack.workspace],
    );
    const expiredTombstone = crypto.randomBytes(32);
    const liveTombstone = crypto.randomBytes(32);
    await stack.pool.query(
      `INSERT INTO tombstones (identity, workspace, expires_at) VALUES ($1, $3, now() - interval '1 minute'), ($2, $3, now() + interval '1 day')`,
      [expiredTombstone, liveTombstone, stack.workspace],
    );

    const { taskQueue } = stack.config.temporal;
    await ensureRetentionSchedule(stack.client, taskQueue, 1);

    const expiringKeys = [childKey(expiring.key, 'm0'), childKey(expiring.key, 'm1'), standaloneKey];
    const expiringWorkflows = [albumWorkflowId(expiring.key), messageWorkflowId(standaloneKey)];
    await eventually(async () => {
      expect(await leftovers(stack, expiringKeys, expiringWorkflows)).toEqual({});
      expect(await store.stat(sha256(files.expiring))).toBeNull();
      expect(await store.stat(sha256(files.standalone))).toBeNull();
    }, 90_000);
    expect(await store.head(thumbnailKey(sha256(files.expiring), 'w320'))).toBeNull();
    // The shared file stays: the kept album (and the open one) still use it.
    expect(await store.stat(sha256(files.shared))).toEqual({ bytes: files.shared.length, contentType: 'image/jpeg' });
    expect(await leftovers(stack, [childKey(kept.key, 'm0')], [albumWorkflowId(kept.key)])).toEqual({
      messages: 1,
      attachments: 1,
      events: 1,
      albums: 1,
      decisions: 1,
      notifications: expect.any(Number) as number,
    });
    expect((await open.status())?.children).toHaveLength(1);
    const aged = await stack.pool.query<{ events: number; quarantine: number; tombstones: string[] }>(
      `SELECT (SELECT count(*)::int FROM events WHERE workspace = $1 AND last_received_at < '2021-01-01') AS events,
              (SELECT count(*)::int FROM quarantine WHERE workspace = $1) AS quarantine,
              ARRAY(SELECT encode(identity, 'hex') FROM tombstones WHERE workspace = $1) AS tombstones`,
      [stack.workspace],
    );
    expect(aged.rows[0]).toEqual({ events: 0, quarantine: 0, tombstones: [liveTombstone.toString('hex')] });
    expect(await stack.pool.query(`SELECT 1 FROM media_garbage`)).toHaveProperty('rowCount', 0);

    // The Schedule is Temporal's: its runs are the retention workflow's, in history.
    const schedule = await stack.client.schedule.getHandle(retentionScheduleId(taskQueue)).describe();
    expect(schedule.info.recentActions.length).toBeGreaterThan(0);
    const lastRun = schedule.info.recentActions.at(-1)!.action.workflow;
    expect(lastRun.workflowId).toMatch(new RegExp(`^${retentionScheduleId(taskQueue)}`));
    await stack.client.schedule.getHandle(retentionScheduleId(taskQueue)).delete();
  });

  it('erases a conversation: rows, files, notifications and workflows; a redelivery afterwards is acknowledged and not stored', async () => {
    const inbox = workspaceInbox(stack, keptWorkspace, 'kept-secret');
    const conversationId = unique('conv-person');
    const album = testAlbum(inbox, unique('alb-person'), conversationId);
    await closedAlbum(album, [files.erased, files.shared]);
    const standalone: MessageKey = { ...album.key, messageId: 'note' };
    const standaloneEvent = albumEvent({ conversationId, messageId: 'note', text: 'a caption to forget', attachments: [] });
    expect((await inbox.post(standaloneEvent)).statusCode).toBe(202);
    const other = testAlbum(inbox, unique('alb-other'));
    await closedAlbum(other, [files.shared]);
    await eventually(async () => expect((await leftovers(stack, [standalone], [])).messages).toBe(1));

    const erase = await stack.app.inject({
      method: 'DELETE',
      url: `/workspaces/${keptWorkspace}/conversations/whatsapp/acc_1/${conversationId}`,
      headers: auth,
    });
    expect(erase.statusCode, erase.body).toBe(202);
    const { id, state } = erase.json<{ id: string; state: string }>();
    expect(state).toBe('running');
    const progress = await eventually(async () => {
      const response = await stack.app.inject({ method: 'GET', url: `/workspaces/${keptWorkspace}/erasures/${id}`, headers: auth });
      expect(response.statusCode, response.body).toBe(200);
      const body = response.json<{ state: string; counts: Record<string, number>; requestedBy: string }>();
      expect(body.state).toBe('done');
      return body;
    }, 90_000);
    expect(progress.counts).toMatchObject({ albums: 1, messages: 3, attachments: 2, tombstones: 3, workflows: 2, mediaObjects: 1 });
    expect(progress.requestedBy).not.toBe('');

    const keys = [childKey(album.key, 'm0'), childKey(album.key, 'm1'), standalone];
    const workflowIds = [albumWorkflowId(album.key), messageWorkflowId(standalone)];
    expect(await leftovers(stack, keys, workflowIds)).toEqual({});
    const notices = await stack.pool.query<{ type: string; payload: unknown }>(
      `SELECT type, payload FROM notifications WHERE workflow_id = ANY($1::text[]) ORDER BY type`,
      [workflowIds],
    );
    expect(notices.rows).toEqual([
      { type: 'album.erased', payload: { album: { workflowId: workflowIds[0], key: album.key } } },
      {
        type: 'message.erased',
        payload: {
          message: {
            workflowId: workflowIds[1],
            key: { workspace: keptWorkspace, provider: 'whatsapp', accountId: 'acc_1', conversationId, messageId: 'note' },
          },
        },
      },
    ]);
    expect(await store.stat(sha256(files.erased))).toBeNull();
    expect(await store.stat(sha256(files.shared))).not.toBeNull();
    expect(await leftovers(stack, [childKey(other.key, 'm0')], [])).toMatchObject({ messages: 1, attachments: 1 });

    // Temporal has neither workflow any more (their histories held the captions).
    const cli = await locateTemporalCli({ allowBuild: false });
    expect(cli.kind).toBe('binary');
    const { address, namespace } = stack.config.temporal;
    for (const workflowId of workflowIds) {
      await eventually(async () => {
        const described = await run(cli.kind === 'binary' ? cli.path : 'temporal', [
          'workflow',
          'describe',
          '--workflow-id',
          workflowId,
          '--address',
          address!,
          '--namespace',
          namespace,
        ]).catch((err: { stderr?: string }) => err);
        expect(String(described.stderr)).toMatch(/not found/i);
      });
    }

    // The provider redelivers a child of it: acknowledged, and nothing of it is stored again.
    const redelivered = (await inbox.post(
      albumEvent({ albumId: album.key.albumId, conversationId, messageId: 'm0', index: 0, total: 2, attachments: photo(files.erased) }),
    )) as { statusCode: number; json: () => unknown };
    expect(redelivered.statusCode).toBe(202);
    expect(redelivered.json()).toEqual({ status: 'ignored', reason: 'erased' });
    expect((await inbox.post(standaloneEvent)).statusCode).toBe(202);
    expect(await leftovers(stack, keys, workflowIds)).toEqual({});
    const albumPath = `/workspaces/${keptWorkspace}/albums/whatsapp/acc_1/${conversationId}/${album.key.albumId}`;
    expect((await stack.app.inject({ method: 'GET', url: albumPath, headers: auth })).statusCode).toBe(404);
    expect((await stack.app.inject({ method: 'DELETE', url: albumPath, headers: auth })).statusCode).toBe(404);
  });
});

describe('the media collector and a download of the same file', () => {
  let stack: Stack;
  let store: MediaStore;

  beforeAll(async () => {
    stack = await startStack();
    store = openMediaStore(stack.config.media);
  });
  afterAll(async () => {
    store?.close();
    await stack?.close();
  });

  async function attachmentWithFile(body: Buffer) {
    const key: MessageKey = {
      workspace: stack.workspace,
      provider: 'whatsapp',
      accountId: 'acc_1',
      conversationId: unique('c'),
      messageId: 'm',
    };
    await storeAttachment(stack.pool, key, { url: 'https://example.test/photo.jpg' });
    const row = (await findAttachment(stack.pool, key, 0))!;
    const written = await store.write(Readable.from([body]), { maxBytes: body.length, contentType: 'image/jpeg' });
    return { key, row, written };
  }
  const downloaded = (sha: string, bytes: number) => ({
    status: 'downloaded' as const,
    contentType: 'image/jpeg',
    bytes,
    sha256: sha,
    error: null,
  });
  const stillStored = async (sha: string) => (await store.stat(sha)) !== null;
  const queue = (sha: string) => stack.pool.query(`INSERT INTO media_garbage (sha256) VALUES ($1) ON CONFLICT DO NOTHING`, [sha]);

  it('never removes a file a download recorded first, and a download recorded after a removal stores its file again', async () => {
    // The download records first: the collector finds the reference and keeps the file.
    const first = await attachmentWithFile(crypto.randomBytes(2048));
    await queue(first.written.sha256);
    expect(await recordDownloadResult(stack.pool, first.row, downloaded(first.written.sha256, 2048), stillStored)).toBe('recorded');
    expect(await collectObject(stack.pool, first.written.sha256, () => store.remove(first.written.sha256))).toEqual({
      removed: false,
      bytes: 0,
    });
    expect(await store.stat(first.written.sha256)).not.toBeNull();

    // The collector removes first (the download found the file in the store just before): the record
    // sees the removal and refuses, so the download stores the file again rather than reference nothing.
    const second = await attachmentWithFile(crypto.randomBytes(2048));
    await queue(second.written.sha256);
    expect(await collectObject(stack.pool, second.written.sha256, () => store.remove(second.written.sha256))).toEqual({
      removed: true,
      bytes: 2048,
    });
    expect(await store.stat(second.written.sha256)).toBeNull();
    expect(await recordDownloadResult(stack.pool, second.row, downloaded(second.written.sha256, 2048), stillStored)).toBe('object_removed');
    expect((await findAttachment(stack.pool, second.key, 0))?.status).toBe('pending');
  });

  it('sees a removal that the collector committed while the record waited for its lock', async () => {
    const { key, row, written } = await attachmentWithFile(crypto.randomBytes(1024));
    await queue(written.sha256);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let removing!: () => void;
    const inside = new Promise<void>((resolve) => (removing = resolve));
    const collecting = collectObject(stack.pool, written.sha256, async () => {
      removing();
      await held;
      return store.remove(written.sha256);
    });
    await inside;
    const recording = recordDownloadResult(stack.pool, row, downloaded(written.sha256, 1024), stillStored);
    // The record waits for the lock the collector holds while it removes the file.
    await eventually(async () => {
      const { rows } = await stack.pool.query<{ waiting: number }>(
        `SELECT count(*)::int AS waiting FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`,
      );
      expect(rows[0]!.waiting).toBe(1);
    });
    release();
    expect(await collecting).toEqual({ removed: true, bytes: 1024 });
    // Its check of the removals comes after the lock: it sees this one, and the file must be stored again.
    expect(await recording).toBe('object_removed');
    expect((await findAttachment(stack.pool, key, 0))?.status).toBe('pending');
  });

  it('holds the collector while a download records its file under the same lock', async () => {
    const { row, written } = await attachmentWithFile(crypto.randomBytes(4096));
    await queue(written.sha256);
    // A removal remembered makes the record check the store, inside its lock: hold it there.
    await stack.pool.query(`INSERT INTO media_removals (sha256) VALUES ($1)`, [written.sha256]);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let checking!: () => void;
    const inside = new Promise<void>((resolve) => (checking = resolve));
    const recording = recordDownloadResult(stack.pool, row, downloaded(written.sha256, 4096), async (sha) => {
      checking();
      await held;
      return stillStored(sha);
    });
    await inside;
    let collected = false;
    const collecting = collectObject(stack.pool, written.sha256, () => store.remove(written.sha256)).then((result) => {
      collected = true;
      return result;
    });
    // The collector waits for the lock: while the record holds it, it has not decided.
    await eventually(async () => {
      const { rows } = await stack.pool.query<{ waiting: number }>(
        `SELECT count(*)::int AS waiting FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`,
      );
      expect(rows[0]!.waiting).toBe(1);
    });
    expect(collected).toBe(false);
    release();
    expect(await recording).toBe('recorded');
    expect(await collecting).toEqual({ removed: false, bytes: 0 });
    expect(await store.stat(written.sha256)).not.toBeNull();
  });
});
