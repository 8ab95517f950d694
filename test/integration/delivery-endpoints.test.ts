import { afterEach, describe, expect, it, vi } from 'vitest';
import { registry } from '../../src/common/metrics.js';
import { listDeliveries, recordAttempt } from '../../src/db/deliveries.js';
import { refreshDeliveryGauges } from '../../src/delivery/metrics.js';
import {
  endpointSecretPlace,
  environmentEndpointId,
  getEndpoint,
  listEndpoints,
  resealEndpointSecrets,
  signingEndpointSecrets,
} from '../../src/db/endpoints.js';
import { withTransaction } from '../../src/db/transaction.js';
import { generateKey, KeyRing, parseKey } from '../../src/common/secret-key.js';
import { changeEndpoint, EndpointReadOnlyError, removeEndpoint, rotateSecret, secretOverlapMs } from '../../src/delivery/endpoints.js';
import { generateSecret } from '../../src/delivery/wire.js';
import { arrivals, deliveryTestbed, notificationIdOf, type Testbed } from '../harness/delivery.js';

const eventually = { timeout: 20_000, interval: 50 };
let bed: Testbed | undefined;

afterEach(async () => {
  await bed?.close();
  bed = undefined;
});

const id = (album: string, seq: number) => notificationIdOf({ workspace: 'acme', album, seq });

async function deliveryStates(testbed: Testbed, endpointId: string): Promise<Record<string, string>> {
  const deliveries = await listDeliveries(testbed.pool, endpointId, { limit: 100 });
  return Object.fromEntries(deliveries.map((delivery) => [delivery.notificationId, delivery.state]));
}

