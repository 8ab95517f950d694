// What albumflow reads of Bot API 10.x (docs/telegram.md, "Bot API 10.x"), end to end: the fake Bot API
// serves the files, PostgreSQL and Temporal are real.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectObject } from '../../src/db/media-collector.js';
import { workspaceUsage } from '../../src/db/usage.js';
import { albumWorkflowId } from '../../src/domain/keys.js';
import type { AlbumKey, AlbumView, MessageKey } from '../../src/domain/types.js';
import type { MessageStatus } from '../../src/http/schemas.js';
import { openMediaStore, type MediaStore } from '../../src/media/store.js';
import { consolePaths } from '../../src/ui/paths.js';
import { statusQuery } from '../../workflows/definitions.js';
import { eventually } from '../harness/albums.js';
import { fileIdsOf, messageOf, telegramFixture, variant, type Update } from '../harness/events.js';
import { jpeg, mp4 } from '../harness/images.js';
import { storedNotifications } from '../harness/rows.js';
import { startFakeBotApi, type FakeBotApi } from '../harness/servers/fake-bot-api.js';
import { startStack, type Stack } from '../harness/stack.js';

const botId = '7000000001';
const token = `${botId}:AAH${crypto.randomBytes(16).toString('hex')}`;
const secretToken = `shop-${crypto.randomBytes(8).toString('hex')}`;
const apiToken = crypto.randomBytes(24).toString('hex');
const auth = { authorization: `Bearer ${apiToken}` };
const sha256 = (body: Buffer) => crypto.createHash('sha256').update(body).digest('hex');

let api: FakeBotApi;
let stack: Stack;
let store: MediaStore;

beforeAll(async () => {
  api = await startFakeBotApi();
  api.addBot(token);
  stack = await startStack((workspace) => ({
    QUIET_PERIOD_MS: '400',
    MAX_WAIT_MS: '4000',
    LATE_WINDOW_MS: '60000',
    API_TOKENS: JSON.stringify({ [apiToken]: ['*'] }),
    TELEGRAM_API_ROOT: api.url,
    TELEGRAM_BOTS: JSON.stringify({ [workspace]: { shop: { token, secretToken } } }),
  }));
  store = openMediaStore(stack.config.media);
});

afterAll(async () => {
  store?.close();
  await stack?.close();
  await api?.close();
});

async function send(...updates: unknown[]): Promise<void> {
  for (const update of updates) {
    const answer = await stack.telegram(update, { bot: 'shop' });
    expect([answer.statusCode, answer.body]).toEqual([200, '']);
  }
}

async function get<T>(url: string): Promise<T> {
  const response = await stack.app.inject({ method: 'GET', url, headers: auth });
  expect(response.statusCode, response.body).toBe(200);
  return response.json<T>();
}

const path = (...parts: string[]) => parts.map(encodeURIComponent).join('/');

function albumKeyOf(update: Update, conversationId = String(messageOf(update).chat.id)): AlbumKey {
  return { workspace: stack.workspace, provider: 'telegram', accountId: botId, conversationId, albumId: messageOf(update).media_group_id! };
}

const albumStatus = (key: AlbumKey) =>
  get<AlbumView>(`/workspaces/${path(key.workspace)}/albums/${path(key.provider, key.accountId, key.conversationId, key.albumId)}`);

/** Waits until the album is decided and none of its attachments is pending. */
function settledAlbum(key: AlbumKey, children: number): Promise<AlbumView> {
  return eventually(async () => {
    const status = await albumStatus(key);
    expect(status.distinctChildren).toBe(children);
    expect(status.decisions.length).toBeGreaterThan(0);
    expect(status.media.pending).toBe(0);
    return status;
  });
}

const getFiles = (fileId: string) => api.calls('getFile', token).filter((request) => request.body.includes(`"${fileId}"`)).length;

interface StillColumns {
  still_telegram_file_id: string | null;
  still_sha256: string | null;
  still_bytes: string | null;
  still_content_type: string | null;
}

async function stillOf(key: MessageKey): Promise<StillColumns | undefined> {
  const { rows } = await stack.pool.query<StillColumns>(
    `SELECT a.still_telegram_file_id, a.still_sha256, a.still_bytes, a.still_content_type
       FROM attachments a JOIN messages m ON m.id = a.message_pk
      WHERE m.workspace = $1 AND m.provider = $2 AND m.account_id = $3 AND m.conversation_id = $4 AND m.message_id = $5`,
    [key.workspace, key.provider, key.accountId, key.conversationId, key.messageId],
  );
  return rows[0];
}

