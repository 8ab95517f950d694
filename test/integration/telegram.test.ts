import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/process/app.js';
import { albumWorkflowId, messageWorkflowId } from '../../src/domain/keys.js';
import type { MessageStatus } from '../../src/http/schemas.js';
import type { AlbumView, AttachmentView } from '../../src/domain/types.js';
import { eventually, saveHistory } from '../harness/albums.js';
import * as stored from '../harness/rows.js';
import { storedDecisions, storedNotifications } from '../harness/rows.js';
import { startFakeBotApi, type FakeBotApi } from '../harness/servers/fake-bot-api.js';
import { capturedLogger, testPool } from '../harness/env.js';
import { startStack, type Stack } from '../harness/stack.js';
import {
  editOf,
  fileContent,
  fileIdOf,
  messageOf,
  recentSeconds,
  serveFiles,
  telegramFixture,
  variant,
  type Update,
} from '../harness/events.js';

const shopToken = `7000000001:AAH${crypto.randomBytes(16).toString('hex')}`;
const otherToken = `7000000002:AAH${crypto.randomBytes(16).toString('hex')}`;
const shopSecret = `shop-${crypto.randomBytes(8).toString('hex')}`;
const otherSecret = `other-${crypto.randomBytes(8).toString('hex')}`;
const apiToken = crypto.randomBytes(24).toString('hex');
const shop = '7000000001';
const other = '7000000002';

/** Every log line every part of a stack wrote, kept to search for the token. */
const { logger, lines: logLines } = capturedLogger('telegram-test', 'debug');

/** Every status body the tests fetched, kept to search for the token. */
const statusBodies: string[] = [];

let api: FakeBotApi;
/** A local Bot API server (`--local`): getFile answers absolute paths on its disk, and it serves no files. */
let localApi: FakeBotApi;
const localDir = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-local-bot-api-'));

function stackEnv(timing: Record<string, string>, apiRoot = () => api.url) {
  return (workspace: string) => ({
    ...timing,
    API_TOKENS: JSON.stringify({ [apiToken]: ['*'] }),
    TELEGRAM_API_ROOT: apiRoot(),
    TELEGRAM_BOTS: JSON.stringify({
      [workspace]: { shop: { token: shopToken, secretToken: shopSecret }, other: { token: otherToken, secretToken: otherSecret } },
    }),
  });
}

async function send(stack: Stack, updates: readonly Update[], bot = 'shop'): Promise<void> {
  for (const update of updates) {
    const answer = await stack.telegram(update, { bot });
    expect([answer.statusCode, answer.body]).toEqual([200, '']);
  }
}

function albumKeyOf(stack: Stack, update: Update, botId = shop, conversationId = String(messageOf(update).chat.id)) {
  return { workspace: stack.workspace, provider: 'telegram', accountId: botId, conversationId, albumId: messageOf(update).media_group_id! };
}