describe('outbound delivery: endpoints', () => {
  it('disables an endpoint that answers 410 at once and holds the rest; enabling it sends them in order', async () => {
    bed = await deliveryTestbed({ DELIVERY_SCHEDULE: '0s,100ms' });
    let gone = true;
    const { endpoint } = await bed.endpoint('acme', 'hook', {}, () => ({ status: gone ? 410 : 200 }));
    await bed.startEngine();
    await bed.record({ workspace: 'acme', album: 'alb_a', seq: 1 });
    await bed.record({ workspace: 'acme', album: 'alb_a', seq: 2 });

    await vi.waitFor(async () => expect((await getEndpoint(bed!.pool, endpoint.id))!.disabledReason).toBe('gone'), eventually);
    expect(await getEndpoint(bed.pool, endpoint.id)).toMatchObject({ enabled: false, disabledAt: expect.any(Date) as Date });
    expect(await deliveryStates(bed, endpoint.id)).toEqual({ [id('alb_a', 1)]: 'held', [id('alb_a', 2)]: 'held' });
    // Recorded while it is disabled: held too.
    expect(await bed.record({ workspace: 'acme', album: 'alb_b', seq: 1 })).toMatchObject({ deliveries: 1 });
    expect((await deliveryStates(bed, endpoint.id))[id('alb_b', 1)]).toBe('held');
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(arrivals(bed.receiver, 'hook')).toEqual([id('alb_a', 1)]);
    // Visible: the backlog and its age, labelled with the endpoint's workspace; the attempt by its outcome.
    await refreshDeliveryGauges(bed.pool);
    const metrics = await registry.metrics();
    expect(metrics).toContain(`albumflow_delivery_backlog{workspace="acme",endpoint="${endpoint.id}"} 3`);
    expect(metrics).toMatch(
      new RegExp(`albumflow_delivery_oldest_undelivered_seconds\\{workspace="acme",endpoint="${endpoint.id}"\\} 0\\.[1-9]`),
    );
    expect(metrics).toMatch(/albumflow_delivery_attempts_total\{outcome="http_error"\} [1-9]/);

    gone = false;
    const enabled = await withTransaction(bed.pool, (db) => changeEndpoint(db, bed!.deps, endpoint.id, { enabled: true }));
    expect(enabled).toMatchObject({ enabled: true, disabledReason: null, disabledAt: null, failingSince: null });
    await vi.waitFor(() => expect(bed!.receiver.received('hook')).toHaveLength(4), eventually);
    const order = arrivals(bed.receiver, 'hook').slice(1);
    expect(order.filter((n) => n.includes('alb_a'))).toEqual([id('alb_a', 1), id('alb_a', 2)]);
    expect(order).toContain(id('alb_b', 1));
    await vi.waitFor(
      async () => expect(Object.values(await deliveryStates(bed!, endpoint.id))).toEqual(['delivered', 'delivered', 'delivered']),
      eventually,
    );
  });

  it('makes no attempt whose turn comes after its endpoint was disabled, and holds those deliveries at once', async () => {
    bed = await deliveryTestbed({ DELIVERY_SCHEDULE: '0s,100ms', DELIVERY_CONCURRENCY: '4' });
    // Two a second: the lane claims two deliveries together and paces the second half a second after the first.
    const { endpoint } = await bed.endpoint('acme', 'paced', { rateLimit: 2 }, () => ({ status: 410 }));
    for (const album of ['alb_a', 'alb_b', 'alb_c', 'alb_d']) await bed.record({ workspace: 'acme', album, seq: 1 });
    await bed.startEngine();

    await vi.waitFor(async () => expect((await getEndpoint(bed!.pool, endpoint.id))!.disabledReason).toBe('gone'), eventually);
    await vi.waitFor(
      async () => expect(Object.values(await deliveryStates(bed!, endpoint.id))).toEqual(['held', 'held', 'held', 'held']),
      eventually,
    );
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    expect(bed.receiver.received('paced')).toHaveLength(1);
    const deliveries = await listDeliveries(bed.pool, endpoint.id, { limit: 10 });
    expect(deliveries.map((delivery) => delivery.history.length).sort()).toEqual([0, 0, 0, 1]);
  });

  it('disables an endpoint that has failed everything for five days, and an operator may disable and enable one', async () => {
    bed = await deliveryTestbed({ DELIVERY_SCHEDULE: '0s,1h' });
    let answer = 500;
    const { endpoint } = await bed.endpoint('acme', 'hook', {}, () => ({ status: answer }));
    await bed.startEngine();
    await bed.record({ workspace: 'acme', album: 'alb_a', seq: 1 });
    await vi.waitFor(async () => expect((await getEndpoint(bed!.pool, endpoint.id))!.failingSince).toEqual(expect.any(Date)), eventually);
    expect((await getEndpoint(bed.pool, endpoint.id))!.enabled).toBe(true);

    await bed.pool.query(`UPDATE endpoints SET failing_since = now() - interval '5 days' WHERE id = $1`, [endpoint.id]);
    await bed.record({ workspace: 'acme', album: 'alb_b', seq: 1 });
    await vi.waitFor(async () => expect((await getEndpoint(bed!.pool, endpoint.id))!.disabledReason).toBe('failing'), eventually);
    expect(await deliveryStates(bed, endpoint.id)).toEqual({ [id('alb_a', 1)]: 'held', [id('alb_b', 1)]: 'held' });

    answer = 200;
    await withTransaction(bed.pool, (db) => changeEndpoint(db, bed!.deps, endpoint.id, { enabled: true }));
    await vi.waitFor(
      async () => expect(Object.values(await deliveryStates(bed!, endpoint.id))).toEqual(['delivered', 'delivered']),
      eventually,
    );
    expect((await getEndpoint(bed.pool, endpoint.id))!.lastSuccessAt).toEqual(expect.any(Date));

    const disabled = await withTransaction(bed.pool, (db) =>
      changeEndpoint(db, bed!.deps, endpoint.id, { enabled: false, description: 'paused' }),
    );
    expect(disabled).toMatchObject({ enabled: false, disabledReason: 'operator', description: 'paused' });
    const before = bed.receiver.received('hook').length;
    await bed.record({ workspace: 'acme', album: 'alb_c', seq: 1 });
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(bed.receiver.received('hook')).toHaveLength(before);
    expect((await deliveryStates(bed, endpoint.id))[id('alb_c', 1)]).toBe('held');
  });

  // A notification recorded while its endpoint is switched must be queued in the state the switch leaves: a
  // `pending` delivery on a disabled endpoint is never attempted (the fault suite's receivers' outage met one,
  // recorded while a 410 disabled "gone"), a `held` one on an enabled endpoint is never sent.
  type Switch = (testbed: Testbed, endpointId: string) => Promise<unknown>;
  const gone: Switch = async (testbed, endpointId) => {
    const [first] = await listDeliveries(testbed.pool, endpointId, { limit: 1 });
    return recordAttempt(testbed.pool, {
      deliveryId: first!.id,
      endpointId,
      attemptsBefore: 0,
      at: new Date(),
      statusCode: 410,
      durationMs: 1,
      error: null,
      response: null,
      delivery: { state: 'held' },
      endpoint: 'gone',
    });
  };
  const operator =
    (enabled: boolean): Switch =>
    (testbed, endpointId) =>
      withTransaction(testbed.pool, (db) => changeEndpoint(db, testbed.deps, endpointId, { enabled }));
  const cases: Array<{ name: string; enabledBefore: boolean; switching: Switch; after: string }> = [
    { name: 'a 410 disables it', enabledBefore: true, switching: gone, after: 'held' },
    { name: 'an operator disables it', enabledBefore: true, switching: operator(false), after: 'held' },
    { name: 'an operator enables it', enabledBefore: false, switching: operator(true), after: 'pending' },
  ];

  /** Resolves once `work` settled or waits on a lock of the testbed's database (then it settles after the holder ends). */
  async function settledOrWaiting(testbed: Testbed, work: Promise<unknown>): Promise<void> {
    let settled = false;
    work.then(
      () => (settled = true),
      () => (settled = true),
    );
    const waiting = async () => {
      const { rows } = await testbed.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      return rows[0]!.n > 0;
    };
    await vi.waitFor(async () => expect(settled || (await waiting())).toBe(true), eventually);
  }

  for (const { name, enabledBefore, switching, after } of cases) {
    it(`queues a notification recorded while ${name} as the switch leaves its deliveries (${after})`, async () => {
      bed = await deliveryTestbed();
      const testbed = bed;
      const { endpoint } = await testbed.endpoint('acme', 'hook');
      await testbed.record({ workspace: 'acme', album: 'alb_a', seq: 1 });
      if (!enabledBefore) await operator(false)(testbed, endpoint.id);

      // The recording holds its transaction open while the switch runs, and commits only once the switch has
      // finished or waits for it.
      let switched: Promise<unknown> | undefined;
      await withTransaction(testbed.pool, async (db) => {
        await testbed.record({ workspace: 'acme', album: 'alb_b', seq: 1 }, db);
        switched = switching(testbed, endpoint.id);
        await settledOrWaiting(testbed, switched);
      });
      await switched;
      expect(await deliveryStates(testbed, endpoint.id)).toEqual({ [id('alb_a', 1)]: after, [id('alb_b', 1)]: after });

      // The other way round: a recording that comes while the operator's switch is not yet committed waits for it.
      let recorded: Promise<unknown> | undefined;
      await withTransaction(testbed.pool, async (db) => {
        await changeEndpoint(db, testbed.deps, endpoint.id, { enabled: enabledBefore });
        recorded = testbed.record({ workspace: 'acme', album: 'alb_c', seq: 1 });
        await settledOrWaiting(testbed, recorded);
      });
      await recorded;
      const back = enabledBefore ? 'pending' : 'held';
      expect(await deliveryStates(testbed, endpoint.id)).toEqual({
        [id('alb_a', 1)]: back,
        [id('alb_b', 1)]: back,
        [id('alb_c', 1)]: back,
      });
    });
  }

  it('signs with the old secret beside the new one for 24 hours after a rotation, then with the new one alone', async () => {
    bed = await deliveryTestbed();
    const { endpoint, secret: first } = await bed.endpoint('acme', 'hook');
    await bed.startEngine();
    const second = await withTransaction(bed.pool, (db) => rotateSecret(db, bed!.deps, endpoint.id));
    expect(second).toMatch(/^whsec_/);
    bed.receiver.setSecrets('hook', [first, second!]);
    const signing = await signingEndpointSecrets(bed.pool, endpoint.id);
    expect(signing).toHaveLength(2);
    expect(signing[0]!.expiresAt).toBeNull();
    expect(Math.abs(signing[1]!.expiresAt!.getTime() - Date.now() - secretOverlapMs)).toBeLessThan(60_000);

    await bed.record({ workspace: 'acme', album: 'alb_a', seq: 1 });
    await vi.waitFor(() => expect(bed!.receiver.received('hook')).toHaveLength(1), eventually);
    expect(bed.receiver.received('hook')[0]!.signatures).toHaveLength(2);
    expect(bed.receiver.received('hook')[0]!.verifiedBy).toEqual([0, 1]);

    // A day later.
    await bed.pool.query(`UPDATE endpoint_secrets SET expires_at = now() - interval '1 second' WHERE expires_at IS NOT NULL`);
    await bed.record({ workspace: 'acme', album: 'alb_a', seq: 2 });
    await vi.waitFor(() => expect(bed!.receiver.received('hook')).toHaveLength(2), eventually);
    expect(bed.receiver.received('hook')[1]!.signatures).toHaveLength(1);
    expect(bed.receiver.received('hook')[1]!.verifiedBy).toEqual([1]);
    expect(bed.receiver.unverified()).toBe(0);

    // Stored sealed, bound to their place; a rekey reseals them under the new key.
    const sealed = await bed.pool.query<{ endpoint_id: string; id: string; secret: Buffer }>(
      `SELECT endpoint_id, id, secret FROM endpoint_secrets`,
    );
    for (const row of sealed.rows) expect(row.secret.toString('latin1')).not.toContain('whsec_');
    const newKey = generateKey();
    const rekeyed = new KeyRing([newKey, parseKey(bed.secretKey, 'the old key')]);
    expect(await resealEndpointSecrets(bed.pool, (value, place) => rekeyed.reseal(value, place))).toBe(2);
    const [current] = await signingEndpointSecrets(bed.pool, endpoint.id);
    expect(new KeyRing([newKey]).open(current!.sealed, endpointSecretPlace(endpoint.id, current!.id))).toBe(second);
    expect(() => new KeyRing([newKey]).open(current!.sealed, endpointSecretPlace('ep_other', current!.id))).toThrow(/altered or copied/);
  });

  it('keeps the environment endpoint read-only through the API except for turning it on and off', async () => {
    const secret = generateSecret();
    bed = await deliveryTestbed();
    await bed.startEngine({ env: { NOTIFY_URL: bed.receiver.endpoint('ops', [secret]), NOTIFY_SECRET: secret } });
    await expect(
      withTransaction(bed.pool, (db) => changeEndpoint(db, bed!.deps, environmentEndpointId, { url: 'https://elsewhere.example/' })),
    ).rejects.toThrow(EndpointReadOnlyError);
    await expect(withTransaction(bed.pool, (db) => rotateSecret(db, bed!.deps, environmentEndpointId))).rejects.toThrow(
      EndpointReadOnlyError,
    );
    await expect(withTransaction(bed.pool, (db) => removeEndpoint(db, environmentEndpointId))).rejects.toThrow(EndpointReadOnlyError);
    expect(await withTransaction(bed.pool, (db) => changeEndpoint(db, bed!.deps, environmentEndpointId, { enabled: false }))).toMatchObject(
      {
        enabled: false,
        disabledReason: 'operator',
        source: 'environment',
        workspace: null,
      },
    );
  });

  it('removes an endpoint with its deliveries, which are not sent', async () => {
    bed = await deliveryTestbed();
    const { endpoint } = await bed.endpoint('acme', 'hook', {}, () => ({ status: 200 }));
    const kept = await bed.endpoint('acme', 'other');
    await withTransaction(bed.pool, (db) => changeEndpoint(db, bed!.deps, endpoint.id, { enabled: false }));
    await bed.record({ workspace: 'acme', album: 'alb_a', seq: 1 });
    expect(await withTransaction(bed.pool, (db) => removeEndpoint(db, endpoint.id))).toBe(true);
    expect(await withTransaction(bed.pool, (db) => removeEndpoint(db, endpoint.id))).toBe(false);
    expect((await listEndpoints(bed.pool, 'acme')).map((e) => e.id)).toEqual([kept.endpoint.id]);
    await bed.startEngine();
    await vi.waitFor(() => expect(bed!.receiver.received('other')).toHaveLength(1), eventually);
    const { rows } = await bed.pool.query(`SELECT endpoint_id FROM deliveries`);
    expect(rows).toEqual([{ endpoint_id: kept.endpoint.id }]);
    expect(bed.receiver.received('hook')).toEqual([]);
  });
});
