import crypto from 'node:crypto';
import { Readable } from 'node:stream';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Pool } from '../../src/db/pool.js';
import { buildApp, type App } from '../../src/process/app.js';
import { webhooksTotal } from '../../src/common/metrics.js';
import { signatureHeader } from '../../src/common/signature.js';
import { testClient, testConfig, testLogger, testPool } from '../harness/env.js';
import { unifyportEvent } from '../harness/events.js';
import { albums, attachments, deliveredColumns, events, messages, outbox, quarantine, webhookRows } from '../harness/rows.js';
import { unique } from '../harness/random.js';

const prefix = unique('wh');
const signed = `${prefix}-signed`;
const open = `${prefix}-open`;
const other = `${prefix}-other`;
const oldSecret = 'old-secret';
const newSecret = 'new-secret';
const maxBodyBytes = 16_384;

const configEnv = {
  WORKSPACE_SECRETS: JSON.stringify({ [signed]: [oldSecret, newSecret], [open]: [], [other]: ['other-secret'] }),
  MAX_BODY_BYTES: String(maxBodyBytes),
  SIGNATURE_TOLERANCE_S: '300',
};
const config = testConfig(configEnv);

let pool: Pool;
let temporal: Client;
let app: App;
let wakes = 0;

beforeAll(async () => {
  pool = testPool(config);
  temporal = await testClient(config);
  app = await buildApp({ config, pool, temporal, wakeDispatcher: () => void wakes++, logger: testLogger(config) });
});

afterAll(async () => {
  await app.close();
  await temporal.connection.close();
  await pool.end();
});

interface EventOptions {
  id?: string | number | null;
  type?: string;
  provider?: unknown;
  account?: unknown;
  conversation?: unknown;
  message?: unknown;
  text?: string;
  caption?: string;
  sentAt?: unknown;
  album?: unknown;
  attachments?: unknown[];
}

/** A UnifyPort event; `null` removes a field. */
function event(options: EventOptions = {}): Record<string, unknown> {
  const given = <T>(value: T | null | undefined, fallback?: T) => (value === null ? undefined : (value ?? fallback));
  return unifyportEvent({
    id: options.id,
    type: options.type,
    provider: options.provider,
    accountId: options.account === undefined ? unique('acc') : options.account,
    conversationId: options.conversation === undefined ? 'conv-1' : options.conversation,
    message: {
      id: given(options.message, unique('msg')),
      sent_at: given(options.sentAt, '2026-09-29T10:00:00Z'),
      attachments: options.attachments ?? [
        { type: 'image', url: 'https://media.example/a.jpg', mime_type: 'image/jpeg', size: 1234, file_name: 'a.jpg' },
      ],
      text: given(options.text),
      caption: given(options.caption),
      album: given(options.album),
    },
  });
}

interface PostOptions {
  /** The secret to sign with; false sends no signature headers. Default: the workspace's newest secret. */
  secret?: string | false;
  timestamp?: number;
  headers?: Record<string, string>;
  /** The app to send to; default: the one of this file. */
  to?: App;
}

const secretsOf: Record<string, string | false> = { [signed]: newSecret, [open]: false, [other]: 'other-secret' };

async function post(workspace: string, body: unknown, options: PostOptions = {}) {
  const payload = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  const secret = options.secret ?? secretsOf[workspace] ?? false;
  const timestamp = String(options.timestamp ?? Math.floor(Date.now() / 1000));
  const headers: Record<string, string> = { 'content-type': 'application/json', ...options.headers };
  if (secret) {
    headers['x-unifyport-timestamp'] = timestamp;
    headers['x-unifyport-signature'] = signatureHeader(secret, timestamp, payload);
  }
  return (options.to ?? app).inject({ method: 'POST', url: `/webhooks/unifyport/${encodeURIComponent(workspace)}`, headers, payload });
}

function messagesOf(workspace: string, accountId: string) {
  return messages.read(pool, { workspace, accountId }, ['id', 'message_id', 'album_pk', ...deliveredColumns]);
}

function attachmentsOf(messagePk: string) {
  return attachments.read(pool, { messagePk }, ['position', 'url', 'status', 'kind', 'declared_size']);
}

function outboxCount(messagePk: string): Promise<number> {
  return outbox.count(pool, { messagePk });
}

function eventsOf(workspace: string) {
  return events.read(pool, { workspace }, ['event_id', 'type', 'delivery_count', 'raw']);
}