async function get<T>(stack: Stack, url: string): Promise<T> {
  const response = await stack.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${apiToken}` } });
  expect(response.statusCode, response.body).toBe(200);
  statusBodies.push(response.body);
  return response.json<T>();
}

function albumStatus(stack: Stack, key: ReturnType<typeof albumKeyOf>): Promise<AlbumView> {
  const parts = [key.workspace, key.provider, key.accountId, key.conversationId, key.albumId].map(encodeURIComponent);
  return get(stack, `/workspaces/${parts[0]}/albums/${parts.slice(1).join('/')}`);
}

function messageStatus(stack: Stack, key: Omit<ReturnType<typeof albumKeyOf>, 'albumId'>, messageId: number): Promise<MessageStatus> {
  const parts = [key.workspace, key.provider, key.accountId, key.conversationId, String(messageId)].map(encodeURIComponent);
  return get(stack, `/workspaces/${parts[0]}/messages/${parts.slice(1).join('/')}`);
}

/** Waits until the album emitted an album.updated, and returns it; there must be only one. */
function theOnlyUpdate(stack: Stack, workflowId: string) {
  return eventually(async () => {
    const notifications = (await storedNotifications(stack.pool, workflowId)).filter((n) => n.type === 'album.updated');
    expect(notifications).toHaveLength(1);
    return notifications[0]!;
  });
}

/**
 * Waits for the album's only album.updated and checks that it announces the first edit of a message as
 * `edit` says (its id and payload); returns the album's workflow id.
 */
async function firstEditAnnounced(
  stack: Stack,
  key: ReturnType<typeof albumKeyOf>,
  edit: { messageId: string; caption: string; previousCaption: string; mediaReplaced: boolean },
): Promise<string> {
  const workflowId = albumWorkflowId(key);
  const updated = await theOnlyUpdate(stack, workflowId);
  expect(updated.id).toBe(`${workflowId}/edited/${edit.messageId}/1`);
  expect(updated.payload).toMatchObject({ change: 'edited', edit: { ...edit, version: 1 } });
  return workflowId;
}

/** Waits until the album is decided and none of its attachments is pending. */
function settledAlbum(stack: Stack, key: ReturnType<typeof albumKeyOf>, children: number): Promise<AlbumView> {
  return eventually(async () => {
    const status = await albumStatus(stack, key);
    expect(status.distinctChildren).toBe(children);
    expect(status.decisions.length).toBeGreaterThan(0);
    expect(status.media.pending).toBe(0);
    return status;
  });
}

const downloadedAs = (contentType: string, fileId: string) => ({
  position: 0,
  status: 'downloaded',
  contentType,
  bytes: fileContent(fileId).length,
  sha256: crypto.createHash('sha256').update(fileContent(fileId)).digest('hex'),
  error: null,
});

const errorCode = (body: string) => (JSON.parse(body) as { error: { code: string } }).error.code;

function count(stack: Stack, table: 'events' | 'messages' | 'quarantine'): Promise<number> {
  return stored[table].count(stack.pool, {});
}

/** albumflow_signature_failures_total by its `reason` label, as /metrics shows it. */
async function signatureFailures(stack: Stack): Promise<Map<string, number>> {
  const response = await stack.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${apiToken}` } });
  expect(response.statusCode).toBe(200);
  const series = response.body.matchAll(/^albumflow_signature_failures_total\{reason="([a-z_]+)"\} (\d+)$/gm);
  return new Map([...series].map(([, reason, value]) => [reason!, Number(value)]));
}

let fast: Stack;
let slow: Stack;
/** Downloads from the local Bot API server. */
let local: Stack;

beforeAll(async () => {
  api = await startFakeBotApi();
  localApi = await startFakeBotApi({ localDir });
  fast = await startStack(stackEnv({ QUIET_PERIOD_MS: '400', MAX_WAIT_MS: '4000', LATE_WINDOW_MS: '60000' }), { logger });
  // Items 5 s apart are one album here; the late window is short, so an edit finds the album closed.
  slow = await startStack(stackEnv({ QUIET_PERIOD_MS: '6000', MAX_WAIT_MS: '30000', LATE_WINDOW_MS: '1500' }), { logger });
  local = await startStack(
    stackEnv({ QUIET_PERIOD_MS: '400', MAX_WAIT_MS: '4000', LATE_WINDOW_MS: '60000' }, () => localApi.url),
    { logger },
  );
});

afterAll(async () => {
  await fast?.close();
  await slow?.close();
  await local?.close();
  await api?.close();
  await localApi?.close();
  fs.rmSync(localDir, { recursive: true, force: true });
});

