import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIngestBatcher, IngestSaturatedError, type IngestBatcher } from '../../src/db/ingest-batcher.js';
import {
  ingestChild,
  isDataException,
  storeDeliveries,
  type ChildDelivery,
  type Delivery,
  type IngestResult,
} from '../../src/db/ingest.js';
import type { Pool } from '../../src/db/pool.js';
import { withTransaction } from '../../src/db/transaction.js';
import { parseEvent } from '../../src/platforms/unifyport/parse.js';
import { testConfig, testPool } from '../harness/env.js';
import { unifyportEvent } from '../harness/events.js';
import { unique } from '../harness/random.js';
import { albums as albumRows, attachments, deliveredColumns, events, messages } from '../harness/rows.js';

const config = testConfig();
let pool: Pool;

beforeAll(() => {
  pool = testPool(config, 10);
});

afterAll(async () => {
  await pool.end();
});

interface ChildOptions {
  eventId?: string;
  message: string;
  album?: Record<string, unknown>;
  caption?: string;
  attachments?: Array<Record<string, unknown>>;
  type?: string;
}

function body(options: ChildOptions): string {
  return JSON.stringify(
    unifyportEvent({
      id: options.eventId,
      type: options.type,
      provider: 'telegram',
      accountId: 'acc',
      conversationId: 'conv',
      message: { id: options.message, attachments: options.attachments ?? [], album: options.album, text: options.caption },
    }),
  );
}

function delivery(workspace: string, options: ChildOptions): Delivery {
  const raw = body(options);
  const parsed = parseEvent(workspace, Buffer.from(raw));
  if (parsed.kind === 'child') return { source: 'unifyport', eventId: parsed.eventId, type: parsed.type, raw, child: parsed.child };
  if (parsed.kind === 'ignored') return { workspace, source: 'unifyport', eventId: parsed.eventId, type: parsed.type, raw };
  throw new Error(`not storable: ${parsed.message}`);
}

function child(workspace: string, options: ChildOptions): ChildDelivery {
  const parsed = delivery(workspace, options);
  if (!('child' in parsed)) throw new Error('not a child event');
  return parsed;
}

interface Calls {
  wakes: number;
  warnings: unknown[];
}

function batcher(options: { maxRows: number; maxWaitMs?: number; maxPending?: number; concurrentBatches?: number; pool?: Pool }): {
  writer: IngestBatcher;
  calls: Calls;
} {
  const calls: Calls = { wakes: 0, warnings: [] };
  const writer = createIngestBatcher({
    pool: options.pool ?? pool,
    batchMaxRows: options.maxRows,
    batchMaxWaitMs: options.maxWaitMs ?? 60_000,
    maxPending: options.maxPending ?? 1000,
    concurrentBatches: options.concurrentBatches ?? 1,
    onQueued: () => void calls.wakes++,
    logger: { warn: (details: unknown) => void calls.warnings.push(details) } as never,
  });
  return { writer, calls };
}

function messageRows(workspace: string) {
  return messages.read(pool, { workspace }, ['message_id', 'delivery_count', 'caption', 'txid', 'outbox'], { orderBy: ['message_id'] });
}

async function eventCounts(workspace: string): Promise<Record<string, number>> {
  const rows = await events.read(pool, { workspace }, ['event_id', 'delivery_count']);
  return Object.fromEntries(rows.map((row) => [row.event_id, row.delivery_count]));
}

