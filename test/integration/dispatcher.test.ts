import { Client, Connection, type WorkflowClientInterceptor } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Pool } from '../../src/db/pool.js';
import { createDispatcher, type Dispatcher, type DispatcherOptions } from '../../src/dispatcher/dispatcher.js';
import { buildApp, type App } from '../../src/process/app.js';
import { childrenSignalledTotal, outboxDepth, signalsSentTotal } from '../../src/common/metrics.js';
import { searchAttributes } from '../../workflows/definitions.js';
import type { ChildrenBatch } from '../../workflows/types.js';
import { freshDatabase, testClient, testConfig, testLogger, testPool } from '../harness/env.js';
import { recentSeconds, telegramHeaders, telegramMessage, telegramUpdate, unifyportEvent } from '../harness/events.js';
import { unique } from '../harness/random.js';
import { messages, outbox } from '../harness/rows.js';
import { devServer, type TemporalServer } from '../harness/servers/temporal.js';

const prefix = unique('disp');
const workspaces = [
  'coalesce',
  'standalone',
  'listen',
  'wake',
  'crash',
  'down',
  'two',
  'refused',
  'stop',
  'serial',
  'interval',
  'burst',
  'held',
  'telegram',
  'along',
] as const;
const ws = Object.fromEntries(workspaces.map((name) => [name, `${prefix}-${name}`])) as Record<(typeof workspaces)[number], string>;

let config = testConfig();
const logger = testLogger(config);

let pool: Pool;
let client: Client;
let app: App;
let wake: () => void = () => undefined;
const dispatchers: Dispatcher[] = [];
const extraClients: Client[] = [];

beforeAll(async () => {
  // A database of this file's own: its dispatchers drain what its tests stored and nothing else.
  config = testConfig({
    DATABASE_URL: await freshDatabase(),
    WORKSPACE_SECRETS: JSON.stringify(Object.fromEntries(Object.values(ws).map((w) => [w, []]))),
    TELEGRAM_BOTS: JSON.stringify({
      [ws.telegram]: { bot: { token: '7000000001:AAH-dispatcher-test-token', secretToken: 'dispatcher-secret' } },
    }),
  });
  pool = testPool(config);
  client = await testClient(config);
  app = await buildApp({ config, pool, temporal: client, wakeDispatcher: () => wake(), logger });
});

afterEach(async () => {
  wake = () => undefined;
  await Promise.all(dispatchers.splice(0).map((d) => d.stop()));
  // What a test left queued (a refused signal, a stopped dispatcher) is not the next test's to drain.
  await pool.query('DELETE FROM outbox');
});

afterAll(async () => {
  await app.close();
  await Promise.all(extraClients.map((c) => c.connection.close()));
  await client.connection.close();
  await pool.end();
});

function dispatcher(overrides: Partial<DispatcherOptions> = {}): Dispatcher {
  const created = createDispatcher({
    pool,
    client,
    taskQueue: config.temporal.taskQueue,
    timings: config.album,
    logger,
    ...overrides,
  });
  dispatchers.push(created);
  return created;
}

interface ChildSpec {
  message: string;
  album?: Record<string, unknown>;
  account?: string;
  conversation?: string;
  text?: string;
  attachments?: unknown[];
}

async function postChild(workspace: string, spec: ChildSpec) {
  const response = await app.inject({
    method: 'POST',
    url: `/webhooks/unifyport/${workspace}`,
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify(
      unifyportEvent({
        provider: 'telegram',
        accountId: spec.account ?? 'acc',
        conversationId: spec.conversation ?? 'conv',
        message: {
          id: spec.message,
          text: spec.text,
          sent_at: '2026-09-29T10:00:00Z',
          attachments: spec.attachments ?? [{ type: 'image', url: `https://media.example/${spec.message}.jpg`, mime_type: 'image/jpeg' }],
          album: spec.album,
        },
      }),
    ),
  });
  expect(response.statusCode).toBe(202);
  return response.json<{ childKey: string; albumKey: string | null }>();
}

const albumId = (workspace: string, album: string, conversation = 'conv', account = 'acc') =>
  `album:${workspace}:telegram:${account}:${conversation}:${album}`;