describe('a live photo (Bot API 10)', () => {
  it('is one attachment holding the video and its still, both downloaded; the still is the console’s thumbnail, kept and collected with the attachment', async () => {
    const updates = telegramFixture('live-photo-album');
    const [videoId, stillId, photoId] = updates.flatMap(fileIdsOf);
    expect([videoId, stillId, photoId].every((id) => id !== undefined)).toBe(true);
    const video = mp4(96 * 1024, 601);
    const still = await jpeg(540, 720, 30);
    const photo = await jpeg(640, 480, 120);
    api.addFile(token, videoId!, { content: video, contentType: 'video/mp4' });
    api.addFile(token, stillId!, { content: still, contentType: 'image/jpeg' });
    api.addFile(token, photoId!, { content: photo, contentType: 'image/jpeg' });
    await send(...updates);

    const key = albumKeyOf(updates[0]!);
    const album = await settledAlbum(key, 2);
    // The attachment is the video: its type, bytes and hash.
    expect(album.children.map((child) => [child.messageId, child.caption, child.attachments])).toEqual([
      [
        '601',
        'The wave, live',
        [{ position: 0, status: 'downloaded', contentType: 'video/mp4', bytes: video.length, sha256: sha256(video), error: null }],
      ],
      [
        '602',
        null,
        [{ position: 0, status: 'downloaded', contentType: 'image/jpeg', bytes: photo.length, sha256: sha256(photo), error: null }],
      ],
    ]);
    // Both files of the live photo went through getFile, once each.
    expect([getFiles(videoId!), getFiles(stillId!), getFiles(photoId!)]).toEqual([1, 1, 1]);
    const liveKey: MessageKey = { ...key, messageId: '601' };
    expect(await stillOf(liveKey)).toEqual({
      still_telegram_file_id: stillId,
      still_sha256: sha256(still),
      still_bytes: String(still.length),
      still_content_type: 'image/jpeg',
    });
    expect(await store.stat(sha256(still))).toEqual({ bytes: still.length, contentType: 'image/jpeg' });

    // The console shows the still as the live photo's thumbnail (a WebP made of it) and links the video.
    const page = await stack.app.inject({ method: 'GET', url: consolePaths.album(key), headers: auth });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(`src="${consolePaths.thumbnail(key.workspace, sha256(still))}"`);
    expect(page.body).toContain(`href="${consolePaths.media(key.workspace, sha256(video))}" target="_blank" rel="noopener" class="play"`);
    const thumbnail = await stack.app.inject({ method: 'GET', url: consolePaths.thumbnail(key.workspace, sha256(still)), headers: auth });
    expect([thumbnail.statusCode, thumbnail.headers['content-type']]).toEqual([200, 'image/webp']);
    const served = await stack.app.inject({ method: 'GET', url: consolePaths.media(key.workspace, sha256(still)), headers: auth });
    expect([served.statusCode, served.headers['content-type'], served.rawPayload.equals(still)]).toEqual([200, 'image/jpeg', true]);

    // The workspace's media count the still as an object of its own.
    const usage = (await workspaceUsage(stack.pool)).find((entry) => entry.workspace === key.workspace);
    expect(usage?.media).toEqual({ objects: 3, bytes: video.length + still.length + photo.length });

    // The collector keeps the still while its attachment references it.
    await stack.pool.query(`INSERT INTO media_garbage (sha256) VALUES ($1) ON CONFLICT DO NOTHING`, [sha256(still)]);
    expect(await collectObject(stack.pool, sha256(still), () => store.remove(sha256(still)))).toEqual({ removed: false, bytes: 0 });
    expect(await store.stat(sha256(still))).not.toBeNull();

    // Erasing the album collects the still with the video and the photo.
    const albumUrl = `/workspaces/${path(key.workspace)}/albums/${path(key.provider, key.accountId, key.conversationId, key.albumId)}`;
    const erase = await stack.app.inject({ method: 'DELETE', url: albumUrl, headers: auth });
    expect(erase.statusCode, erase.body).toBe(202);
    const { id } = erase.json<{ id: string }>();
    const receipt = await eventually(async () => {
      const body = await get<{ state: string; counts: Record<string, number> }>(`/workspaces/${path(key.workspace)}/erasures/${id}`);
      expect(body.state).toBe('done');
      return body;
    }, 90_000);
    expect(receipt.counts).toMatchObject({ messages: 2, attachments: 2, mediaObjects: 3 });
    for (const file of [video, still, photo]) expect(await store.stat(sha256(file))).toBeNull();
  });
});