function quarantineOf(workspace: string) {
  return quarantine.read(pool, { workspace }, ['reason', 'detail', 'raw']);
}

async function storedAnything(workspace: string): Promise<boolean> {
  return (await webhookRows(pool, workspace)) > 0;
}

describe('POST /webhooks/unifyport/:workspace — accepted children', () => {
  it('stores a new child with its attachments, album, event and outbox row, then answers 202', async () => {
    const account = unique('acc');
    const wakesBefore = wakes;
    const body = event({
      account,
      message: 'msg-1',
      text: 'two cats',
      album: { id: 'alb-1', index: 0, total: 3 },
      attachments: [
        { type: 'image', url: 'https://media.example/1.jpg', mime_type: 'image/jpeg', size: 1234, file_name: '1.jpg' },
        { type: 'video', mime_type: 'video/mp4', size: 99_000_000 },
      ],
    });
    const response = await post(signed, body);

    expect(response.statusCode).toBe(202);
    expect(response.json()).toEqual({
      status: 'accepted',
      duplicate: false,
      childKey: `${signed}:whatsapp:${account}:conv-1:msg-1`,
      albumKey: `${signed}:whatsapp:${account}:conv-1:alb-1`,
    });
    expect(wakes).toBe(wakesBefore + 1);

    const [message, ...rest] = await messagesOf(signed, account);
    expect(rest).toEqual([]);
    expect(message).toMatchObject({
      message_id: 'msg-1',
      album_index: 0,
      album_total: 3,
      metadata_invalid: false,
      album_meta: { id: 'alb-1', index: 0, total: 3 },
      caption: 'two cats',
      delivery_count: 1,
      raw: body,
    });
    expect(message!.sent_at?.toISOString()).toBe('2026-09-29T10:00:00.000Z');
    expect(await attachmentsOf(message!.id)).toEqual([
      { position: 0, url: 'https://media.example/1.jpg', status: 'pending', kind: 'image', declared_size: '1234' },
      { position: 1, url: null, status: 'unavailable', kind: 'video', declared_size: '99000000' },
    ]);
    expect(await outboxCount(message!.id)).toBe(1);

    const albumRows = await albums.read(pool, { workspace: signed, accountId: account }, ['id', 'workflow_id', 'state']);
    expect(albumRows).toEqual([
      { id: message!.album_pk, workflow_id: `album:${signed}:whatsapp:${account}:conv-1:alb-1`, state: 'collecting' },
    ]);
    expect((await eventsOf(signed)).filter((e) => e.event_id === body.id)).toMatchObject([
      { type: 'message.received', delivery_count: 1, raw: body },
    ]);
  });

  it('keeps one row per child and per attachment across redeliveries under the same and another event id', async () => {
    const account = unique('acc');
    const body = event({ account, message: 'msg-dup', album: { id: 'alb-dup', index: 1 } });
    const otherEventId = unique('evt');
    const first = await post(signed, body);
    const sameEvent = await post(signed, body);
    const otherEvent = await post(signed, { ...body, id: otherEventId });

    expect(first.json()).toMatchObject({ status: 'accepted', duplicate: false });
    for (const response of [sameEvent, otherEvent]) {
      expect(response.statusCode).toBe(202);
      expect(response.json()).toEqual({ ...first.json(), duplicate: true });
    }
    const messages = await messagesOf(signed, account);
    expect(messages).toHaveLength(1);
    expect(messages[0]!.delivery_count).toBe(3);
    expect(await attachmentsOf(messages[0]!.id)).toHaveLength(1);
    expect(await outboxCount(messages[0]!.id)).toBe(1);
    const events = new Map((await eventsOf(signed)).map((e) => [e.event_id, e.delivery_count]));
    expect(events.get(body.id as string)).toBe(2);
    expect(events.get(otherEventId)).toBe(1);
  });

  it('stores a URL that a redelivery brings, marks it pending and queues the child again', async () => {
    const account = unique('acc');
    const withoutUrl = event({ account, message: 'msg-url', attachments: [{ type: 'image', mime_type: 'image/png' }] });
    await post(signed, withoutUrl);
    const [message] = await messagesOf(signed, account);
    expect(await attachmentsOf(message!.id)).toMatchObject([{ position: 0, url: null, status: 'unavailable' }]);
    expect(await outboxCount(message!.id)).toBe(1);

    const withUrl = await post(signed, {
      ...withoutUrl,
      id: unique('evt'),
      data: {
        ...(withoutUrl.data as object),
        message: { id: 'msg-url', attachments: [{ type: 'image', url: 'https://media.example/late.png' }] },
      },
    });
    expect(withUrl.json()).toMatchObject({ duplicate: true });
    expect(await attachmentsOf(message!.id)).toMatchObject([{ position: 0, url: 'https://media.example/late.png', status: 'pending' }]);
    expect(await outboxCount(message!.id)).toBe(2);

    await post(signed, { ...withoutUrl, id: unique('evt') });
    expect(await attachmentsOf(message!.id)).toMatchObject([{ url: 'https://media.example/late.png', status: 'pending' }]);
    expect(await outboxCount(message!.id)).toBe(2);
  });

  it('never erases a caption with a later delivery that has none, and fills one that was missing', async () => {
    const account = unique('acc');
    const captioned = event({ account, message: 'msg-cap', caption: 'sunset' });
    await post(signed, captioned);
    const bare = event({ account, message: 'msg-cap', sentAt: null });
    await post(signed, bare);
    const [message] = await messagesOf(signed, account);
    expect(message).toMatchObject({ caption: 'sunset', delivery_count: 2 });
    expect(message!.sent_at?.toISOString()).toBe('2026-09-29T10:00:00.000Z');

    const lateCaption = event({ account, message: 'msg-cap-2' });
    await post(signed, lateCaption);
    await post(signed, event({ account, message: 'msg-cap-2', text: 'filled in later' }));
    const [, second] = await messagesOf(signed, account);
    expect(second).toMatchObject({ message_id: 'msg-cap-2', caption: 'filled in later' });
  });

  it('keeps albums with the same id apart across conversations, accounts and workspaces', async () => {
    const account = unique('acc');
    const otherAccount = unique('acc');
    const responses = await Promise.all([
      post(signed, event({ account, conversation: 'conv-a', message: 'm1', album: { id: 'shared' } })),
      post(signed, event({ account, conversation: 'conv-b', message: 'm1', album: { id: 'shared' } })),
      post(signed, event({ account: otherAccount, conversation: 'conv-a', message: 'm1', album: { id: 'shared' } })),
      post(open, event({ account, conversation: 'conv-a', message: 'm1', album: { id: 'shared' } })),
    ]);
    const albumKeys = responses.map((r) => r.json<{ albumKey: string }>().albumKey);
    expect(responses.map((r) => r.json<{ duplicate: boolean }>().duplicate)).toEqual([false, false, false, false]);
    expect(new Set(albumKeys).size).toBe(4);
    expect(await albums.count(pool, { albumId: 'shared', accountIds: [account, otherAccount] })).toBe(4);
  });

  it('stores children that arrive out of index order under one album', async () => {
    const account = unique('acc');
    for (const index of [2, 0, 1]) {
      const response = await post(signed, event({ account, message: `m${index}`, album: { id: 'ooo', index, total: 3 } }));
      expect(response.statusCode).toBe(202);
    }
    const messages = await messagesOf(signed, account);
    expect(messages.map((m) => [m.message_id, m.album_index, m.album_total])).toEqual([
      ['m2', 2, 3],
      ['m0', 0, 3],
      ['m1', 1, 3],
    ]);
    expect(new Set(messages.map((m) => m.album_pk)).size).toBe(1);
  });

  it('stores a child without a total, and flags (never rejects) malformed album metadata while keeping it raw', async () => {
    const account = unique('acc');
    const cases: [string, Record<string, unknown>][] = [
      ['no-total', { id: 'meta', index: 0 }],
      ['string-total', { id: 'meta', index: 1, total: '3' }],
      ['negative-index', { id: 'meta', index: -1, total: 3 }],
      ['fractional-total', { id: 'meta', index: 2, total: 2.5 }],
      ['zero-total', { id: 'meta', index: 3, total: 0 }],
    ];
    for (const [messageId, album] of cases) {
      const response = await post(signed, event({ account, message: messageId, album }));
      expect(response.statusCode).toBe(202);
    }
    const byId = new Map((await messagesOf(signed, account)).map((m) => [m.message_id, m]));
    expect(byId.get('no-total')).toMatchObject({ album_index: 0, album_total: null, metadata_invalid: false });
    expect(byId.get('string-total')).toMatchObject({
      album_index: 1,
      album_total: null,
      metadata_invalid: true,
      album_meta: { total: '3' },
    });
    expect(byId.get('negative-index')).toMatchObject({
      album_index: null,
      album_total: 3,
      metadata_invalid: true,
      album_meta: { index: -1 },
    });
    expect(byId.get('fractional-total')).toMatchObject({
      album_index: 2,
      album_total: null,
      metadata_invalid: true,
      album_meta: { total: 2.5 },
    });
    expect(byId.get('zero-total')).toMatchObject({ album_index: 3, album_total: null, metadata_invalid: true });
    expect(new Set([...byId.values()].map((m) => m.album_pk)).size).toBe(1);
  });

  it('stores a message without an album id as a standalone message', async () => {
    const account = unique('acc');
    const plain = await post(signed, event({ account, message: 'solo' }));
    const idless = await post(signed, event({ account, message: 'solo-2', album: { index: 0, total: 2 } }));
    expect(plain.json()).toMatchObject({ status: 'accepted', albumKey: null });
    expect(idless.json()).toMatchObject({ status: 'accepted', albumKey: null });
    for (const message of await messagesOf(signed, account)) {
      expect(message).toMatchObject({ album_pk: null, album_index: null, album_total: null });
    }
  });

  it('accepts numeric identities as strings and derives an event id from the body when it has none', async () => {
    const account = 4242_0000 + crypto.randomInt(1_000_000);
    const body = event({ id: null, account, conversation: 77, message: 12, album: { id: 5 } });
    const raw = JSON.stringify(body);
    const response = await post(signed, raw);
    expect(response.json()).toMatchObject({
      childKey: `${signed}:whatsapp:${account}:77:12`,
      albumKey: `${signed}:whatsapp:${account}:77:5`,
    });
    const expectedId = `sha256:${crypto.createHash('sha256').update(raw).digest('hex')}`;
    expect((await eventsOf(signed)).map((e) => e.event_id)).toContain(expectedId);
  });

  it('accepts unsigned requests for a workspace with an empty secret list', async () => {
    const response = await post(open, event());
    expect(response.statusCode).toBe(202);
    expect(response.json()).toMatchObject({ status: 'accepted' });
  });

  it('answers 202 ignored for a verified event of another type and still records it', async () => {
    const body = event({ type: 'message.updated', id: unique('evt-ignored') });
    const response = await post(signed, body);
    expect(response.statusCode).toBe(202);
    expect(response.json()).toEqual({ status: 'ignored' });
    expect((await eventsOf(signed)).filter((e) => e.event_id === body.id)).toMatchObject([{ type: 'message.updated', raw: body }]);
  });
});

