import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { listDeliveries } from '../../src/db/deliveries.js';
import { updateEndpoint } from '../../src/db/endpoints.js';
import { withMediaLinks } from '../../src/delivery/materialize.js';
import { webhookId } from '../../src/delivery/wire.js';
import { deliveryTestbed, notificationIdOf, type Testbed } from '../harness/delivery.js';
import { deliveryEngineProcess, mediaLinks } from '../harness/delivery-engine.js';
import type { NodeProcess } from '../harness/processes.js';
import { unique } from '../harness/random.js';
import type { ReceivedWebhook } from '../harness/servers/webhook-receiver.js';

const eventually = { timeout: 30_000, interval: 50 };
let bed: Testbed | undefined;
let child: NodeProcess | undefined;

afterEach(async () => {
  await child?.kill9();
  child = undefined;
  await bed?.close();
  bed = undefined;
});

describe('outbound delivery: several engines', () => {
  it('never sends one attempt twice at once from two engines on two pools, and keeps each album in order', async () => {
    bed = await deliveryTestbed({ DELIVERY_SCHEDULE: '0s,50ms,50ms,50ms,50ms,50ms', DELIVERY_CONCURRENCY: '4' });
    const attemptsOf = new Map<string, number>();
    // Each notification's first attempt at every third endpoint fails: retries interleave with first attempts.
    const answering = (request: ReceivedWebhook) => {
      const key = `${request.endpoint} ${request.webhookId}`;
      const attempt = (attemptsOf.get(key) ?? 0) + 1;
      attemptsOf.set(key, attempt);
      const fails = attempt === 1 && request.body.data.id.endsWith('/1');
      return { status: fails ? 503 : 200, delayMs: 5 + Math.floor(Math.random() * 30) };
    };
    const names = ['a', 'b', 'c'];
    for (const name of names) await bed.endpoint('acme', name, { rateLimit: 100 }, answering);
    const sent = { one: 0, two: 0 };
    const counting = (engine: keyof typeof sent) => {
      const mint = withMediaLinks(mediaLinks);
      return async (...args: Parameters<typeof mint>) => {
        sent[engine] += 1;
        return mint(...args);
      };
    };
    // One endpoint at a time each: both engines have to take turns on the three endpoints.
    await bed.startEngine({ materialize: counting('one'), maxEndpoints: 1 });
    await bed.startEngine({ materialize: counting('two'), maxEndpoints: 1 });

    const albums = Array.from({ length: 12 }, (_, i) => `alb_${i}`);
    for (const seq of [1, 2, 3]) for (const album of albums) await bed.record({ workspace: 'acme', album, seq });

    const expected = names.length * albums.length * 3;
    await vi.waitFor(async () => {
      const { rows } = await bed!.pool.query<{ delivered: number }>(
        `SELECT count(*)::int AS delivered FROM deliveries WHERE state = 'delivered'`,
      );
      expect(rows[0]!.delivered).toBe(expected);
    }, eventually);

    expect(bed.receiver.unverified()).toBe(0);
    expect(bed.receiver.maxInFlightPerWebhookId()).toBe(1);
    for (const name of names) expect(bed.receiver.maxInFlight(name)).toBeLessThanOrEqual(4);
    expect(sent.one).toBeGreaterThan(0);
    expect(sent.two).toBeGreaterThan(0);
    // Per endpoint and album: seq 2 only after seq 1 was answered 200, seq 3 after seq 2.
    for (const name of names) {
      for (const album of albums) {
        const requests = bed.receiver.received(name).filter((request) => request.body.data.id.includes(`:${album}/`));
        const seqs = requests.map((request) => Number(request.body.data.id.split('/').at(-1)));
        expect(seqs).toEqual([1, 1, 2, 3]);
      }
    }
    // No attempt was recorded twice.
    const { rows } = await bed.pool.query<{ attempts: number }>(`SELECT count(*)::int AS attempts FROM delivery_attempts`);
    expect(rows[0]!.attempts).toBe(bed.receiver.received().length);
  });

  it('holds an endpoint to its rate limit across engines', async () => {
    bed = await deliveryTestbed();
    const { endpoint } = await bed.endpoint('acme', 'slow', {}, () => ({ status: 200 }));
    await updateEndpoint(bed.pool, endpoint.id, { rateLimit: 5 });
    for (let i = 0; i < 15; i++) await bed.record({ workspace: 'acme', album: `alb_${i}`, seq: 1 });
    await bed.startEngine();
    await bed.startEngine();

    await vi.waitFor(() => expect(bed!.receiver.received('slow')).toHaveLength(15), eventually);
    const times = bed.receiver.received('slow').map((request) => request.receivedAt);
    // Started 200 ms apart: never 6 within much less than a second (slack for the arrival times' jitter on a busy machine).
    for (let i = 5; i < times.length; i++) expect(times[i]! - times[i - 5]!).toBeGreaterThanOrEqual(800);
    expect(times.at(-1)! - times[0]!).toBeGreaterThanOrEqual(2_700);
  });

  it('makes an attempt again once its lease ran out when the process that made it was killed mid-send', async () => {
    bed = await deliveryTestbed();
    let answered = 0;
    const { endpoint } = await bed.endpoint('acme', 'hook', {}, () => (answered++ === 0 ? { status: 200, hang: true } : { status: 200 }));
    const timeoutMs = 3_000;
    const leaseMs = 1_000;
    child = deliveryEngineProcess({
      name: 'delivery-engine',
      env: { ...process.env, NOTIFY_ALLOW_PRIVATE_NETWORKS: 'true' },
      databaseUrl: bed.databaseUrl,
      secretKey: bed.secretKey,
      timeoutMs,
      leaseMs,
      sweepIntervalMs: 100,
      logFile: path.join(os.tmpdir(), `${unique('delivery-engine')}.log`),
    });
    await child.start();
    await bed.record({ workspace: 'acme', album: 'alb_a', seq: 1 });
    await vi.waitFor(() => expect(bed!.receiver.received('hook')).toHaveLength(1), eventually);
    const claimedAt = Date.now();
    await child.kill9();
    child = undefined;

    // Another engine takes over; the attempt in flight when the process died is made again after its lease.
    await bed.startEngine({ timeoutMs, leaseMs });
    await vi.waitFor(() => expect(bed!.receiver.received('hook')).toHaveLength(2), eventually);
    const [first, second] = bed.receiver.received('hook');
    expect(second!.webhookId).toBe(first!.webhookId);
    expect(second!.webhookId).toBe(webhookId(notificationIdOf({ workspace: 'acme', album: 'alb_a', seq: 1 })));
    // The lease ran from the claim, a little before the first request arrived.
    expect(second!.receivedAt - claimedAt).toBeGreaterThanOrEqual(timeoutMs + leaseMs - 1_000);
    expect(bed.receiver.maxInFlightPerWebhookId()).toBe(1);
    await vi.waitFor(async () => {
      const [delivery] = await listDeliveries(bed!.pool, endpoint.id, { limit: 1 });
      // The killed process recorded nothing: one attempt, the second one's.
      expect(delivery).toMatchObject({ state: 'delivered', attempts: 1 });
      expect(delivery!.history.map((attempt) => attempt.statusCode)).toEqual([200]);
    }, eventually);
  });

  it('stops cleanly: the attempts in flight are recorded and the leases released', async () => {
    bed = await deliveryTestbed();
    const { endpoint } = await bed.endpoint('acme', 'hook', {}, () => ({ status: 200, delayMs: 300 }));
    const engine = await bed.startEngine();
    await bed.record({ workspace: 'acme', album: 'alb_a', seq: 1 });
    await vi.waitFor(() => expect(bed!.receiver.inFlight()).toBe(1), eventually);
    await engine.stop();
    const [delivery] = await listDeliveries(bed.pool, endpoint.id, { limit: 1 });
    expect(delivery).toMatchObject({ state: 'delivered', attempts: 1 });
    const { rows } = await bed.pool.query(`SELECT leased_by, leased_until <= now() AS expired FROM endpoints`);
    expect(rows).toEqual([{ leased_by: null, expired: true }]);
  });
});