describe('a live photo whose still cannot be had at once', () => {
  /** A standalone live photo of its own: the video, and the still beside it in the message's photo. */
  function livePhoto(messageId: number): Update {
    const [update] = variant(telegramFixture('live-photo-album').slice(0, 1), messageId, (message) => {
      delete message.media_group_id;
      delete (message.live_photo as { photo?: unknown }).photo;
    });
    return update!;
  }

  async function downloadedLivePhoto(update: Update) {
    const message = messageOf(update);
    const key: MessageKey = {
      workspace: stack.workspace,
      provider: 'telegram',
      accountId: botId,
      conversationId: String(message.chat.id),
      messageId: String(message.message_id),
    };
    const url = `/workspaces/${path(key.workspace)}/messages/${path(key.provider, key.accountId, key.conversationId, key.messageId)}`;
    const status = await eventually(async () => {
      const body = await get<MessageStatus>(url);
      expect(body.attachments[0]?.status).toBe('downloaded');
      return body;
    });
    return { attachment: status.attachments[0]!, still: await stillOf(key) };
  }

  it('keeps the attachment its video when the still is unavailable, and tries a still that failed for a moment again', async () => {
    const unavailable = livePhoto(20_000);
    const [videoId, stillId] = fileIdsOf(unavailable);
    const video = mp4(48 * 1024, 20_601);
    api.addFile(token, videoId!, { content: video, contentType: 'video/mp4' });
    api.addFile(token, stillId!, { content: await jpeg(30, 40, 60), tooBig: true });
    await send(unavailable);
    const first = await downloadedLivePhoto(unavailable);
    expect([first.attachment.contentType, first.attachment.sha256, first.still?.still_sha256]).toEqual(['video/mp4', sha256(video), null]);
    expect(getFiles(stillId!)).toBe(1);

    const flaky = livePhoto(21_000);
    const [flakyVideoId, flakyStillId] = fileIdsOf(flaky);
    const still = await jpeg(30, 40, 90);
    api.addFile(token, flakyVideoId!, { content: mp4(48 * 1024, 21_601), contentType: 'video/mp4' });
    api.addFile(token, flakyStillId!, { content: still, contentType: 'image/jpeg' });
    // The still is asked for first: its getFile fails once.
    api.failNext('getFile', { status: 502, body: { ok: false, error_code: 502, description: 'Bad Gateway' } });
    await send(flaky);
    const second = await downloadedLivePhoto(flaky);
    expect(second.still?.still_sha256).toBe(sha256(still));
    expect([getFiles(flakyStillId!), getFiles(flakyVideoId!)]).toEqual([2, 1]);
  });
});

describe('paid media (Bot API 10)', () => {
  it('is one child with an attachment per item, in order; each file downloaded, a preview unavailable', async () => {
    const [update] = telegramFixture('paid-media');
    const [photoId, videoId] = fileIdsOf(update!);
    const photo = await jpeg(640, 480, 200);
    const video = mp4(80 * 1024, 701);
    api.addFile(token, photoId!, { content: photo });
    api.addFile(token, videoId!, { content: video });
    await send(update);

    const message = messageOf(update!);
    const url = `/workspaces/${path(stack.workspace)}/messages/${path('telegram', botId, String(message.chat.id), String(message.message_id))}`;
    const status = await eventually(async () => {
      const body = await get<MessageStatus>(url);
      expect(body.decisions.map((decision) => decision.trigger)).toEqual(['standalone']);
      expect(body.attachments.filter((attachment) => attachment.status === 'pending')).toEqual([]);
      return body;
    });
    expect([status.albumKey, status.caption]).toEqual([null, 'Sunrise set (50 stars)']);
    expect(status.attachments).toEqual([
      { position: 0, status: 'downloaded', contentType: 'image/jpeg', bytes: photo.length, sha256: sha256(photo), error: null },
      { position: 1, status: 'downloaded', contentType: 'video/mp4', bytes: video.length, sha256: sha256(video), error: null },
      { position: 2, status: 'unavailable', contentType: null, bytes: null, sha256: null, error: null },
    ]);
    expect([getFiles(photoId!), getFiles(videoId!)]).toEqual([1, 1]);
  });
});