describe('the Telegram webhook: answers', () => {
  it('refuses a wrong or missing secret token with 401, stores nothing, and counts each in the signature failures', async () => {
    const [update] = telegramFixture('standalone-photo');
    const before = await Promise.all([count(fast, 'events'), count(fast, 'messages'), count(fast, 'quarantine')]);
    const failuresBefore = await signatureFailures(fast);
    const wrong = await fast.telegram(update, { bot: 'shop', secretToken: otherSecret });
    const missing = await fast.telegram(update, { bot: 'shop', secretToken: null });
    const garbage = await fast.telegram('not json', { bot: 'shop', secretToken: 'x' });
    expect([wrong.statusCode, errorCode(wrong.body)]).toEqual([401, 'invalid_secret_token']);
    expect([missing.statusCode, errorCode(missing.body)]).toEqual([401, 'missing_secret_token']);
    expect(garbage.statusCode).toBe(401);
    expect(await Promise.all([count(fast, 'events'), count(fast, 'messages'), count(fast, 'quarantine')])).toEqual(before);
    const failures = await signatureFailures(fast);
    expect(failures.get('invalid_secret_token')! - (failuresBefore.get('invalid_secret_token') ?? 0)).toBe(2);
    expect(failures.get('missing_secret_token')! - (failuresBefore.get('missing_secret_token') ?? 0)).toBe(1);
  });

  it('answers 404 for a bot or workspace not in TELEGRAM_BOTS', async () => {
    const [update] = telegramFixture('standalone-photo');
    expect((await fast.telegram(update, { bot: 'nobody', secretToken: shopSecret })).statusCode).toBe(404);
    const elsewhere = await fast.app.inject({
      method: 'POST',
      url: '/webhooks/telegram/elsewhere/shop',
      headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': shopSecret },
      payload: JSON.stringify(update),
    });
    expect(elsewhere.statusCode).toBe(404);
  });

  it('quarantines a body that is not an Update with 400', async () => {
    const before = await count(fast, 'quarantine');
    const answer = await fast.telegram('{"message": {"message_id": 1}}', { bot: 'shop' });
    expect([answer.statusCode, errorCode(answer.body)]).toEqual([400, 'invalid_update']);
    expect(await count(fast, 'quarantine')).toBe(before + 1);
  });

  it('answers 503 while PostgreSQL is unavailable, for a child, an edit, a text message and an update without a child', async () => {
    const deadPool = testPool({ ...fast.config, databaseUrl: 'postgresql://nobody@127.0.0.1:1/none' });
    const broken = await buildApp({ config: fast.config, pool: deadPool, temporal: fast.client, wakeDispatcher: () => undefined, logger });
    try {
      const updates = ['edited-caption', 'text-message', 'unknown-update'].flatMap((name) => telegramFixture(name));
      for (const update of [...telegramFixture('photo-album').slice(0, 1), ...updates]) {
        const response = await broken.inject({
          method: 'POST',
          url: `/webhooks/telegram/${fast.workspace}/shop`,
          headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': shopSecret },
          payload: JSON.stringify(update),
        });
        expect([response.statusCode, errorCode(response.body), response.headers['retry-after']]).toEqual([
          503,
          'database_unavailable',
          '5',
        ]);
      }
    } finally {
      await broken.close();
      await deadPool.end();
    }
  });

  it('is documented in the OpenAPI document with its answers', async () => {
    const spec = (await fast.app.inject({ method: 'GET', url: '/docs/json' })).json<{
      paths: Record<string, { post?: { responses: Record<string, unknown> } }>;
    }>();
    const route = spec.paths['/webhooks/telegram/{workspace}/{bot}']?.post;
    expect(Object.keys(route?.responses ?? {}).sort()).toEqual(['200', '400', '401', '404', '413', '415', '500', '503']);
  });

  it('answers 200 to a message older than REPLAY_HORIZON_S by its edit_date, else its date, and stores nothing of it', async () => {
    const nowS = Math.floor(Date.now() / 1000);
    const horizonS = fast.config.replayHorizonS;
    const chatId = 900_000_000 + Math.floor(Math.random() * 1e8);
    const text = (offset: number, change: (message: ReturnType<typeof messageOf>) => void) =>
      variant(telegramFixture('text-message'), offset, (message) => {
        message.chat.id = chatId;
        change(message);
      })[0]!;
    const old = text(11_001, (message) => {
      message.date = nowS - horizonS - 60;
    });
    const oldEdit = editOf(
      text(11_002, (message) => {
        message.date = nowS - horizonS - 120;
      }),
      0,
      (message) => {
        message.edit_date = nowS - horizonS - 60;
        message.text = 'edited long ago';
      },
    );
    const before = [await count(fast, 'events'), await count(fast, 'messages')];
    await send(fast, [old, oldEdit]);
    expect([await count(fast, 'events'), await count(fast, 'messages')]).toEqual(before);

    // A message just inside the horizon is stored; so is an old message edited recently (by its edit_date).
    const recent = text(11_003, (message) => {
      message.date = nowS - horizonS + 60;
    });
    const recentEdit = editOf(
      text(11_004, (message) => {
        message.date = nowS - horizonS - 3600;
      }),
      0,
      (message) => {
        message.edit_date = nowS - 60;
        message.text = 'edited just now';
      },
    );
    await send(fast, [recent, recentEdit]);
    const events = await stored.events.read(
      fast.pool,
      { source: 'telegram', eventIds: [old, oldEdit, recent, recentEdit].map((u) => `${shop}:${u.update_id}`) },
      ['event_id'],
    );
    expect(events.map((row) => row.event_id)).toEqual([recent, recentEdit].map((u) => `${shop}:${u.update_id}`));
    const children = await stored.messages.read(fast.pool, { conversationId: String(chatId) }, ['message_id', 'caption'], {
      orderBy: ['message_id'],
    });
    expect(children).toEqual([
      { message_id: String(messageOf(recent).message_id), caption: 'hello bot' },
      { message_id: String(messageOf(recentEdit).message_id), caption: 'edited just now' },
    ]);
  });

  it('records an unknown update type and a message with nothing albumflow keeps, answers 200 and stores no child', async () => {
    const [text] = telegramFixture('text-message');
    const location: Record<string, unknown> = { ...messageOf(text!), message_id: 403, location: { latitude: 46.2, longitude: 6.1 } };
    delete location.text;
    const updates = [...telegramFixture('unknown-update'), { update_id: 810000802, message: location }];
    const messages = await count(fast, 'messages');
    await send(fast, updates);
    const rows = await stored.events.read(
      fast.pool,
      { source: 'telegram', eventIds: updates.map((u) => `${shop}:${u.update_id}`) },
      ['event_id', 'type'],
      { orderBy: ['event_id'] },
    );
    expect(rows).toEqual([
      { event_id: `${shop}:810000802`, type: 'message' },
      { event_id: `${shop}:810000901`, type: 'callback_query' },
      { event_id: `${shop}:810000902`, type: 'some_future_update' },
    ]);
    expect(await count(fast, 'messages')).toBe(messages);
  });

  it('stores a text message as a standalone child without attachments, as a UnifyPort message without attachments, and its edit as an edit', async () => {
    const [text] = telegramFixture('text-message');
    await send(fast, [text!]);
    const scope = { workspace: fast.workspace, provider: 'telegram', accountId: shop, conversationId: String(messageOf(text!).chat.id) };
    const message = await eventually(async () => {
      const body = await messageStatus(fast, scope, 402);
      expect(body.decisions).toHaveLength(1);
      return body;
    });
    expect([message.albumKey, message.caption, message.attachments, message.decisions.map((d) => d.trigger)]).toEqual([
      null,
      'hello bot',
      [],
      ['standalone'],
    ]);

    const edit = editOf(text!, 10, (edited) => {
      edited.text = 'hello, bot';
      edited.edit_date = recentSeconds(1790676500);
    });
    await send(fast, [edit]);
    const edited = await messageStatus(fast, scope, 402);
    expect([edited.caption, edited.history.map((version) => version.caption)]).toEqual(['hello, bot', ['hello bot']]);
  });
});

