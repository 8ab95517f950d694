import { afterEach, describe, expect, it, vi } from 'vitest';
import { listDeliveries, replaySince, retryDelivery } from '../../src/db/deliveries.js';
import { webhookId } from '../../src/delivery/wire.js';
import { arrivals, deliveryTestbed, notificationIdOf, type Testbed } from '../harness/delivery.js';
import type { ReceivedWebhook } from '../harness/servers/webhook-receiver.js';

const eventually = { timeout: 20_000, interval: 50 };
let bed: Testbed | undefined;

afterEach(async () => {
  await bed?.close();
  bed = undefined;
});

const id = (album: string, seq: number) => notificationIdOf({ workspace: 'acme', album, seq });

/** Answers 500 to the first `failures` requests of each notification named, 200 to the rest. */
function failingFirst(failures: Record<string, number>) {
  const seen = new Map<string, number>();
  return (request: ReceivedWebhook) => {
    const count = (seen.get(request.body.data.id) ?? 0) + 1;
    seen.set(request.body.data.id, count);
    return { status: count <= (failures[request.body.data.id] ?? 0) ? 500 : 200, body: `attempt ${count}` };
  };
}

describe('outbound delivery: order and schedule', () => {
  it("sends one album's notifications in order, the next waiting while an earlier one fails; another album's go on", async () => {
    bed = await deliveryTestbed({ DELIVERY_SCHEDULE: '0s,400ms,400ms,400ms' });
    await bed.endpoint('acme', 'hook', {}, failingFirst({ [id('alb_a', 1)]: 2 }));
    await bed.startEngine();
    for (const seq of [1, 2, 3]) await bed.record({ workspace: 'acme', album: 'alb_a', seq });
    for (const seq of [1, 2]) await bed.record({ workspace: 'acme', album: 'alb_b', seq });

    await vi.waitFor(() => expect(bed!.receiver.received('hook')).toHaveLength(7), eventually);
    const order = arrivals(bed.receiver, 'hook');
    expect(order.filter((n) => n.includes('alb_a'))).toEqual([
      id('alb_a', 1),
      id('alb_a', 1),
      id('alb_a', 1),
      id('alb_a', 2),
      id('alb_a', 3),
    ]);
    expect(order.filter((n) => n.includes('alb_b'))).toEqual([id('alb_b', 1), id('alb_b', 2)]);
    // Album b did not wait for album a's failing notification.
    expect(order.lastIndexOf(id('alb_b', 2))).toBeLessThan(order.lastIndexOf(id('alb_a', 1)));

    // The attempts kept what the receiver answered; the schedule's delays passed between them.
    const [delivery] = (
      await listDeliveries(bed.pool, (await bed.pool.query<{ id: string }>(`SELECT id FROM endpoints`)).rows[0]!.id, { limit: 10 })
    ).filter((d) => d.notificationId === id('alb_a', 1));
    expect(delivery).toMatchObject({ state: 'delivered', attempts: 3 });
    expect(delivery!.history.map(({ statusCode, response }) => [statusCode, response])).toEqual([
      [500, 'attempt 1'],
      [500, 'attempt 2'],
      [200, 'attempt 3'],
    ]);
    const times = bed.receiver
      .received('hook')
      .filter((r) => r.body.data.id === id('alb_a', 1))
      .map((r) => r.receivedAt);
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(380);
    expect(times[2]! - times[1]!).toBeGreaterThanOrEqual(380);
  });

  it("honours Retry-After within the schedule's bounds", async () => {
    bed = await deliveryTestbed({ DELIVERY_SCHEDULE: '0s,200ms,3s,200ms' });
    let requests = 0;
    await bed.endpoint('acme', 'hook', {}, () => {
      requests += 1;
      if (requests === 1) return { status: 503, headers: { 'retry-after': '2' } };
      if (requests === 2) return { status: 429, headers: { 'retry-after': new Date(Date.now() + 3_600_000).toUTCString() } };
      return { status: 204 };
    });
    await bed.startEngine();
    await bed.record({ workspace: 'acme', album: 'alb_a', seq: 1 });

    await vi.waitFor(() => expect(bed!.receiver.received('hook')).toHaveLength(3), eventually);
    const [first, second, third] = bed.receiver.received('hook').map((request) => request.receivedAt);
    // Asked for 2 s where the schedule says 200 ms: 2 s.
    expect(second! - first!).toBeGreaterThanOrEqual(1_950);
    expect(second! - first!).toBeLessThan(2_900);
    // Asked for an hour where the schedule says 3 s and its longest delay is 3 s: 3 s.
    expect(third! - second!).toBeGreaterThanOrEqual(2_950);
    expect(third! - second!).toBeLessThan(4_500);
  });

  it('fails a notification whose attempts are exhausted, lets the next go, and sends it again on retry and replay under the same webhook-id', async () => {
    bed = await deliveryTestbed({ DELIVERY_SCHEDULE: '0s,100ms,100ms' });
    const { endpoint } = await bed.endpoint('acme', 'hook', {}, failingFirst({ [id('alb_a', 1)]: 3 }));
    await bed.startEngine();
    const before = new Date();
    await bed.record({ workspace: 'acme', album: 'alb_a', seq: 1 });
    await bed.record({ workspace: 'acme', album: 'alb_a', seq: 2 });

    await vi.waitFor(
      () => expect(arrivals(bed!.receiver, 'hook')).toEqual([id('alb_a', 1), id('alb_a', 1), id('alb_a', 1), id('alb_a', 2)]),
      eventually,
    );
    const failed = await listDeliveries(bed.pool, endpoint.id, { state: 'failed', limit: 10 });
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ notificationId: id('alb_a', 1), attempts: 3, nextAttemptAt: null });
    expect(failed[0]!.history.map((attempt) => attempt.statusCode)).toEqual([500, 500, 500]);

    // Retry: sent again now, and delivered.
    expect(await retryDelivery(bed.pool, endpoint.id, failed[0]!.id)).toBe('pending');
    await vi.waitFor(() => expect(bed!.receiver.received('hook')).toHaveLength(5), eventually);
    expect(bed.receiver.received('hook')[4]!.webhookId).toBe(webhookId(id('alb_a', 1)));
    await vi.waitFor(
      async () => expect(await listDeliveries(bed!.pool, endpoint.id, { state: 'delivered', limit: 10 })).toHaveLength(2),
      eventually,
    );
    expect(await retryDelivery(bed.pool, endpoint.id, '999999')).toBeUndefined();
    expect(await retryDelivery(bed.pool, endpoint.id, 'nope')).toBeUndefined();

    // Replay: everything since then, again, in order, under the ids it went out with.
    expect(await replaySince(bed.pool, endpoint.id, before)).toBe(2);
    await vi.waitFor(() => expect(bed!.receiver.received('hook')).toHaveLength(7), eventually);
    const replayed = bed.receiver.received('hook').slice(5);
    expect(replayed.map((request) => request.webhookId)).toEqual([webhookId(id('alb_a', 1)), webhookId(id('alb_a', 2))]);
    expect(await replaySince(bed.pool, endpoint.id, new Date(Date.now() + 60_000))).toBe(0);
  });

  it('replays a notification still pending once, without waiting for its next scheduled attempt', async () => {
    bed = await deliveryTestbed({ DELIVERY_SCHEDULE: '0s,1h' });
    const { endpoint } = await bed.endpoint('acme', 'hook', {}, failingFirst({ [id('alb_a', 1)]: 1 }));
    await bed.startEngine();
    const before = new Date();
    await bed.record({ workspace: 'acme', album: 'alb_a', seq: 1 });
    await vi.waitFor(() => expect(bed!.receiver.received('hook')).toHaveLength(1), eventually);
    await vi.waitFor(async () => expect((await listDeliveries(bed!.pool, endpoint.id, { limit: 1 }))[0]!.attempts).toBe(1), eventually);

    expect(await replaySince(bed.pool, endpoint.id, before)).toBe(1);
    await vi.waitFor(() => expect(bed!.receiver.received('hook')).toHaveLength(2), eventually);
    await vi.waitFor(
      async () =>
        expect((await listDeliveries(bed!.pool, endpoint.id, { limit: 1 }))[0]).toMatchObject({ state: 'delivered', attempts: 2 }),
      eventually,
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(bed.receiver.received('hook')).toHaveLength(2);
  });

  it('sends a notification waiting behind one scheduled for later as soon as that one is delivered early (retry)', async () => {
    bed = await deliveryTestbed({ DELIVERY_SCHEDULE: '0s,1h' });
    const { endpoint } = await bed.endpoint('acme', 'hook', {}, failingFirst({ [id('alb_a', 1)]: 1 }));
    await bed.startEngine();
    await bed.record({ workspace: 'acme', album: 'alb_a', seq: 1 });
    await vi.waitFor(async () => expect((await listDeliveries(bed!.pool, endpoint.id, { limit: 1 }))[0]!.attempts).toBe(1), eventually);
    // Recorded while the first waits an hour for its next attempt: it waits too.
    await bed.record({ workspace: 'acme', album: 'alb_a', seq: 2 });
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(arrivals(bed.receiver, 'hook')).toEqual([id('alb_a', 1)]);

    const [waiting, first] = await listDeliveries(bed.pool, endpoint.id, { limit: 2 });
    expect(waiting!.nextAttemptAt!.getTime()).toBeGreaterThan(Date.now() + 3_000_000);
    expect(await retryDelivery(bed.pool, endpoint.id, first!.id)).toBe('pending');
    await vi.waitFor(() => expect(arrivals(bed!.receiver, 'hook')).toEqual([id('alb_a', 1), id('alb_a', 1), id('alb_a', 2)]), eventually);
  });
});
