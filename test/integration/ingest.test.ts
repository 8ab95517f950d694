import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ingestChild, storeDeliveries, type ChildDelivery, type IngestResult } from '../../src/db/ingest.js';
import { outboxChannel } from '../../src/db/outbox.js';
import type { Pool } from '../../src/db/pool.js';
import { parseEvent } from '../../src/platforms/unifyport/parse.js';
import { testConfig, testPool } from '../harness/env.js';
import { unifyportEvent } from '../harness/events.js';
import { unique } from '../harness/random.js';
import { albums as albumRows, messages, outbox } from '../harness/rows.js';

const config = testConfig();
let pool: Pool;

beforeAll(() => {
  pool = testPool(config, 20);
});

afterAll(async () => {
  await pool.end();
});

function deliveryOf(workspace: string, event: Record<string, unknown>): ChildDelivery {
  const body = Buffer.from(JSON.stringify(event));
  const parsed = parseEvent(workspace, body);
  if (parsed.kind !== 'child') throw new Error(`not a child event: ${JSON.stringify(parsed)}`);
  return { source: 'unifyport', eventId: parsed.eventId, type: parsed.type, raw: body.toString(), child: parsed.child };
}

function ingest(workspace: string, event: Record<string, unknown>): Promise<IngestResult> {
  return ingestChild(pool, deliveryOf(workspace, event));
}

async function sessionsBlockedBy(pid: number): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`,
    [pid],
  );
  return rows[0]!.n;
}

function childEvent(messageId: string, albumId: string) {
  return unifyportEvent({
    provider: 'telegram',
    accountId: 'acc',
    conversationId: 'conv',
    message: { id: messageId, album: { id: albumId } },
  });
}

describe('ingestChild under concurrency', () => {
  it('stores the concurrent first children of new albums under one album row each', async () => {
    const workspace = unique('ingest');
    const albums = Array.from({ length: 40 }, (_, a) => `alb-${a}`);
    const outcomes = await Promise.allSettled(
      albums.flatMap((album) => Array.from({ length: 8 }, (_, i) => ingest(workspace, childEvent(`${album}-m${i}`, album)))),
    );
    expect(outcomes.filter((o) => o.status === 'rejected')).toEqual([]);

    const rows = await albumRows.read(pool, { workspace }, ['album_id', 'children']);
    expect(rows.sort((a, b) => a.album_id.localeCompare(b.album_id))).toEqual(
      [...albums].sort().map((album_id) => ({ album_id, children: 8 })),
    );
  });

  it('stores one child once when its redeliveries race, and reports the others as duplicates', async () => {
    const workspace = unique('ingest');
    const results = await Promise.all(Array.from({ length: 12 }, () => ingest(workspace, childEvent('same', 'alb'))));
    expect(results.filter((r) => !r.duplicate)).toHaveLength(1);
    expect(await messages.read(pool, { workspace }, ['delivery_count', 'outbox'])).toEqual([{ delivery_count: 12, outbox: 1 }]);
  });

  it('finds the album another transaction created while this one waited to insert it', async () => {
    const workspace = unique('ingest');
    const holder = await pool.connect();
    let second: Promise<IngestResult> | undefined;
    try {
      await holder.query('BEGIN');
      await storeDeliveries(holder, [deliveryOf(workspace, childEvent('first', 'raced'))]);
      const { rows } = await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      second = ingest(workspace, childEvent('second', 'raced'));
      await expect.poll(() => sessionsBlockedBy(rows[0]!.pid), { timeout: 10_000 }).toBe(1);
      await holder.query('COMMIT');
    } finally {
      holder.release();
    }
    expect(await second).toMatchObject({ duplicate: false, albumKey: `${workspace}:telegram:acc:conv:raced` });

    const children = await messages.read(pool, { workspace }, ['album_pk']);
    const byAlbum = [...new Set(children.map((child) => child.album_pk))].map((album_pk) => ({
      album_pk,
      children: children.filter((child) => child.album_pk === album_pk).length,
    }));
    expect(byAlbum).toHaveLength(1);
    expect(byAlbum[0]!.children).toBe(2);
  });
});

describe('announcing queued children', () => {
  it('notifies the outbox channel from the storing session when it queued children, and not for a redelivery that queued none', async () => {
    const listener = await pool.connect();
    const writer = await pool.connect();
    try {
      const writerPid = (await writer.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      const fromWriter: number[] = [];
      listener.on('notification', (message) => {
        if (message.channel === outboxChannel && message.processId === writerPid) fromWriter.push(Date.now());
      });
      await listener.query(`LISTEN ${outboxChannel}`);
      const workspace = unique('ws');
      // A notification is delivered once the listener's session reads it; a round trip on it is enough.
      const settle = () => listener.query('SELECT 1');

      const event = childEvent('announced', 'a');
      const first = await ingestChild(writer, deliveryOf(workspace, event));
      expect(first.duplicate).toBe(false);
      await vi.waitFor(async () => {
        await settle();
        expect(fromWriter).toHaveLength(1);
      });

      const again = await ingestChild(writer, deliveryOf(workspace, event));
      expect(again.duplicate).toBe(true);
      await ingestChild(writer, deliveryOf(workspace, childEvent('announced-too', 'a')));
      await vi.waitFor(async () => {
        await settle();
        expect(fromWriter).toHaveLength(2);
      });

      const rows = await outbox.read(pool, { workspace }, ['message_id'], { orderBy: ['message_id'] });
      expect(rows.map((row) => row.message_id)).toEqual(['announced', 'announced-too']);
    } finally {
      await listener.query('UNLISTEN *').catch(() => undefined);
      listener.release();
      writer.release();
    }
  });
});