describe('Telegram albums end to end (fake Bot API, real PostgreSQL and Temporal)', () => {
  it('builds a photo album with the caption on its first item, downloaded through getFile', async () => {
    const updates = telegramFixture('photo-album');
    serveFiles(api, shopToken, updates);
    await send(fast, updates);
    const key = albumKeyOf(fast, updates[0]!);
    const album = await settledAlbum(fast, key, 3);
    expect(album.children.map((c) => [c.messageId, c.caption, c.index, c.total])).toEqual([
      ['101', 'Our trip to the lake', null, null],
      ['102', null, null, null],
      ['103', null, null, null],
    ]);
    expect(album.children.map((c) => c.attachments)).toEqual(updates.map((u) => [downloadedAs('image/jpeg', fileIdOf(u))]));
    expect(album.decisions.map((d) => [d.trigger, d.childMessageIds])).toEqual([['quiet_period', ['101', '102', '103']]]);
    for (const update of updates) expect(api.calls('getFile', shopToken).some((r) => r.body.includes(fileIdOf(update)))).toBe(true);
    // The status shows a decision as soon as the workflow made it; its album.ready is stored by the activity that follows.
    await eventually(async () => {
      const notifications = await storedNotifications(fast.pool, albumWorkflowId(key));
      expect(notifications.filter((n) => n.type === 'album.ready')).toHaveLength(1);
    });
  });

  it('keeps the same media_group_id in two chats and for two bots as three albums', async () => {
    const base = variant(telegramFixture('photo-album'), 1_000, (message) => {
      message.media_group_id = 'shared-group';
    });
    // The same message ids and files as well, in another chat.
    const otherChat = base.map((update) => {
      const copy = structuredClone(update);
      copy.update_id += 100;
      messageOf(copy).chat.id = 987654321;
      return copy;
    });
    serveFiles(api, shopToken, base);
    serveFiles(api, otherToken, base);
    await send(fast, base);
    await send(fast, otherChat);
    await send(fast, base, 'other');
    const keys = [albumKeyOf(fast, base[0]!), albumKeyOf(fast, otherChat[0]!), albumKeyOf(fast, base[0]!, other)];
    expect(new Set(keys.map(albumWorkflowId)).size).toBe(3);
    for (const key of keys) {
      const album = await settledAlbum(fast, key, 3);
      expect(album.media.downloaded).toBe(3);
    }
    expect(api.calls('getFile', otherToken)).toHaveLength(3);
  });

  it.each([
    { fixture: 'photo-video-album', types: ['image/jpeg', 'video/mp4'], captions: ['Sunset, and the boat', null] },
    {
      fixture: 'document-album',
      types: ['application/pdf', 'application/pdf', 'application/zip'],
      captions: ['Itinerary', 'Tickets', null],
    },
    { fixture: 'channel-post-album', types: ['image/jpeg', 'image/jpeg'], captions: ['Morning light', null] },
    // A business account's chat is scoped by its connection: it is not the bot's chat with the same id.
    { fixture: 'business-album', types: ['image/jpeg', 'image/jpeg'], captions: ['Is this the right part?', null], business: true },
  ])('builds a $fixture, each file downloaded with its type', async ({ fixture, types, captions, business }) => {
    const updates = telegramFixture(fixture);
    serveFiles(api, shopToken, updates);
    await send(fast, updates);
    const first = messageOf(updates[0]!);
    const conversation = business ? `${first.business_connection_id as string}:${first.chat.id}` : String(first.chat.id);
    const album = await settledAlbum(fast, albumKeyOf(fast, updates[0]!, shop, conversation), types.length);
    expect(album.children.map((c) => [c.attachments[0]?.status, c.attachments[0]?.contentType])).toEqual(
      types.map((type) => ['downloaded', type]),
    );
    expect(album.children.map((c) => c.caption)).toEqual(captions);
    expect(album.decisions.map((d) => d.trigger)).toEqual(['quiet_period']);
  });

  it('stores a standalone photo as a message of its own and downloads it', async () => {
    const [update] = telegramFixture('standalone-photo');
    serveFiles(api, shopToken, [update!]);
    await send(fast, [update!]);
    const scope = { workspace: fast.workspace, provider: 'telegram', accountId: shop, conversationId: String(messageOf(update!).chat.id) };
    const message = await eventually(async () => {
      const body = await messageStatus(fast, scope, messageOf(update!).message_id);
      expect(body.attachments[0]?.status).toBe('downloaded');
      return body;
    });
    expect([message.albumKey, message.caption, message.decisions.map((d) => d.trigger)]).toEqual([null, 'Just one', ['standalone']]);
  });

  it('notifies an edit of a decided album once, as album.updated "edited", and keeps the earlier caption', async () => {
    const updates = variant(telegramFixture('photo-album'), 2_000, (message) => {
      message.media_group_id = 'edited-group';
    });
    const [edit] = variant(telegramFixture('edited-caption'), 2_000, (message) => {
      message.media_group_id = 'edited-group';
    });
    serveFiles(api, shopToken, updates);
    await send(fast, updates);
    const key = albumKeyOf(fast, updates[0]!);
    await settledAlbum(fast, key, 3);

    await send(fast, [edit!, edit!]);
    const workflowId = await firstEditAnnounced(fast, key, {
      messageId: '2101',
      caption: 'Our trip to the lake (day 1)',
      previousCaption: 'Our trip to the lake',
      mediaReplaced: false,
    });
    const album = await albumStatus(fast, key);
    expect(album.children[0]?.caption).toBe('Our trip to the lake (day 1)');
    expect(album.children[0]?.history).toEqual([
      {
        caption: 'Our trip to the lake',
        mediaReplaced: false,
        replacedAt: new Date(recentSeconds(1790676600) * 1000).toISOString(),
        recordedAt: expect.any(String) as string,
      },
    ]);
    expect((await messageStatus(fast, key, 2101)).history).toEqual(album.children[0]?.history);
    expect(album.decisions).toHaveLength(1);

    // An older edit, redelivered after the newer one, changes nothing.
    const older = editOf(edit!, 1, (message) => {
      message.caption = 'an older caption';
      message.edit_date = recentSeconds(1790676300);
    });
    await send(fast, [older]);
    expect((await albumStatus(fast, key)).children[0]?.caption).toBe('Our trip to the lake (day 1)');
    const notifications = await storedNotifications(fast.pool, workflowId);
    expect(notifications.filter((n) => n.type === 'album.ready' || n.type === 'album.updated').map((n) => n.type)).toEqual([
      'album.ready',
      'album.updated',
    ]);
    await saveHistory('album-telegram-edited', fast.client.workflow.getHandle(workflowId));
  });

  it('downloads the new file of an edit that replaces the photo, keeps the replaced version in the history, and announces it once', async () => {
    const updates = variant(telegramFixture('photo-album'), 7_000, (message) => {
      message.media_group_id = 'replaced-media';
    });
    serveFiles(api, shopToken, updates);
    await send(fast, updates);
    const key = albumKeyOf(fast, updates[0]!);
    const before = await settledAlbum(fast, key, 3);
    const oldFile = fileIdOf(updates[0]!);
    expect(before.children[0]?.attachments).toEqual([downloadedAs('image/jpeg', oldFile)]);

    // The same caption, another photo (editMessageMedia): a new file_unique_id.
    const edit = editOf(updates[0]!, 100, (message) => {
      message.photo = [
        { file_id: 'replacement-small', file_unique_id: 'replacement-small-unique', file_size: 900, width: 90, height: 68 },
        { file_id: 'replacement-photo', file_unique_id: 'replacement-photo-unique', file_size: 150000, width: 1280, height: 960 },
      ];
      message.edit_date = recentSeconds(1790676700);
    });
    expect(fileIdOf(edit)).toBe('replacement-photo');
    serveFiles(api, shopToken, [edit]);
    await send(fast, [edit, edit]);

    const workflowId = await firstEditAnnounced(fast, key, {
      messageId: '7101',
      caption: 'Our trip to the lake',
      previousCaption: 'Our trip to the lake',
      mediaReplaced: true,
    });
    const album = await eventually(async () => {
      const status = await albumStatus(fast, key);
      expect(status.children[0]?.attachments).toEqual([downloadedAs('image/jpeg', 'replacement-photo')]);
      return status;
    });
    const history = [
      {
        caption: 'Our trip to the lake',
        mediaReplaced: true,
        replacedAt: new Date(recentSeconds(1790676700) * 1000).toISOString(),
        recordedAt: expect.any(String) as string,
      },
    ];
    expect(album.children[0]?.history).toEqual(history);
    expect((await messageStatus(fast, key, 7101)).history).toEqual(history);
    // The other children and the decision stay as they were; the replaced file was not fetched again.
    expect(album.children.slice(1)).toEqual(before.children.slice(1));
    expect(album.decisions).toEqual(before.decisions);
    const asked = (fileId: string) => api.calls('getFile', shopToken).filter((r) => r.body.includes(`"${fileId}"`)).length;
    expect([asked(oldFile), asked('replacement-photo')]).toEqual([1, 1]);
    const types = (await storedNotifications(fast.pool, workflowId)).map((n) => n.type);
    expect(types.filter((type) => type === 'album.ready' || type === 'album.updated')).toEqual(['album.ready', 'album.updated']);
  });

  it('stores an edit of a child it never saw as the child', async () => {
    const [edit] = variant(telegramFixture('edited-caption'), 3_000, (message) => {
      message.media_group_id = 'edit-first';
      message.message_id = 9101;
    });
    serveFiles(api, shopToken, [edit!]);
    await send(fast, [edit!]);
    const album = await settledAlbum(fast, albumKeyOf(fast, edit!), 1);
    expect([album.children[0]?.caption, album.children[0]?.history, album.media.downloaded]).toEqual([
      'Our trip to the lake (day 1)',
      [],
      1,
    ]);
  });

  it('maps getFile "file is too big" to unavailable, and retries a used path and a transient failure with a fresh getFile', async () => {
    const updates = variant(telegramFixture('document-album'), 4_000, (message) => {
      message.media_group_id = 'failing-files';
    });
    const [big, expired, flaky] = updates.map(fileIdOf);
    serveFiles(api, shopToken, [updates[0]!], { tooBig: true });
    // Each path getFile gives for these serves its file once, then 404s, as an expired path does.
    serveFiles(api, shopToken, updates.slice(1), { expireAfterOneUse: true });
    // The next file fetch uses its path but breaks off halfway; the next getFile answers a server error.
    api.failNext('file', { cutShort: true });
    api.failNext('getFile', {
      status: 500,
      body: { ok: false, error_code: 500, description: `Internal Server Error for bot${shopToken}` },
    });
    const filesBefore = api.calls('file', shopToken).length;
    await send(fast, updates);
    const album = await settledAlbum(fast, albumKeyOf(fast, updates[0]!), 3);
    const [tooBig, afterExpiry, afterFailure] = album.children.map((c) => c.attachments[0]!) as [
      AttachmentView,
      AttachmentView,
      AttachmentView,
    ];
    expect(tooBig.status).toBe('unavailable');
    expect(tooBig.error).toMatch(/up to 20 MB.*file is too big/);
    expect([afterExpiry, afterFailure]).toEqual([downloadedAs('application/pdf', expired!), downloadedAs('application/zip', flaky!)]);
    // One getFile each, one more after the broken transfer and one more after the server error (whichever files they hit).
    const asked = (fileId: string) => api.calls('getFile', shopToken).filter((r) => r.body.includes(fileId)).length;
    expect(asked(big!) + asked(expired!) + asked(flaky!)).toBe(5);
    // The retry fetched a new path: none was fetched twice, and the one broken off is expired now.
    const fetched = api
      .calls('file', shopToken)
      .slice(filesBefore)
      .map((r) => r.path);
    expect(fetched).toHaveLength(3);
    expect(new Set(fetched).size).toBe(3);
    expect((await fetch(`${api.url}${fetched[0]}`)).status).toBe(404);
  });

  it('gives the operator retry a fresh getFile', async () => {
    const updates = variant(telegramFixture('photo-album'), 5_000, (message) => {
      message.media_group_id = 'retried-files';
    }).slice(0, 1);
    const fileId = fileIdOf(updates[0]!);
    api.addBot(shopToken);
    await send(fast, updates);
    const key = albumKeyOf(fast, updates[0]!);
    const failed = await settledAlbum(fast, key, 1);
    expect([failed.children[0]?.attachments[0]?.status, failed.children[0]?.attachments[0]?.error]).toEqual([
      'failed',
      'getFile: 400 Bad Request: invalid file_id',
    ]);
    serveFiles(api, shopToken, updates);
    const parts = [key.workspace, key.provider, key.accountId, key.conversationId, key.albumId].map(encodeURIComponent);
    const retry = await fast.app.inject({
      method: 'POST',
      url: `/workspaces/${parts[0]}/albums/${parts.slice(1).join('/')}/actions/retry-downloads`,
      headers: { authorization: `Bearer ${apiToken}` },
    });
    expect(retry.statusCode).toBe(202);
    await eventually(async () =>
      expect((await albumStatus(fast, key)).children[0]?.attachments[0]).toEqual(downloadedAs('image/jpeg', fileId)),
    );
    expect(api.calls('getFile', shopToken).filter((r) => r.body.includes(fileId))).toHaveLength(2);
  });
});

