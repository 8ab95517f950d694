// An erasure removes what it was asked to and no more (docs/design.md, "Data lifetime"): erasing one message of an album
// keeps the album going with its other children, decisions and actions; receivers are told what went,
// without content; a notification id never names two albums; nothing is recorded or kept for rows that
// are gone.
import crypto from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findAttachment, recordDownloadResult } from '../../src/db/attachments.js';
import { recordNotification } from '../../src/db/deliveries.js';
import { collectObject, mediaGarbage, queueThumbnailIfUnreferenced } from '../../src/db/media-collector.js';
import { albumWorkflowId } from '../../src/domain/keys.js';
import type { AlbumView, MessageKey } from '../../src/domain/types.js';
import { openMediaStore, type MediaStore } from '../../src/media/store.js';
import { eventually, storeAttachment, testAlbum, workspaceInbox, type TestAlbum } from '../harness/albums.js';
import { unique } from '../harness/random.js';
import { startStack, type Stack } from '../harness/stack.js';

interface StoredNotification {
  id: string;
  type: string;
  payload: Record<string, unknown>;
}

describe('erasing part of what an album holds', () => {
  let stack: Stack;
  const token = unique('amend-token');
  const auth = { authorization: `Bearer ${token}` };

  beforeAll(async () => {
    stack = await startStack((workspace) => ({
      QUIET_PERIOD_MS: '300',
      // The album stays in its late window for the whole test.
      LATE_WINDOW_MS: '600000',
      API_TOKENS: JSON.stringify({ [token]: [workspace] }),
    }));
  });
  afterAll(async () => {
    await stack?.close();
  });

  const notificationsOf = async (workflowId: string) =>
    (
      await stack.pool.query<StoredNotification>(`SELECT id, type, payload FROM notifications WHERE workflow_id = $1 ORDER BY position`, [
        workflowId,
      ])
    ).rows;

  async function erase(path: string): Promise<Record<string, number>> {
    const response = await stack.app.inject({ method: 'DELETE', url: `/workspaces/${stack.workspace}/${path}`, headers: auth });
    expect(response.statusCode, response.body).toBe(202);
    const { id } = response.json<{ id: string }>();
    return eventually(async () => {
      const receipt = await stack.app.inject({ method: 'GET', url: `/workspaces/${stack.workspace}/erasures/${id}`, headers: auth });
      const body = receipt.json<{ state: string; counts: Record<string, number> }>();
      expect(body.state).toBe('done');
      return body.counts;
    }, 90_000);
  }

  async function decidedAlbum(album: TestAlbum, captions: string[]): Promise<AlbumView> {
    for (const [index, text] of captions.entries()) {
      await album.send({ messageId: `m${index}`, index, total: captions.length, text, attachments: [] });
    }
    return album.until((status) => {
      expect(status.state).toBe('processed');
      expect(status.distinctChildren).toBe(captions.length);
    });
  }

  it('keeps the album, its other children, its decisions and its actions when one message is erased, and tells receivers without content', async () => {
    const album = testAlbum(workspaceInbox(stack, stack.workspace, stack.secret), unique('alb-amended'));
    const secret = unique('a caption the person wants gone');
    await decidedAlbum(album, ['first caption', secret, 'third caption']);
    const workflowId = albumWorkflowId(album.key);
    await eventually(async () => expect((await notificationsOf(workflowId)).map((n) => n.type)).toContain('album.ready'));
    // An operator's action on the album stays with it.
    await stack.pool.query(`INSERT INTO operator_actions (workflow_id, action, requested_by) VALUES ($1, 'retry-downloads', 'test')`, [
      workflowId,
    ]);

    const path = `messages/whatsapp/acc_1/${album.key.conversationId}/m1`;
    const counts = await erase(path);
    expect(counts).toMatchObject({ messages: 1, albums: 0, tombstones: 1 });

    // The decision forgot the message; the album is still decided, in its late window, with its action.
    const decisions = await stack.pool.query<{ seq: number; child_message_ids: string[] }>(
      `SELECT seq, child_message_ids FROM decisions WHERE workflow_id = $1 ORDER BY seq`,
      [workflowId],
    );
    expect(decisions.rows).toEqual([{ seq: 1, child_message_ids: ['m0', 'm2'] }]);
    const stored = await stack.pool.query<{ state: string }>(`SELECT state FROM albums WHERE workflow_id = $1`, [workflowId]);
    expect(stored.rows[0]?.state).toBe('processed');
    expect((await stack.pool.query(`SELECT 1 FROM operator_actions WHERE workflow_id = $1`, [workflowId])).rowCount).toBe(1);

    // Receivers that got the album are told which message went, and no notification holds its content.
    const notifications = await notificationsOf(workflowId);
    expect(notifications.map((n) => n.id)).toEqual([`${workflowId}/1`, `${workflowId}/1/album.media_settled`, `${workflowId}/erased/m1`]);
    expect(notifications[2]!.payload).toEqual({
      change: 'erased',
      album: { workflowId, key: album.key },
      erased: { messageIds: ['m1'] },
    });
    expect(JSON.stringify(notifications)).not.toContain(secret);
    const ready = notifications[0]!.payload as { album: AlbumView; decision: { childMessageIds: string[] } };
    expect(ready.album.children.map((child) => child.messageId)).toEqual(['m0', 'm2']);
    expect(ready.decision.childMessageIds).toEqual(['m0', 'm2']);

    // The album runs on from what is stored: its workflow answers with the two children, and a late
    // photo amends it under the next seq.
    await eventually(async () => {
      const status = await stack.client.workflow.getHandle(workflowId).query<AlbumView>('status');
      expect(status.children.map((child) => child.messageId)).toEqual(['m0', 'm2']);
      expect(status.state).toBe('processed');
    });
    await album.send({ messageId: 'm3', index: 3, total: 4, text: 'a late one', attachments: [] });
    await eventually(async () => expect((await notificationsOf(workflowId)).map((n) => n.id)).toContain(`${workflowId}/2`));
    const late = (await notificationsOf(workflowId)).find((n) => n.id === `${workflowId}/2`)!;
    expect(late.type).toBe('album.updated');
    expect(JSON.stringify(late.payload)).not.toContain(secret);
    expect(await album.status()).toMatchObject({ distinctChildren: 3 });
  });

  it('tells receivers that an album went, and numbers a later album under the same id after it', async () => {
    const album = testAlbum(workspaceInbox(stack, stack.workspace, stack.secret), unique('alb-reused'));
    await decidedAlbum(album, ['one', 'two']);
    const workflowId = albumWorkflowId(album.key);
    await eventually(async () => expect((await notificationsOf(workflowId)).map((n) => n.id)).toContain(`${workflowId}/1`));

    const counts = await erase(`albums/whatsapp/acc_1/${album.key.conversationId}/${album.key.albumId}`);
    expect(counts).toMatchObject({ albums: 1, messages: 2 });
    const notices = await notificationsOf(workflowId);
    expect(notices.map((n) => n.type)).toEqual(['album.erased']);
    expect(notices[0]!.payload).toEqual({ album: { workflowId, key: album.key } });

    // The platform reuses the album id for other photos: their album is another one, its ids are new.
    await album.send({ messageId: 'n0', index: 0, total: 1, text: 'another album', attachments: [] });
    await album.until((status) => expect(status.state).toBe('processed'));
    await eventually(async () => {
      const ids = (await notificationsOf(workflowId)).filter((n) => n.type === 'album.ready').map((n) => n.id);
      expect(ids).toEqual([`${workflowId}/2`]);
    });
  });
});