const messageId = (workspace: string, message: string) => `message:${workspace}:telegram:acc:conv:${message}`;

/** Every `children` signal in the workflow's history, decoded. */
async function signalsOf(temporal: Client, workflowId: string): Promise<ChildrenBatch[]> {
  const history = await temporal.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).flatMap((event) => {
    const attributes = event.workflowExecutionSignaledEventAttributes;
    if (!attributes || attributes.signalName !== 'children') return [];
    return [defaultPayloadConverter.fromPayload<ChildrenBatch>(attributes.input!.payloads![0]!)];
  });
}

async function signalledIds(temporal: Client, workflowId: string): Promise<string[]> {
  try {
    return (await signalsOf(temporal, workflowId)).flatMap((batch) => batch.children.map((c) => c.messageId));
  } catch (err) {
    if ((err as { code?: number }).code === grpcNotFound) return [];
    throw err;
  }
}

function outboxRows(workspace: string) {
  return outbox.read(pool, { workspace }, ['id', 'attempts', 'last_error', 'available_at']);
}

const grpcNotFound = 5;
const eventually = { timeout: 45_000, interval: 200 };

describe('dispatcher', () => {
  it('coalesces the pending children of one album into one signalWithStart built from the committed rows', async () => {
    const w = ws.coalesce;
    const sentBefore = (await signalsSentTotal.get()).values[0]?.value ?? 0;
    const childrenBefore = (await childrenSignalledTotal.get()).values[0]?.value ?? 0;
    await postChild(w, { message: 'm2', album: { id: 'a1', index: 2, total: 3 }, text: 'third' });
    await postChild(w, { message: 'm0', album: { id: 'a1', index: 0, total: '3' }, attachments: [{ type: 'video' }] });
    await postChild(w, { message: 'm1', album: { id: 'a1', index: 1, total: 3 } });
    expect(await outboxRows(w)).toHaveLength(3);

    const delivered = await dispatcher().drainOnce();

    expect(delivered).toBe(3);
    expect(await outboxRows(w)).toEqual([]);
    const workflowId = albumId(w, 'a1');
    const signals = await signalsOf(client, workflowId);
    expect(signals).toHaveLength(1);
    const children = signals[0]!.children;
    expect(children.map((c) => c.messageId).sort()).toEqual(['m0', 'm1', 'm2']);

    const rows = await messages.read(pool, { workspace: w }, ['message_id', 'first_received_at']);
    const receivedAt = new Map(rows.map((r) => [r.message_id, r.first_received_at.toISOString()]));
    expect(children.find((c) => c.messageId === 'm2')).toEqual({
      messageId: 'm2',
      index: 2,
      total: 3,
      metadataInvalid: false,
      albumMeta: { index: 2, total: 3 },
      caption: 'third',
      sentAt: '2026-09-29T10:00:00.000Z',
      receivedAt: receivedAt.get('m2'),
      attachments: [{ position: 0, url: 'https://media.example/m2.jpg', mimeType: 'image/jpeg', telegramFileUniqueId: null }],
      history: [],
    });
    expect(children.find((c) => c.messageId === 'm0')).toMatchObject({
      index: 0,
      total: null,
      metadataInvalid: true,
      albumMeta: { index: 0, total: '3' },
      attachments: [{ position: 0, url: null, mimeType: null }],
    });

    const handle = client.workflow.getHandle(workflowId);
    const description = await handle.describe();
    expect(description.type).toBe('albumWorkflow');
    expect(description.taskQueue).toBe(config.temporal.taskQueue);
    expect(description.typedSearchAttributes.get(searchAttributes.workspace)).toBe(w);
    expect(description.typedSearchAttributes.get(searchAttributes.provider)).toBe('telegram');
    expect(description.typedSearchAttributes.get(searchAttributes.state)).toBe('collecting');
    const history = await handle.fetchHistory();
    const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
    expect(defaultPayloadConverter.fromPayload(started!.input!.payloads![0]!)).toEqual({
      key: { workspace: w, provider: 'telegram', accountId: 'acc', conversationId: 'conv', albumId: 'a1' },
      timings: config.album,
      // A UnifyPort album, whatever its provider: the profile comes with the route.
      profile: { maxChildren: null, childOrder: 'index' },
    });

    expect((await signalsSentTotal.get()).values[0]?.value).toBe(sentBefore + 1);
    expect((await childrenSignalledTotal.get()).values[0]?.value).toBe(childrenBefore + 3);
    expect((await outboxDepth.get()).values[0]?.value).toBeGreaterThanOrEqual(0);
  });

  it('brings a burst of children into one album in a few coalesced signals, not one per commit, and loses no child', async () => {
    const w = ws.burst;
    const d = dispatcher({ minSignalIntervalMs: 500 });
    wake = () => d.wake();
    d.start();
    const children = 120;
    for (let i = 0; i < children; i++) {
      await postChild(w, { message: `m${i}`, album: { id: 'big' }, attachments: [] });
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const signals = await vi.waitFor(async () => {
      const batches = await signalsOf(client, albumId(w, 'big'));
      expect(new Set(batches.flatMap((batch) => batch.children.map((c) => c.messageId))).size).toBe(children);
      return batches;
    }, eventually);
    await vi.waitFor(async () => expect(await outboxRows(w)).toEqual([]), eventually);
    // The commits span at least 1.2 s; one signal per 500 ms, plus the first.
    expect(signals.length).toBeLessThan(children / 4);
    await client.workflow
      .getHandle(albumId(w, 'big'))
      .terminate('test done')
      .catch(() => undefined);
  });

  it("holds an album's children back for the interval, but never the one that brings it to its total, which takes them along", async () => {
    const w = ws.interval;
    const d = dispatcher({ minSignalIntervalMs: 60_000 });
    await postChild(w, { message: 'c1', album: { id: 'complete', total: 2 } });
    await postChild(w, { message: 'o1', album: { id: 'open', total: 3 } });
    await d.drainOnce();
    expect(await signalledIds(client, albumId(w, 'complete'))).toEqual([]);
    await postChild(w, { message: 'c2', album: { id: 'complete', total: 2 } });
    await postChild(w, { message: 'o2', album: { id: 'open', total: 3 } });
    await d.drainOnce();

    const batches = (await signalsOf(client, albumId(w, 'complete'))).map((batch) => batch.children.map((c) => c.messageId));
    expect(batches).toEqual([['c1', 'c2']]);
    expect(await signalledIds(client, albumId(w, 'open'))).toEqual([]);
    const held = await outboxRows(w);
    expect(held).toHaveLength(2);
    for (const row of held) expect(row.available_at.getTime() - Date.now()).toBeGreaterThan(30_000);
    await client.workflow
      .getHandle(albumId(w, 'complete'))
      .terminate('test done')
      .catch(() => undefined);
  });

  it("sends an album's children held back in earlier passes with the first of them that is due", async () => {
    const w = ws.along;
    const d = dispatcher({ minSignalIntervalMs: 1_000 });
    await postChild(w, { message: 'a1', album: { id: 'a' } });
    await d.drainOnce();
    await new Promise((resolve) => setTimeout(resolve, 300));
    await postChild(w, { message: 'a2', album: { id: 'a' } });
    await d.drainOnce();
    expect(await outboxRows(w)).toHaveLength(2);
    // a1 is due first (its row was held back an interval after its commit), a2 later: one signal takes both.
    await vi.waitFor(async () => {
      await d.drainOnce();
      expect(await signalledIds(client, albumId(w, 'a'))).not.toEqual([]);
    }, eventually);
    expect((await signalsOf(client, albumId(w, 'a'))).map((batch) => batch.children.map((c) => c.messageId))).toEqual([['a1', 'a2']]);
    expect(await outboxRows(w)).toEqual([]);
    await client.workflow
      .getHandle(albumId(w, 'a'))
      .terminate('test done')
      .catch(() => undefined);
  });

  it('never holds back the tenth child of a Telegram album (album_full)', async () => {
    const w = ws.telegram;
    const d = dispatcher({ minSignalIntervalMs: 60_000 });
    const post = async (messageId: number, group: string) => {
      const update = telegramUpdate(
        messageId,
        telegramMessage({
          messageId,
          chatId: 42,
          date: recentSeconds(1790676000),
          mediaGroupId: group,
          photo: { fileId: `f${messageId}`, uniqueId: `u${messageId}`, width: 9, height: 9 },
        }),
      );
      const response = await app.inject({
        method: 'POST',
        url: `/webhooks/telegram/${w}/bot`,
        headers: telegramHeaders('dispatcher-secret'),
        payload: JSON.stringify(update),
      });
      expect(response.statusCode).toBe(200);
    };
    const telegramAlbum = (group: string) => `album:${w}:telegram:7000000001:42:${group}`;
    for (let id = 1; id <= 8; id++) await post(id, 'full');
    await post(100, 'open');
    await d.drainOnce();
    await post(9, 'full');
    await post(10, 'full');
    await post(101, 'open');
    await d.drainOnce();

    // The tenth child takes the nine held back before it along; the open album's children wait.
    const batches = async (workflowId: string) => (await signalsOf(client, workflowId)).map((batch) => batch.children.length);
    expect(await batches(telegramAlbum('full'))).toEqual([10]);
    expect(await signalledIds(client, telegramAlbum('open'))).toEqual([]);
    expect(await outboxRows(w)).toHaveLength(2);
    await Promise.all(
      ['full', 'open'].map((group) =>
        client.workflow
          .getHandle(telegramAlbum(group))
          .terminate('test done')
          .catch(() => undefined),
      ),
    );
  });

  it('sends held-back children when their interval ends, even after passes that found nothing to send', async () => {
    const w = ws.held;
    const d = dispatcher({ minSignalIntervalMs: 3_000, sweepIntervalMs: 600_000 });
    wake = () => d.wake();
    d.start();
    await postChild(w, { message: 'h1', album: { id: 'a' } });
    await vi.waitFor(async () => expect(await signalledIds(client, albumId(w, 'a'))).toEqual(['h1']), eventually);

    await postChild(w, { message: 'h2', album: { id: 'a' } });
    // A pass has held h2 back: its row is due at the interval's end.
    await vi.waitFor(async () => {
      const rows = await outboxRows(w);
      expect(rows).toHaveLength(1);
      expect(rows[0]!.available_at.getTime()).toBeGreaterThan(Date.now());
    }, eventually);
    // Passes woken by other commits (or their NOTIFY echo) claim nothing while h2 waits out the interval.
    await d.drainOnce();
    await d.drainOnce();
    expect(await signalledIds(client, albumId(w, 'a'))).toEqual(['h1']);
    // Only the interval's end can send h2 now: the sweep is ten minutes away.
    await vi.waitFor(async () => expect(await signalledIds(client, albumId(w, 'a'))).toEqual(['h1', 'h2']), {
      timeout: 15_000,
      interval: 100,
    });
    await client.workflow
      .getHandle(albumId(w, 'a'))
      .terminate('test done')
      .catch(() => undefined);
  });

  it('sends a standalone message to its own message: workflow', async () => {
    const w = ws.standalone;
    await postChild(w, { message: 'solo', album: { index: 0, total: 2 } });
    await postChild(w, { message: 'album-child', album: { id: 'a' } });

    // Interval 0: every child at once (the interval has tests of its own).
    expect(await dispatcher({ minSignalIntervalMs: 0 }).drainOnce()).toBe(2);

    const solo = client.workflow.getHandle(messageId(w, 'solo'));
    expect((await solo.describe()).type).toBe('messageWorkflow');
    expect(await signalledIds(client, messageId(w, 'solo'))).toEqual(['solo']);
    const started = (await solo.fetchHistory()).events?.[0]?.workflowExecutionStartedEventAttributes;
    expect(defaultPayloadConverter.fromPayload(started!.input!.payloads![0]!)).toEqual({
      key: { workspace: w, provider: 'telegram', accountId: 'acc', conversationId: 'conv', messageId: 'solo' },
      timings: config.album,
    });
    expect(await signalledIds(client, albumId(w, 'a'))).toEqual(['album-child']);
  });

  it('wakes at once when this process commits a child', async () => {
    const w = ws.wake;
    const d = dispatcher({ sweepIntervalMs: 600_000 });
    wake = () => d.wake();
    d.start();
    await d.drainOnce();

    await postChild(w, { message: 'woken', album: { id: 'a' } });
    await vi.waitFor(async () => expect(await signalledIds(client, albumId(w, 'a'))).toEqual(['woken']), eventually);
    expect(await outboxRows(w)).toEqual([]);
  });

  it('wakes on the PostgreSQL notification of a commit made by another process', async () => {
    const w = ws.listen;
    const d = dispatcher({ sweepIntervalMs: 600_000 });
    d.start();
    await d.drainOnce();

    await postChild(w, { message: 'notified', album: { id: 'a' } });
    await vi.waitFor(async () => expect(await signalledIds(client, albumId(w, 'a'))).toEqual(['notified']), eventually);
  });

  it('delivers children committed while no dispatcher could reach Temporal once one can', async () => {
    const w = ws.crash;
    await postChild(w, { message: 'c1', album: { id: 'a' } });
    await postChild(w, { message: 'c2' });

    const deadClient = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }), namespace: config.temporal.namespace });
    extraClients.push(deadClient);
    const stranded = dispatcher({ client: deadClient, signalTimeoutMs: 1_500 });
    expect(await stranded.drainOnce()).toBe(0);
    const rows = await outboxRows(w);
    expect(rows).toHaveLength(2);
    expect(rows.some((r) => r.attempts === 1 && r.last_error !== null)).toBe(true);
    expect(await signalledIds(client, albumId(w, 'a'))).toEqual([]);

    dispatcher().start();
    await vi.waitFor(async () => {
      expect(await signalledIds(client, albumId(w, 'a'))).toEqual(['c1']);
      expect(await signalledIds(client, messageId(w, 'c2'))).toEqual(['c2']);
      expect(await outboxRows(w)).toEqual([]);
    }, eventually);
  });

  it('lets one workflow refuse its signal without holding back the others, and retries it later', async () => {
    const w = ws.refused;
    await postChild(w, { message: 'ok-1', album: { id: 'fine' } });
    await postChild(w, { message: 'bad-1', album: { id: 'refused' } });
    await postChild(w, { message: 'ok-2', album: { id: 'fine' } });

    const refusedId = albumId(w, 'refused');
    const refusing: WorkflowClientInterceptor = {
      async signalWithStart(input, next) {
        if (input.options.workflowId === refusedId) throw new Error('refused for this test');
        return next(input);
      },
    };
    const picky = new Client({
      connection: client.connection,
      namespace: config.temporal.namespace,
      interceptors: { workflow: [refusing] },
    });
    expect(await dispatcher({ client: picky, sweepIntervalMs: 300, minSignalIntervalMs: 0 }).drainOnce()).toBe(2);

    expect((await signalledIds(client, albumId(w, 'fine'))).sort()).toEqual(['ok-1', 'ok-2']);
    const [left, ...others] = await outboxRows(w);
    expect(others).toEqual([]);
    expect(left).toMatchObject({ attempts: 1, last_error: 'refused for this test' });

    const retry = dispatcher({ sweepIntervalMs: 300, minSignalIntervalMs: 0 });
    retry.start();
    await vi.waitFor(async () => {
      expect(await signalledIds(client, refusedId)).toEqual(['bad-1']);
      expect(await outboxRows(w)).toEqual([]);
    }, eventually);
  });

  it('shares the outbox between two dispatchers: every child delivered, every row deleted once', async () => {
    const w = ws.two;
    const albums = ['a', 'b', 'c', 'd'];
    const expected = new Map<string, string[]>();
    const posts: Promise<unknown>[] = [];
    for (let i = 0; i < 24; i++) {
      const album = albums[i % albums.length]!;
      const standalone = i % 6 === 5;
      const message = `m${i}`;
      const workflowId = standalone ? messageId(w, message) : albumId(w, album);
      expected.set(workflowId, [...(expected.get(workflowId) ?? []), message]);
      posts.push(postChild(w, { message, album: standalone ? undefined : { id: album, index: i } }));
    }
    await Promise.all(posts);

    const first = dispatcher({ batchSize: 4, concurrency: 2 });
    const second = dispatcher({ batchSize: 4, concurrency: 2 });
    let delivered = 0;
    while ((await outboxRows(w)).length > 0) {
      const counts = await Promise.all([first.drainOnce(), second.drainOnce(), first.drainOnce(), second.drainOnce()]);
      delivered += counts.reduce((a, b) => a + b, 0);
    }

    expect(delivered).toBe(24);
    for (const [workflowId, messages] of expected) {
      expect((await signalledIds(client, workflowId)).sort()).toEqual([...messages].sort());
    }
  });

  it('coalesces wakes: never two passes at once in one process', async () => {
    const w = ws.serial;
    for (let i = 0; i < 5; i++) await postChild(w, { message: `s${i}`, album: { id: 'a' } });
    const serialPool = testPool(config, 4);
    let checkedOut = 0;
    let maxCheckedOut = 0;
    serialPool.on('acquire', () => {
      checkedOut += 1;
      maxCheckedOut = Math.max(maxCheckedOut, checkedOut);
    });
    serialPool.on('release', () => {
      checkedOut -= 1;
    });
    try {
      const d = dispatcher({ pool: serialPool, minSignalIntervalMs: 0 });
      const results = await Promise.all(Array.from({ length: 8 }, () => d.drainOnce()));
      expect(results.reduce((a, b) => a + b, 0)).toBe(5);
      expect(results[0]).toBe(5);
      expect(maxCheckedOut).toBe(1);
      expect(await signalsOf(client, albumId(w, 'a'))).toHaveLength(1);
    } finally {
      await Promise.all(dispatchers.splice(0).map((d) => d.stop()));
      await serialPool.end();
    }
  });

  it('finishes the pass in flight when stopped', async () => {
    const w = ws.stop;
    await postChild(w, { message: 'last', album: { id: 'a' } });
    const d = dispatcher({ minSignalIntervalMs: 0 });
    const pass = d.drainOnce();
    await d.stop();
    expect(await pass).toBe(1);
    expect(await outboxRows(w)).toEqual([]);
    expect(await d.drainOnce()).toBe(0);
  });
});