describe('Telegram albums with a long quiet period', () => {
  it('keeps items out of order, twice, 5 s late and after the decision in one album', async () => {
    const three = variant(telegramFixture('document-album'), 6_000, (message) => {
      message.media_group_id = 'slow-album';
    });
    const [late] = variant([three[2]!], 10, (message) => {
      message.message_id = 9;
      message.document = { ...(message.document as object), file_id: 'late-document', file_unique_id: 'late-document-unique' };
    });
    serveFiles(api, shopToken, [...three, late!]);
    await send(slow, [three[1]!, three[0]!, three[1]!]);
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    await send(slow, [three[2]!]);
    const key = albumKeyOf(slow, three[0]!);
    const decided = await settledAlbum(slow, key, 3);
    expect(decided.decisions.map((d) => d.trigger)).toEqual(['quiet_period']);

    await send(slow, [late!]);
    const workflowId = albumWorkflowId(key);
    const after = await eventually(async () => {
      const decisions = await storedDecisions(slow.pool, workflowId);
      expect(decisions.map((d) => d.trigger)).toEqual(['quiet_period', 'late_item']);
      return decisions;
    });
    // Numeric message_id order: 9 before 6201.
    expect(after[1]!.child_message_ids).toEqual(['9', ...three.map((u) => String(messageOf(u).message_id))]);
    await eventually(async () => {
      const types = (await storedNotifications(slow.pool, workflowId)).map((n) => n.type);
      expect(types.filter((t) => t === 'album.ready')).toHaveLength(1);
      expect(types.filter((t) => t === 'album.updated')).toHaveLength(1);
    });
  });

  it('decides a 10-item album album_full at its tenth item, then notifies an edit after the album closed', async () => {
    const updates = telegramFixture('ten-item-album');
    serveFiles(api, shopToken, updates);
    await send(slow, [...updates.slice(5), ...updates.slice(0, 5)]);
    const key = albumKeyOf(slow, updates[0]!);
    const album = await settledAlbum(slow, key, 10);
    expect(album.decisions.map((d) => [d.trigger, d.childMessageIds])).toEqual([
      ['album_full', updates.map((u) => String(messageOf(u).message_id))],
    ]);
    const workflowId = albumWorkflowId(key);
    await eventually(async () => {
      const rows = await stored.albums.read(slow.pool, { workflowId }, ['state']);
      expect(rows[0]?.state).toBe('closed');
    });

    const edit = editOf(updates[3]!, 1_000, (message) => {
      message.caption = 'fourth, captioned later';
      message.edit_date = recentSeconds(1790677000);
    });
    await send(slow, [edit]);
    const updated = await theOnlyUpdate(slow, workflowId);
    expect(updated.payload).toMatchObject({ change: 'edited', edit: { messageId: '304', version: 1, caption: 'fourth, captioned later' } });
    expect((await storedNotifications(slow.pool, workflowId)).filter((n) => n.type === 'album.ready')).toHaveLength(1);
    const handle = slow.client.workflow.getHandle(workflowId);
    await handle.result();
    await saveHistory('album-telegram-edit-after-close', handle);
  });
});

