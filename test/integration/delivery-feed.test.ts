import { afterEach, describe, expect, it } from 'vitest';
import { recordNotification, type NotificationToRecord } from '../../src/db/deliveries.js';
import type { PoolClient } from '../../src/db/pool.js';
import { createFeedReader, FeedCursorError, type FeedReader } from '../../src/delivery/feed.js';
import { withMediaLinks } from '../../src/delivery/materialize.js';
import { webhookId } from '../../src/delivery/wire.js';
import { deliveryTestbed, notificationIdOf, workflowIdOf, type Testbed } from '../harness/delivery.js';
import { mediaLinks } from '../harness/delivery-engine.js';
import { testLogger, testConfig } from '../harness/env.js';

let bed: Testbed | undefined;
let reader: FeedReader | undefined;

afterEach(async () => {
  await reader?.close();
  reader = undefined;
  await bed?.close();
  bed = undefined;
});

async function setUp(): Promise<{ bed: Testbed; reader: FeedReader }> {
  bed = await deliveryTestbed();
  reader = createFeedReader({ pool: bed.pool, materialize: withMediaLinks(mediaLinks), logger: testLogger(testConfig()) });
  return { bed, reader };
}

const notification = (album: string, seq: number, workspace = 'acme'): NotificationToRecord => ({
  id: notificationIdOf({ workspace, album, seq }),
  workflowId: workflowIdOf(workspace, album),
  workspace,
  type: seq === 1 ? 'album.ready' : 'album.updated',
  data: { decision: { seq } },
  recordedAt: new Date(),
});

/** A transaction held open on a client of its own, committed when the test says. */
async function openTransaction(testbed: Testbed): Promise<{ client: PoolClient; commit: () => Promise<void> }> {
  const client = await testbed.pool.connect();
  await client.query('BEGIN');
  return {
    client,
    async commit() {
      await client.query('COMMIT');
      client.release();
    },
  };
}

const ids = (page: { events: Array<{ data: Record<string, unknown> }> }) => page.events.map((event) => event.data.id);

describe('outbound delivery: the pull feed', () => {
  it('never lets a reader skip a notification that commits after a later-started one', async () => {
    const { bed, reader } = await setUp();
    // A starts first and works on its decision; B starts later, records and commits first.
    const a = await openTransaction(bed);
    await a.client.query(`SELECT count(*) FROM notifications`);
    const b = await openTransaction(bed);
    await recordNotification(b.client, notification('alb_b', 1));
    await b.commit();

    const first = await reader.read('acme', { limit: 10 });
    expect(ids(first)).toEqual([notificationIdOf({ workspace: 'acme', album: 'alb_b', seq: 1 })]);

    await recordNotification(a.client, notification('alb_a', 1));
    await a.commit();
    const second = await reader.read('acme', { after: first.next, limit: 10 });
    expect(ids(second)).toEqual([notificationIdOf({ workspace: 'acme', album: 'alb_a', seq: 1 })]);
  });

  it('appends one recording transaction at a time: a later append waits for the earlier to commit, so positions follow commit order', async () => {
    const { bed, reader } = await setUp();
    const a = await openTransaction(bed);
    await recordNotification(a.client, notification('alb_a', 1));
    const b = await openTransaction(bed);
    let bRecorded = false;
    const bRecording = recordNotification(b.client, notification('alb_b', 1)).then(() => (bRecorded = true));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(bRecorded).toBe(false);
    // Another workspace's feed is not held up.
    await bed.record({ workspace: 'globex', album: 'alb_g', seq: 1 });
    expect(await reader.read('acme', { limit: 10 })).toEqual({ events: [], next: '0' });

    await a.commit();
    await bRecording;
    const first = await reader.read('acme', { limit: 10 });
    expect(ids(first)).toEqual([notificationIdOf({ workspace: 'acme', album: 'alb_a', seq: 1 })]);
    await b.commit();
    const second = await reader.read('acme', { after: first.next, limit: 10 });
    expect(second.events.map((event) => event.cursor)).toEqual(['2']);
  });

  it('pages through a workspace’s notifications with their webhook-ids, fresh media links and a type filter', async () => {
    const { bed, reader } = await setUp();
    const sha256 = 'ef'.repeat(32);
    await bed.record({
      workspace: 'acme',
      album: 'alb_a',
      seq: 1,
      data: { album: { children: [{ attachments: [{ status: 'downloaded', sha256 }] }] } },
    });
    await bed.record({ workspace: 'acme', album: 'alb_a', seq: 2 });
    await bed.record({ workspace: 'acme', album: 'alb_b', seq: 1 });
    await bed.record({ workspace: 'globex', album: 'alb_a', seq: 1 });

    const page = await reader.read('acme', { limit: 2 });
    const first = notificationIdOf({ workspace: 'acme', album: 'alb_a', seq: 1 });
    expect(page.next).toBe('2');
    expect(page.events[0]).toMatchObject({ cursor: '1', id: webhookId(first), type: 'album.ready', data: { id: first } });
    expect(page.events[0]!.timestamp).toBe(new Date(page.events[0]!.timestamp).toISOString());
    const attachment = (page.events[0]!.data as { album: { children: Array<{ attachments: Array<{ media_url: string }> }> } }).album
      .children[0]!.attachments[0]!;
    expect(attachment.media_url).toMatch(/^https:\/\/albums.example\/workspaces\/acme\/media\//);
    expect(ids(await reader.read('acme', { after: page.next, limit: 2 }))).toEqual([
      notificationIdOf({ workspace: 'acme', album: 'alb_b', seq: 1 }),
    ]);
    expect(ids(await reader.read('acme', { limit: 10, types: ['album.updated'] }))).toEqual([
      notificationIdOf({ workspace: 'acme', album: 'alb_a', seq: 2 }),
    ]);
    expect(ids(await reader.read('globex', { limit: 10 }))).toEqual([notificationIdOf({ workspace: 'globex', album: 'alb_a', seq: 1 })]);
    await expect(reader.read('acme', { after: 'x1', limit: 10 })).rejects.toThrow(FeedCursorError);
  });

  it('holds a long poll until an entry of its workspace commits, and answers within a second of the commit', async () => {
    const { bed, reader } = await setUp();
    await bed.record({ workspace: 'acme', album: 'alb_a', seq: 1 });
    const started = Date.now();
    const waiting = reader.read('acme', { after: '1', limit: 10, waitMs: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 500));
    // Another workspace's entry wakes it, and it waits on.
    await bed.record({ workspace: 'globex', album: 'alb_g', seq: 1 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await bed.record({ workspace: 'acme', album: 'alb_a', seq: 2 });
    const committed = Date.now();
    const page = await waiting;
    const answered = Date.now();
    expect(ids(page)).toEqual([notificationIdOf({ workspace: 'acme', album: 'alb_a', seq: 2 })]);
    expect(answered - committed).toBeLessThan(1_000);
    expect(committed - started).toBeGreaterThanOrEqual(800);

    // Nothing arrives: it answers empty when its wait is over, or when the client goes away.
    const quiet = Date.now();
    expect(await reader.read('acme', { after: page.next, limit: 10, waitMs: 600 })).toEqual({ events: [], next: page.next });
    expect(Date.now() - quiet).toBeGreaterThanOrEqual(550);
    const gone = new AbortController();
    setTimeout(() => gone.abort(), 200);
    const abandoned = Date.now();
    expect((await reader.read('acme', { after: page.next, limit: 10, waitMs: 10_000, signal: gone.signal })).events).toEqual([]);
    expect(Date.now() - abandoned).toBeLessThan(2_000);
  });
});