describe('dispatcher while Temporal is down', () => {
  let server: TemporalServer | undefined;

  afterAll(async () => {
    await server?.stop();
  });

  it('keeps accepting webhooks into the outbox and delivers everything once Temporal is back', async () => {
    const w = ws.down;
    server = await devServer();
    await server.start();
    const connection = Connection.lazy({ address: server.address });
    const ownClient = new Client({ connection, namespace: 'default' });
    extraClients.push(ownClient);
    const d = dispatcher({ client: ownClient, sweepIntervalMs: 200, maxBackoffMs: 1_000, signalTimeoutMs: 2_000 });
    wake = () => d.wake();
    d.start();

    await postChild(w, { message: 'before', album: { id: 'a' } });
    await vi.waitFor(async () => expect(await signalledIds(ownClient, albumId(w, 'a'))).toEqual(['before']), eventually);

    await server.stop();
    const during = ['d1', 'd2', 'd3'];
    for (const message of during) await postChild(w, { message, album: { id: 'a' } });
    await postChild(w, { message: 'd-solo' });
    expect((await outboxRows(w)).length).toBe(4);
    await vi.waitFor(async () => expect((await outboxRows(w)).some((r) => r.attempts > 0)).toBe(true), eventually);
    expect((await outboxRows(w)).length).toBe(4);

    await server.start();
    await vi.waitFor(
      async () => {
        expect(await outboxRows(w)).toEqual([]);
        expect((await signalledIds(ownClient, albumId(w, 'a'))).sort()).toEqual(during);
        expect(await signalledIds(ownClient, messageId(w, 'd-solo'))).toEqual(['d-solo']);
      },
      { timeout: 90_000, interval: 300 },
    );
  }, 180_000);
});