describe('the ingest batcher', () => {
  it('writes concurrent deliveries in one transaction and wakes the dispatcher once', async () => {
    const workspace = unique('batch');
    const { writer, calls } = batcher({ maxRows: 4 });
    const results = await Promise.all(
      ['m1', 'm2', 'm3', 'm4'].map((message) => writer.storeChild(child(workspace, { message, album: { id: 'alb' } }))),
    );
    await writer.close();

    expect(results.map((r) => r.duplicate)).toEqual([false, false, false, false]);
    const rows = await messageRows(workspace);
    expect(rows.map((r) => [r.message_id, r.delivery_count, r.outbox])).toEqual([
      ['m1', 1, 1],
      ['m2', 1, 1],
      ['m3', 1, 1],
      ['m4', 1, 1],
    ]);
    expect(new Set(rows.map((r) => r.txid)).size).toBe(1);
    expect(calls.wakes).toBe(1);
    expect(calls.warnings).toEqual([]);
  });

  it('touches the existing albums of a batch with the time of its transaction', async () => {
    const workspace = unique('batch');
    const first = batcher({ maxRows: 2 });
    await Promise.all(
      ['x', 'y'].map((album) => first.writer.storeChild(child(workspace, { message: `${album}-1`, album: { id: album } }))),
    );
    const second = batcher({ maxRows: 3 });
    await Promise.all(
      ['x', 'y', 'z'].map((album) => second.writer.storeChild(child(workspace, { message: `${album}-2`, album: { id: album } }))),
    );
    await Promise.all([first.writer.close(), second.writer.close()]);

    const { rows } = await pool.query<{ album_id: string; touched_by_last: boolean }>(
      `SELECT al.album_id,
              al.last_received_at = (SELECT m.first_received_at FROM messages m WHERE m.album_pk = al.id AND m.message_id LIKE '%-2')
                AS touched_by_last
         FROM albums al WHERE al.workspace = $1 ORDER BY al.album_id`,
      [workspace],
    );
    expect(rows.map((r) => [r.album_id, r.touched_by_last])).toEqual([
      ['x', true],
      ['y', true],
      ['z', true],
    ]);
  });

  it('merges deliveries of one child inside a batch: one row, queued once, the first is new, the others are duplicates', async () => {
    const workspace = unique('batch');
    const { writer, calls } = batcher({ maxRows: 5 });
    const first = child(workspace, { eventId: 'evt-a', message: 'a', attachments: [{ type: 'image' }] });
    const deliveries: Delivery[] = [
      first,
      first,
      child(workspace, {
        eventId: 'evt-a2',
        message: 'a',
        caption: 'late caption',
        attachments: [{ type: 'image', url: 'https://media.example/a.jpg' }],
      }),
      child(workspace, { eventId: 'evt-b', message: 'b' }),
      delivery(workspace, { eventId: 'evt-a', message: 'a', type: 'message.updated' }),
    ];
    const results = await Promise.all(
      deliveries.map((d) => ('child' in d ? writer.storeChild(d) : writer.recordEvent(d).then(() => null))),
    );
    await writer.close();

    expect(results.map((r) => r?.duplicate ?? null)).toEqual([false, true, true, false, null]);
    expect(results[0]).toEqual({ duplicate: false, erased: false, childKey: `${workspace}:telegram:acc:conv:a`, albumKey: null });
    const rows = await messageRows(workspace);
    expect(rows.map((r) => [r.message_id, r.delivery_count, r.caption, r.outbox])).toEqual([
      ['a', 3, 'late caption', 1],
      ['b', 1, null, 1],
    ]);
    expect(new Set(rows.map((r) => r.txid)).size).toBe(1);
    expect(await attachments.read(pool, { workspace, messageId: 'a' }, ['position', 'url', 'status'])).toEqual([
      { position: 0, url: 'https://media.example/a.jpg', status: 'pending' },
    ]);
    expect(await eventCounts(workspace)).toEqual({ 'evt-a': 3, 'evt-a2': 1, 'evt-b': 1 });
    expect(calls.wakes).toBe(1);
  });

  it('fails only the poisoned delivery of a batch, writing the others in transactions of their own', async () => {
    const workspace = unique('batch');
    const { writer, calls } = batcher({ maxRows: 3 });
    // The parsers refuse such text before it reaches a batch; the batch must still survive one PostgreSQL refuses.
    const poisoned = child(workspace, { eventId: 'evt-poisoned', message: 'poisoned' });
    poisoned.child.caption = 'nul \u0000 here';
    const outcomes = await Promise.allSettled([
      writer.storeChild(child(workspace, { eventId: 'evt-good-1', message: 'good-1' })),
      writer.storeChild(poisoned),
      writer.storeChild(child(workspace, { eventId: 'evt-good-2', message: 'good-2' })),
    ]);
    await writer.close();

    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(isDataException((outcomes[1] as PromiseRejectedResult).reason)).toBe(true);
    const rows = await messageRows(workspace);
    expect(rows.map((r) => [r.message_id, r.delivery_count, r.outbox])).toEqual([
      ['good-1', 1, 1],
      ['good-2', 1, 1],
    ]);
    expect(new Set(rows.map((r) => r.txid)).size).toBe(2);
    expect(await eventCounts(workspace)).toEqual({ 'evt-good-1': 1, 'evt-good-2': 1 });
    expect(calls.warnings).toHaveLength(1);
    expect(calls.wakes).toBe(1);
  });

  it('refuses deliveries beyond maxPending while the database is held, and stores the ones it took', async () => {
    const workspace = unique('batch');
    const onePool = testPool(config, 1);
    const held = await onePool.connect();
    const { writer, calls } = batcher({ maxRows: 10, maxWaitMs: 0, maxPending: 2, pool: onePool });
    try {
      const taken = [
        writer.storeChild(child(workspace, { message: 'taken-1' })),
        writer.storeChild(child(workspace, { message: 'taken-2' })),
      ];
      expect(writer.pending).toBe(2);
      await expect(writer.storeChild(child(workspace, { message: 'refused' }))).rejects.toBeInstanceOf(IngestSaturatedError);
      expect(writer.pending).toBe(2);

      held.release();
      expect((await Promise.all(taken)).map((r) => r.duplicate)).toEqual([false, false]);
      expect(writer.pending).toBe(0);
      expect((await messageRows(workspace)).map((r) => r.message_id)).toEqual(['taken-1', 'taken-2']);
      await writer.storeChild(child(workspace, { message: 'after' }));
    } finally {
      await writer.close();
      await onePool.end();
    }
    expect((await messageRows(workspace)).map((r) => r.message_id)).toEqual(['after', 'taken-1', 'taken-2']);
    expect(calls.wakes).toBe(3);
  });

  it('writes what it gathered when closed, then refuses new deliveries', async () => {
    const workspace = unique('batch');
    const { writer, calls } = batcher({ maxRows: 100 });
    const gathered = writer.storeChild(child(workspace, { message: 'gathered' }));
    await writer.close();
    expect(await gathered).toMatchObject({ duplicate: false });
    expect(calls.wakes).toBe(1);
    await expect(writer.storeChild(child(workspace, { message: 'late' }))).rejects.toBeInstanceOf(IngestSaturatedError);
  });

  it('keeps one album row per album, without deadlocks, while concurrent batches of two ingress processes race on new and existing albums', async () => {
    const workspace = unique('batch');
    const processes = [
      batcher({ maxRows: 16, maxWaitMs: 1, concurrentBatches: 2 }),
      batcher({ maxRows: 16, maxWaitMs: 1, concurrentBatches: 2 }),
    ];
    const writers = processes.map((p) => p.writer);
    const albums = Array.from({ length: 12 }, (_, a) => `alb-${a}`);
    const results = await Promise.all(
      albums.flatMap((album, a) =>
        Array.from({ length: 12 }, (_, i) =>
          writers[(a + i) % 2]!.storeChild(child(workspace, { message: `${album}-m${i % 6}`, album: { id: album, index: i % 6 } })),
        ),
      ),
    );
    await Promise.all(writers.map((w) => w.close()));

    expect(results.filter((r) => !r.duplicate)).toHaveLength(albums.length * 6);
    const rows = await albumRows.read(pool, { workspace }, ['album_id', 'children', 'deliveries'], { orderBy: ['album_id'] });
    expect(rows).toEqual([...albums].sort().map((album_id) => ({ album_id, children: 6, deliveries: 12 })));
    expect(processes.flatMap((p) => p.calls.warnings)).toEqual([]);
  });
});