describe('Telegram albums through a local Bot API server', () => {
  it('reads each file at the absolute path getFile answers, and fails one it cannot read with the reason', async () => {
    const updates = variant(telegramFixture('photo-album'), 8_000, (message) => {
      message.media_group_id = 'local-server';
    });
    serveFiles(localApi, shopToken, updates.slice(0, 2));
    // A path this worker does not see (the server's working directory mounted elsewhere); it names the token, as the real server's paths do.
    const unseen = fileIdOf(updates[2]!);
    localApi.addFile(shopToken, unseen, {
      content: fileContent(unseen),
      filePath: path.join(localDir, 'elsewhere', shopToken, 'photos', 'file_9.jpg'),
    });
    await send(local, updates);
    const album = await settledAlbum(local, albumKeyOf(local, updates[0]!), 3);
    expect(album.children.slice(0, 2).map((c) => c.attachments)).toEqual(
      updates.slice(0, 2).map((u) => [downloadedAs('image/jpeg', fileIdOf(u))]),
    );
    expect(album.children[2]?.attachments[0]).toMatchObject({
      status: 'failed',
      error:
        "the local Bot API server's file is not readable here (ENOENT): albumflow must see that server's working directory at the same path",
    });
    // One getFile each; nothing asked of the file route, which such a server does not serve.
    expect(updates.map((u) => localApi.calls('getFile', shopToken).filter((r) => r.body.includes(`"${fileIdOf(u)}"`)).length)).toEqual([
      1, 1, 1,
    ]);
    expect(localApi.calls('file')).toEqual([]);
  });
});