describe('POST /webhooks/unifyport/:workspace — refusals', () => {
  it('answers 404 for an unknown workspace before reading anything else', async () => {
    const workspace = unique('nowhere');
    const before = (await webhooksTotal.get()).values.find((v) => v.labels.outcome === 'unknown_workspace')?.value ?? 0;
    const response = await post(workspace, 'not even json', { secret: 'whatever' });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({ error: { code: 'unknown_workspace', message: `workspace "${workspace}" is not configured` } });
    expect(await storedAnything(workspace)).toBe(false);
    const after = (await webhooksTotal.get()).values.find((v) => v.labels.outcome === 'unknown_workspace' && v.labels.status === '404');
    expect(after?.value).toBe(before + 1);
  });

  describe('401 for a bad signature; nothing is stored', () => {
    const body = () => event({ id: unique('evt-401') });
    const nowS = () => Math.floor(Date.now() / 1000);

    async function expectRefused(response: Awaited<ReturnType<typeof post>>, code: string, eventId: unknown) {
      expect(response.statusCode).toBe(401);
      const refusal = response.json<{ error: { code: string; message: string } }>();
      expect(refusal.error.code).toBe(code);
      expect(refusal.error.message).not.toBe('');
      expect((await eventsOf(signed)).map((e) => e.event_id)).not.toContain(eventId);
    }

    it('refuses missing signature headers', async () => {
      const b = body();
      await expectRefused(await post(signed, b, { secret: false }), 'missing_signature', b.id);
    });

    it('refuses a signature made with a secret of another workspace', async () => {
      const b = body();
      await expectRefused(await post(signed, b, { secret: 'other-secret' }), 'invalid_signature', b.id);
    });

    it('accepts both the old and the new secret while a secret rotates', async () => {
      expect((await post(signed, body(), { secret: oldSecret })).statusCode).toBe(202);
      expect((await post(signed, body(), { secret: newSecret })).statusCode).toBe(202);
    });

    it('refuses a tampered body', async () => {
      const b = body();
      const timestamp = String(nowS());
      const signature = signatureHeader(newSecret, timestamp, JSON.stringify(b));
      const tampered = JSON.stringify({ ...b, account_id: 'someone-else' });
      const response = await app.inject({
        method: 'POST',
        url: `/webhooks/unifyport/${signed}`,
        headers: { 'content-type': 'application/json', 'x-unifyport-timestamp': timestamp, 'x-unifyport-signature': signature },
        payload: tampered,
      });
      await expectRefused(response, 'invalid_signature', b.id);
    });

    it('verifies the raw bytes, not a re-serialized body', async () => {
      const b = body();
      const sent = JSON.stringify(b, null, 2);
      const timestamp = String(nowS());
      const signedCompact = signatureHeader(newSecret, timestamp, JSON.stringify(b));
      const response = await app.inject({
        method: 'POST',
        url: `/webhooks/unifyport/${signed}`,
        headers: { 'content-type': 'application/json', 'x-unifyport-timestamp': timestamp, 'x-unifyport-signature': signedCompact },
        payload: sent,
      });
      await expectRefused(response, 'invalid_signature', b.id);
      const signedPretty = await app.inject({
        method: 'POST',
        url: `/webhooks/unifyport/${signed}`,
        headers: {
          'content-type': 'application/json',
          'x-unifyport-timestamp': timestamp,
          'x-unifyport-signature': signatureHeader(newSecret, timestamp, sent),
        },
        payload: sent,
      });
      expect(signedPretty.statusCode).toBe(202);
    });

    it('refuses stale and future timestamps even when correctly signed', async () => {
      const stale = body();
      await expectRefused(await post(signed, stale, { timestamp: nowS() - 301 - 5 }), 'stale_timestamp', stale.id);
      const future = body();
      await expectRefused(await post(signed, future, { timestamp: nowS() + 301 + 5 }), 'future_timestamp', future.id);
    });

    it('checks the signature before parsing: a badly signed invalid body is 401, not 400', async () => {
      const before = (await quarantineOf(signed)).length;
      const response = await post(signed, '{ not json', { secret: 'wrong' });
      expect(response.statusCode).toBe(401);
      expect(await quarantineOf(signed)).toHaveLength(before);
    });
  });

  describe('400 for a verified body that is not a storable child; the raw body is quarantined', () => {
    it('quarantines unparsable JSON byte for byte', async () => {
      const workspace = other;
      const raw = Buffer.from('{"id": "evt", "type": "message.received", oops');
      const response = await post(workspace, raw);
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({ error: { code: 'invalid_json' } });
      expect(response.json<{ error: { message: string } }>().error.message).toMatch(/^body is not valid JSON/);
      const rows = await quarantineOf(workspace);
      expect(rows.at(-1)).toMatchObject({ reason: 'invalid_json' });
      expect(rows.at(-1)!.raw.equals(raw)).toBe(true);
    });

    it('quarantines a child whose identity is missing, naming the missing fields', async () => {
      const body = event({ conversation: null, message: '' });
      const raw = JSON.stringify(body);
      const response = await post(signed, raw);
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({
        error: { code: 'missing_identity', message: 'missing child identity: data.conversation.id, data.message.id' },
      });
      const row = (await quarantineOf(signed)).find((q) => q.raw.toString() === raw);
      expect(row).toMatchObject({ reason: 'missing_identity' });
      expect(await events.read(pool, { workspace: signed, eventId: body.id as string }, ['id'])).toEqual([]);
    });

    it('quarantines a body that is JSON but not an event object', async () => {
      const response = await post(open, '[1, 2, 3]');
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({ error: { code: 'invalid_event' } });
      expect((await quarantineOf(open)).some((q) => q.raw.toString() === '[1, 2, 3]' && q.reason === 'invalid_event')).toBe(true);
    });

    it('quarantines an event PostgreSQL cannot store as JSON (a NUL character)', async () => {
      const raw = JSON.stringify(event({ text: 'nul \u0000 here' }));
      const response = await post(open, raw);
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({ error: { code: 'unstorable_event' } });
      expect((await quarantineOf(open)).some((q) => q.raw.toString() === raw && q.reason === 'unstorable_event')).toBe(true);
    });
  });

  describe('413 and 415', () => {
    it('refuses a body larger than MAX_BODY_BYTES announced by content-length', async () => {
      const raw = JSON.stringify(event({ text: 'x'.repeat(maxBodyBytes) }));
      const response = await post(open, raw);
      expect(response.statusCode).toBe(413);
      expect(response.json()).toMatchObject({ error: { code: 'body_too_large' } });
    });

    it('refuses a streamed (chunked) body once it passes MAX_BODY_BYTES', async () => {
      const chunk = Buffer.alloc(4096, 0x20);
      const stream = Readable.from(
        (function* () {
          for (let i = 0; i < 16; i++) yield chunk;
        })(),
      );
      const response = await app.inject({
        method: 'POST',
        url: `/webhooks/unifyport/${open}`,
        headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
        payload: stream,
      });
      expect(response.statusCode).toBe(413);
      expect(response.json()).toMatchObject({ error: { code: 'body_too_large' } });
    });

    it('refuses a body that is not JSON', async () => {
      const response = await post(open, 'hello', { headers: { 'content-type': 'text/plain' } });
      expect(response.statusCode).toBe(415);
      expect(response.json()).toMatchObject({ error: { code: 'unsupported_media_type' } });
    });

    it('refuses a request without a body or content type', async () => {
      const response = await app.inject({ method: 'POST', url: `/webhooks/unifyport/${open}` });
      expect(response.statusCode).toBe(415);
      expect(response.json()).toMatchObject({ error: { code: 'unsupported_media_type' } });
    });

    it('keeps the raw-body parser inside the webhook plugin', () => {
      expect(app.hasContentTypeParser('application/json')).toBe(true);
      expect(app.hasContentTypeParser('text/plain')).toBe(true);
    });

    it('accepts a JSON content type with a charset parameter', async () => {
      const response = await post(open, event(), { headers: { 'content-type': 'application/json; charset=utf-8' } });
      expect(response.statusCode).toBe(202);
    });
  });

  it('answers 503 when PostgreSQL is unavailable, never a 2xx without a committed row', async () => {
    const deadPool = testPool({ ...config, databaseUrl: 'postgresql://nobody@127.0.0.1:1/none' });
    const broken = await buildApp({ config, pool: deadPool, temporal, wakeDispatcher: () => void wakes++, logger: testLogger(config) });
    const wakesBefore = wakes;
    try {
      const child = await broken.inject({
        method: 'POST',
        url: `/webhooks/unifyport/${open}`,
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify(event()),
      });
      expect(child.statusCode).toBe(503);
      expect(child.json()).toEqual({ error: { code: 'database_unavailable', message: 'the database is unavailable; retry later' } });
      expect(child.headers['retry-after']).toBe('5');

      const invalid = await broken.inject({
        method: 'POST',
        url: `/webhooks/unifyport/${open}`,
        headers: { 'content-type': 'application/json' },
        payload: '{ nope',
      });
      expect(invalid.statusCode).toBe(503);
      expect(wakes).toBe(wakesBefore);
    } finally {
      await broken.close();
      await deadPool.end();
    }
  });
});