describe('storeDeliveries', () => {
  const messageIds = ['m1', 'm2', 'm3'];
  const eventIds = ['e1', 'e2', 'e3', 'e4'];
  const deliveryOptions = fc.record(
    {
      eventId: fc.constantFrom(...eventIds),
      message: fc.constantFrom(...messageIds),
      type: fc.constantFrom('message.received', 'message.received', 'message.updated'),
      album: fc.option(fc.record({ id: fc.constantFrom('x', 'y'), index: fc.constantFrom(0, 1, '1', -1) }), { nil: undefined }),
      caption: fc.option(fc.constantFrom('one', 'two'), { nil: undefined }),
      attachments: fc.array(
        fc.record({
          type: fc.constantFrom('image', 'video'),
          url: fc.option(fc.constantFrom('https://m.example/1', 'https://m.example/2'), { nil: undefined }),
        }),
        { maxLength: 2 },
      ),
    },
    { requiredKeys: ['eventId', 'message', 'type', 'attachments'] },
  );

  async function snapshot(workspace: string) {
    const columns = ['message_id', 'album_id', ...deliveredColumns, 'outbox', 'attachments'] as const;
    return {
      messages: await messages.read(pool, { workspace }, columns, { orderBy: ['message_id'] }),
      events: await events.read(pool, { workspace }, ['event_id', 'type', 'delivery_count', 'raw'], { orderBy: ['event_id'] }),
      albums: await albumRows.read(pool, { workspace }, ['album_id'], { orderBy: ['album_id'] }),
    };
  }

  it('stores a batch as the same deliveries stored one by one, each changed child queued once', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(deliveryOptions, { minLength: 1, maxLength: 8 }), async (options) => {
        const oneByOne = unique('seq');
        const batched = unique('batch');
        const sequentialResults: Array<IngestResult | null> = [];
        for (const o of options) {
          const d = delivery(oneByOne, o);
          if ('child' in d) sequentialResults.push(await ingestChild(pool, d));
          else sequentialResults.push((await withTransaction(pool, (client) => storeDeliveries(client, [d]))).results[0]!);
        }
        const batch = await withTransaction(pool, (client) =>
          storeDeliveries(
            client,
            options.map((o) => delivery(batched, o)),
          ),
        );

        const rename = (value: unknown) => JSON.parse(JSON.stringify(value).replaceAll(batched, oneByOne)) as unknown;
        expect(rename(batch.results)).toEqual(sequentialResults);
        // One commit queues a changed child once (the dispatcher reads it as committed); one commit
        // per delivery may queue it once per delivery that changed it.
        const batchedState = await snapshot(batched);
        expect(batchedState.messages.filter((m) => m.outbox > 1)).toEqual([]);
        const queuedOrNot = (state: typeof batchedState) => ({
          ...state,
          messages: state.messages.map(({ outbox, ...m }) => ({ ...m, queued: outbox > 0 })),
        });
        expect(rename(queuedOrNot(batchedState))).toEqual(queuedOrNot(await snapshot(oneByOne)));
      }),
      { numRuns: 40 },
    );
  });
});