describe('the bot token', () => {
  it('appears in no log line, status body, notification, attachment error or workflow history', async () => {
    const secrets = [shopToken, otherToken, shopToken.split(':')[1]!, otherToken.split(':')[1]!, shopSecret, otherSecret];
    const histories: string[] = [];
    const notifications: string[] = [];
    for (const stack of [fast, slow, local]) {
      const albums = await stored.albums.read(stack.pool, {}, ['workflow_id']);
      const standalone = await stored.messages.read(stack.pool, { standalone: true }, [
        'workspace',
        'provider',
        'account_id',
        'conversation_id',
        'message_id',
      ]);
      const workflowIds = [
        ...albums.map((row) => row.workflow_id),
        ...standalone.map((row) =>
          messageWorkflowId({
            workspace: row.workspace,
            provider: row.provider,
            accountId: row.account_id,
            conversationId: row.conversation_id,
            messageId: row.message_id,
          }),
        ),
      ];
      for (const workflowId of workflowIds) {
        histories.push(historyToJSON(await stack.client.workflow.getHandle(workflowId).fetchHistory()));
      }
      const rows = [
        ...(await stored.notifications.read(stack.pool, {}, ['payload'])),
        ...(await stored.deliveryAttempts.read(stack.pool, {}, ['error', 'response'])),
      ];
      notifications.push(...rows.map((row) => JSON.stringify(row)));
      const errors = await stored.attachments.read(stack.pool, { failed: true }, ['error']);
      notifications.push(...errors.map((row) => row.error!));
    }
    expect(histories.length).toBeGreaterThan(10);
    expect(logLines.length).toBeGreaterThan(0);
    expect(statusBodies.length).toBeGreaterThan(10);
    expect(notifications.length).toBeGreaterThan(10);
    // The scripted getFile failure quoted the token: what albumflow kept of it is redacted.
    expect(histories.some((history) => history.includes('Internal Server Error for bot7000000001:[redacted]'))).toBe(true);
    for (const [where, texts] of Object.entries({ logs: logLines, statusBodies, notifications, histories })) {
      for (const secret of secrets) expect(texts.filter((text) => text.includes(secret)).length, `${where} hold a token`).toBe(0);
    }
  });
});