describe('group commit: concurrent requests share one transaction', () => {
  const batchOf3 = testConfig({ ...configEnv, INGEST_BATCH_MAX_ROWS: '3', INGEST_BATCH_MAX_WAIT_MS: '60000' });
  let batching: App;
  let batchWakes = 0;

  beforeAll(async () => {
    batching = await buildApp({ config: batchOf3, pool, temporal, wakeDispatcher: () => void batchWakes++, logger: testLogger(batchOf3) });
  });

  afterAll(async () => {
    await batching.close();
  });

  async function transactionsOf(workspace: string, accountId: string): Promise<number> {
    return new Set((await messages.read(pool, { workspace, accountId }, ['txid'])).map((row) => row.txid)).size;
  }

  it('answers each request after the shared commit, with its own duplicate flag, and wakes the dispatcher once', async () => {
    const account = unique('acc');
    const redelivered = event({ account, message: 'twice', album: { id: 'alb-batch', index: 0 } });
    const wakesBefore = batchWakes;
    const responses = await Promise.all([
      post(signed, redelivered, { to: batching }),
      post(signed, redelivered, { to: batching }),
      post(signed, event({ account, message: 'once', album: { id: 'alb-batch', index: 1 } }), { to: batching }),
    ]);

    expect(responses.map((r) => r.statusCode)).toEqual([202, 202, 202]);
    const bodies = responses.map((r) => r.json<{ duplicate: boolean; childKey: string; albumKey: string }>());
    expect(
      bodies
        .slice(0, 2)
        .map((b) => b.duplicate)
        .sort(),
    ).toEqual([false, true]);
    expect(bodies[2]).toEqual({
      status: 'accepted',
      duplicate: false,
      childKey: `${signed}:whatsapp:${account}:conv-1:once`,
      albumKey: `${signed}:whatsapp:${account}:conv-1:alb-batch`,
    });
    expect(batchWakes).toBe(wakesBefore + 1);
    expect(await transactionsOf(signed, account)).toBe(1);

    const messages = await messagesOf(signed, account);
    expect(Object.fromEntries(messages.map((m) => [m.message_id, m.delivery_count]))).toEqual({ once: 1, twice: 2 });
    expect(new Set(messages.map((m) => m.album_pk)).size).toBe(1);
    for (const message of messages) {
      expect(await attachmentsOf(message.id)).toHaveLength(1);
      expect(await outboxCount(message.id)).toBe(1);
    }
    expect((await eventsOf(signed)).find((e) => e.event_id === redelivered.id)?.delivery_count).toBe(2);
  });

  it('quarantines a poisoned event of a batch and stores the others', async () => {
    const account = unique('acc');
    // A number jsonb cannot hold (22003): the parser reads no such field, so only the batch's statement refuses it.
    const poisoned = JSON.stringify(event({ account, message: 'poisoned' })).replace(/}$/, ',"extra":1e200000}');
    const responses = await Promise.all([
      post(open, event({ account, message: 'before' }), { to: batching }),
      post(open, poisoned, { to: batching }),
      post(open, event({ account, message: 'after' }), { to: batching }),
    ]);

    expect(responses.map((r) => r.statusCode)).toEqual([202, 400, 202]);
    expect(responses[1].json()).toMatchObject({ error: { code: 'unstorable_event' } });
    expect((await quarantineOf(open)).some((q) => q.raw.toString() === poisoned && q.reason === 'unstorable_event')).toBe(true);
    expect((await messagesOf(open, account)).map((m) => m.message_id).sort()).toEqual(['after', 'before']);
  });
});