describe('deleted_business_messages (Bot API 10)', () => {
  it('marks each stored child it names withdrawn, as LINE’s unsend does, and notifies one album.updated "deleted"', async () => {
    const album = telegramFixture('business-album');
    for (const update of album) for (const fileId of fileIdsOf(update)) api.addFile(token, fileId, { content: await jpeg(64, 48, 10) });
    await send(...album);
    const first = messageOf(album[0]!);
    const conversationId = `${first.business_connection_id as string}:${first.chat.id}`;
    const key = albumKeyOf(album[0]!, conversationId);
    await settledAlbum(key, 2);

    // The deletion names 102 (stored) and 109 (never stored); Telegram delivers it twice.
    const [deletion] = telegramFixture('deleted-business-messages');
    await send(deletion, deletion);
    const workflowId = albumWorkflowId(key);
    const updated = await eventually(async () => {
      const notifications = (await storedNotifications(stack.pool, workflowId)).filter((n) => n.type === 'album.updated');
      expect(notifications).toHaveLength(1);
      return notifications[0]!;
    });
    expect(updated.id).toBe(`${workflowId}/deleted/102`);
    expect(updated.type).toBe('album.updated');
    expect(updated.payload).toMatchObject({ change: 'deleted', deleted: { messageId: '102' } });
    expect(updated.payload).not.toHaveProperty('unsent');

    // Kept, and flagged in every view: the status body, the workflow's query, the console.
    const status = await albumStatus(key);
    expect(status.children.map((child) => [child.messageId, child.withdrawnAt !== undefined, child.attachments[0]?.status])).toEqual([
      ['101', false, 'downloaded'],
      ['102', true, 'downloaded'],
    ]);
    expect(status.decisions).toHaveLength(1);
    const queried = await stack.client.workflow.getHandle(workflowId).query(statusQuery);
    expect(queried.children.map((child) => child.withdrawnAt !== undefined)).toEqual([false, true]);
    const page = await stack.app.inject({ method: 'GET', url: consolePaths.album(key), headers: auth });
    expect(page.body.match(/class="badge unsent"/g)).toHaveLength(1);

    // The update is its event (once, delivered twice, as received); the child records how it was withdrawn.
    const { rows: events } = await stack.pool.query<{ type: string; raw: unknown; delivery_count: number }>(
      `SELECT type, raw, delivery_count FROM events WHERE workspace = $1 AND source = 'telegram' AND event_id = $2`,
      [stack.workspace, `${botId}:${deletion!.update_id}`],
    );
    expect(events).toEqual([{ type: 'deleted_business_messages', raw: deletion, delivery_count: 2 }]);
    const { rows: withdrawn } = await stack.pool.query<{ message_id: string; withdrawal: string | null }>(
      `SELECT message_id, withdrawal FROM messages WHERE workspace = $1 AND conversation_id = $2 ORDER BY message_id`,
      [stack.workspace, conversationId],
    );
    expect(withdrawn).toEqual([
      { message_id: '101', withdrawal: null },
      { message_id: '102', withdrawal: 'deleted' },
    ]);
  });
});

/** `value` with fields no Bot API version albumflow reads has, in every object at every level. */
function withFutureFields(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withFutureFields);
  if (typeof value !== 'object' || value === null) return value;
  const copy = Object.fromEntries(Object.entries(value).map(([field, inner]) => [field, withFutureFields(inner)]));
  return { ...copy, future_field: { nested: [1, 'two', { deeper: 3.25 }] }, future_flag: true };
}

describe('fields of a newer Bot API', () => {
  it('are accepted at every level and kept in the raw update, which is stored as received', async () => {
    const updates = variant(telegramFixture('live-photo-album'), 90_000, (message) => {
      message.media_group_id = 'newer-api-fields';
    }).map((update) => withFutureFields(update) as Update);
    for (const update of updates) for (const fileId of fileIdsOf(update)) api.addFile(token, fileId, { content: await jpeg(32, 24, 50) });
    await send(...updates);

    const { rows } = await stack.pool.query<{ event_id: string; event_raw: unknown; message_raw: unknown }>(
      `SELECT e.event_id, e.raw AS event_raw, m.raw AS message_raw
         FROM events e JOIN messages m ON m.workspace = e.workspace AND m.provider = 'telegram' AND m.message_id = $2
        WHERE e.workspace = $1 AND e.source = 'telegram' AND e.event_id = $3`,
      [stack.workspace, String(messageOf(updates[0]!).message_id), `${botId}:${updates[0]!.update_id}`],
    );
    expect(rows).toEqual([{ event_id: `${botId}:${updates[0]!.update_id}`, event_raw: updates[0], message_raw: updates[0] }]);
    const album = await settledAlbum(albumKeyOf(updates[0]!), 2);
    expect(album.children.map((child) => child.attachments.map((attachment) => attachment.status))).toEqual([
      ['downloaded'],
      ['downloaded'],
    ]);
    expect(await stillOf({ ...albumKeyOf(updates[0]!), messageId: String(messageOf(updates[0]!).message_id) })).toMatchObject({
      still_sha256: expect.stringMatching(/^[0-9a-f]{64}$/) as string,
    });
  });
});