describe('what is written for a row that is gone', () => {
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

  const key = (): MessageKey => ({
    workspace: stack.workspace,
    provider: 'whatsapp',
    accountId: 'acc_1',
    conversationId: unique('c'),
    messageId: 'm',
  });
  const write = (body: Buffer) => store.write(Readable.from([body]), { maxBytes: body.length, contentType: 'image/jpeg' });
  const stillStored = async (sha: string) => (await store.stat(sha)) !== null;

  it('queues a download finished after its attachment was erased, and the next collector pass removes the file', async () => {
    const child = key();
    await storeAttachment(stack.pool, child, { url: 'https://example.test/photo.jpg' });
    const row = (await findAttachment(stack.pool, child, 0))!;
    // The download is in flight; an erasure removes the row; then the file lands in the store.
    await stack.pool.query(`DELETE FROM attachments WHERE message_pk = $1`, [row.messagePk]);
    const written = await write(crypto.randomBytes(3000));
    const result = { status: 'downloaded' as const, contentType: 'image/jpeg', bytes: 3000, sha256: written.sha256, error: null };
    expect(await recordDownloadResult(stack.pool, row, result, stillStored)).toBe('replaced');

    expect(await mediaGarbage(stack.pool, 1000)).toContain(written.sha256);
    expect(await collectObject(stack.pool, written.sha256, () => store.remove(written.sha256))).toEqual({ removed: true, bytes: 3000 });
    expect(await store.stat(written.sha256)).toBeNull();
  });

  it('queues a file whose thumbnail was written after no attachment referenced it, and keeps one still referenced', async () => {
    const orphan = await write(crypto.randomBytes(1000));
    expect(await queueThumbnailIfUnreferenced(stack.pool, orphan.sha256)).toBe(true);
    expect(await mediaGarbage(stack.pool, 1000)).toContain(orphan.sha256);

    const child = key();
    const kept = await write(crypto.randomBytes(1000));
    await storeAttachment(stack.pool, child, { url: 'https://example.test/kept.jpg' });
    await stack.pool.query(`UPDATE attachments SET status = 'downloaded', sha256 = $2 WHERE message_pk = $1`, [
      (await findAttachment(stack.pool, child, 0))!.messagePk,
      kept.sha256,
    ]);
    expect(await queueThumbnailIfUnreferenced(stack.pool, kept.sha256)).toBe(false);
    expect(await mediaGarbage(stack.pool, 1000)).not.toContain(kept.sha256);
  });

  it('records no notification of a workflow whose album is gone', async () => {
    const workflowId = `album:${unique('gone')}`;
    const recorded = await recordNotification(stack.pool, {
      id: `${workflowId}/1`,
      workflowId,
      workspace: stack.workspace,
      type: 'album.ready',
      data: { album: { caption: 'erased content' } },
      recordedAt: new Date(),
      whileStored: true,
    });
    expect(recorded).toEqual({ recorded: false, feedPosition: null, deliveries: 0 });
    expect((await stack.pool.query(`SELECT 1 FROM notifications WHERE workflow_id = $1`, [workflowId])).rowCount).toBe(0);
  });
});
