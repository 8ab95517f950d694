import { afterEach, describe, expect, it, vi } from 'vitest';
import { deliveriesOf, purgeDeliveryRecords, readFeed } from '../../src/db/deliveries.js';
import { deliveryTestbed, notificationIdOf, workflowIdOf, type Testbed } from '../harness/delivery.js';

const eventually = { timeout: 20_000, interval: 50 };
let bed: Testbed | undefined;

afterEach(async () => {
  await bed?.close();
  bed = undefined;
});

async function count(testbed: Testbed, table: string): Promise<number> {
  const { rows } = await testbed.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
  return rows[0]!.n;
}

describe('outbound delivery: erasure and retention', () => {
  it("purges an album's deliveries, their attempts and its feed entries, and nothing of another album", async () => {
    bed = await deliveryTestbed({ DELIVERY_SCHEDULE: '0s,50ms' });
    let requests = 0;
    await bed.endpoint('acme', 'hook', {}, () => ({ status: requests++ === 0 ? 500 : 200 }));
    await bed.startEngine();
    await bed.record({ workspace: 'acme', album: 'alb_a', seq: 1 });
    await bed.record({ workspace: 'acme', album: 'alb_a', seq: 2 });
    await bed.record({ workspace: 'acme', album: 'alb_b', seq: 1 });
    await vi.waitFor(
      async () =>
        expect((await deliveriesOf(bed!.pool, workflowIdOf('acme', 'alb_a'))).map((d) => d.state)).toEqual(['delivered', 'delivered']),
      eventually,
    );
    await vi.waitFor(
      async () => expect((await deliveriesOf(bed!.pool, workflowIdOf('acme', 'alb_b'))).map((d) => d.state)).toEqual(['delivered']),
      eventually,
    );
    expect(await count(bed, 'delivery_attempts')).toBe(4);

    expect(await purgeDeliveryRecords(bed.pool, [workflowIdOf('acme', 'alb_a')])).toEqual({ deliveries: 2, attempts: 3, feedEntries: 2 });
    expect(await deliveriesOf(bed.pool, workflowIdOf('acme', 'alb_a'))).toEqual([]);
    const kept = await deliveriesOf(bed.pool, workflowIdOf('acme', 'alb_b'));
    expect(kept.map((d) => [d.notificationId, d.history.length])).toEqual([
      [notificationIdOf({ workspace: 'acme', album: 'alb_b', seq: 1 }), 1],
    ]);
    expect((await readFeed(bed.pool, 'acme', { after: '0', limit: 10 })).map((entry) => entry.position)).toEqual(['3']);

    // Removing the notifications (what retention and erasure do) takes whatever is left with them; positions are never reused.
    await bed.pool.query(`DELETE FROM notifications WHERE workflow_id = $1`, [workflowIdOf('acme', 'alb_b')]);
    expect([await count(bed, 'deliveries'), await count(bed, 'delivery_attempts'), await count(bed, 'feed')]).toEqual([0, 0, 0]);
    expect((await bed.record({ workspace: 'acme', album: 'alb_c', seq: 1 })).feedPosition).toBe('4');
  });

  it('drops a delivery whose notification is erased while its attempt is in flight, and sends it no more', async () => {
    bed = await deliveryTestbed({ DELIVERY_SCHEDULE: '0s,50ms,50ms' });
    const { endpoint } = await bed.endpoint('acme', 'hook', {}, () => ({ status: 500, delayMs: 500 }));
    await bed.startEngine();
    await bed.record({ workspace: 'acme', album: 'alb_a', seq: 1 });
    await vi.waitFor(() => expect(bed!.receiver.inFlight()).toBe(1), eventually);
    await bed.pool.query(`DELETE FROM notifications WHERE workflow_id = $1`, [workflowIdOf('acme', 'alb_a')]);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(bed.receiver.received('hook')).toHaveLength(1);
    expect(await count(bed, 'deliveries')).toBe(0);
    expect(await count(bed, 'delivery_attempts')).toBe(0);
    const { rows } = await bed.pool.query(`SELECT failing_since IS NOT NULL AS failing FROM endpoints WHERE id = $1`, [endpoint.id]);
    expect(rows).toEqual([{ failing: true }]);
  });
});