describe('back-pressure', () => {
  it('answers 503 with Retry-After once INGEST_MAX_PENDING requests wait for a saturated pool', async () => {
    const saturating = testConfig({ ...configEnv, INGEST_MAX_PENDING: '1', INGEST_BATCH_MAX_WAIT_MS: '0' });
    const onePool = testPool(saturating, 1);
    const saturated = await buildApp({
      config: saturating,
      pool: onePool,
      temporal,
      wakeDispatcher: () => undefined,
      logger: testLogger(saturating),
    });
    const held = await onePool.connect();
    const account = unique('acc');
    try {
      const waiting = post(open, event({ account, message: 'waiting' }), { to: saturated });
      await expect.poll(() => onePool.waitingCount, { timeout: 10_000 }).toBe(1);

      const refusedBody = event({ account, message: 'refused' });
      const refused = await post(open, refusedBody, { to: saturated });
      expect(refused.statusCode).toBe(503);
      expect(refused.headers['retry-after']).toBe('1');
      expect(refused.json()).toEqual({ error: { code: 'overloaded', message: 'too many events are waiting to be stored; retry later' } });

      held.release();
      expect((await waiting).statusCode).toBe(202);
      expect((await messagesOf(open, account)).map((m) => m.message_id)).toEqual(['waiting']);
      expect((await eventsOf(open)).map((e) => e.event_id)).not.toContain(refusedBody.id);
      const overloaded = (await webhooksTotal.get()).values.find((v) => v.labels.outcome === 'overloaded' && v.labels.status === '503');
      expect(overloaded?.value).toBeGreaterThanOrEqual(1);
    } finally {
      await saturated.close();
      await onePool.end();
    }
  });
});

describe('OpenAPI', () => {
  it('documents the webhook route with its responses', async () => {
    const response = await app.inject({ method: 'GET', url: '/docs/json' });
    const spec = response.json<{ paths: Record<string, { post?: { responses: Record<string, unknown> } }> }>();
    const route = spec.paths['/webhooks/unifyport/{workspace}']?.post;
    expect(Object.keys(route?.responses ?? {}).sort()).toEqual(['202', '400', '401', '404', '413', '415', '500', '503']);
  });
});
