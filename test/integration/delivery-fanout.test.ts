import { afterEach, describe, expect, it, vi } from 'vitest';
import { recordNotification } from '../../src/db/deliveries.js';
import { withTransaction } from '../../src/db/transaction.js';
import { environmentEndpointId } from '../../src/db/endpoints.js';
import { addEndpoint, EndpointInputError } from '../../src/delivery/endpoints.js';
import { generateSecret, webhookId } from '../../src/delivery/wire.js';
import { endpointGuard } from '../../src/delivery/engine.js';
import { arrivals, deliveryTestbed, notificationIdOf, workflowIdOf, type Testbed } from '../harness/delivery.js';
import { mediaLinks } from '../harness/delivery-engine.js';

const eventually = { timeout: 20_000, interval: 50 };
const sha256 = 'cd'.repeat(32);
let bed: Testbed | undefined;

afterEach(async () => {
  await bed?.close();
  bed = undefined;
});

async function states(testbed: Testbed): Promise<Array<{ notification_id: string; endpoint_id: string; state: string; attempts: number }>> {
  const { rows } = await testbed.pool.query<{ notification_id: string; endpoint_id: string; state: string; attempts: number }>(
    `SELECT notification_id, endpoint_id, state, attempts FROM deliveries ORDER BY position, endpoint_id`,
  );
  return rows;
}

describe('outbound delivery: fan-out', () => {
  it("sends each notification to its workspace's endpoints whose types match, and every workspace's to the environment endpoint", async () => {
    bed = await deliveryTestbed();
    const envSecrets = [generateSecret(), generateSecret()];
    const opsUrl = bed.receiver.endpoint('ops', envSecrets);
    await bed.startEngine({ env: { NOTIFY_URL: opsUrl, NOTIFY_SECRET: envSecrets.join(' ') } });
    const all = await bed.endpoint('acme', 'acme-all');
    const ready = await bed.endpoint('acme', 'acme-ready', { types: ['album.ready', 'message.ready'] });
    await bed.endpoint('globex', 'globex-all');
    const attachment = { position: 0, status: 'downloaded', sha256 };
    const data = { album: { children: [{ messageId: 'm1', attachments: [attachment] }] }, decision: { seq: 1 } };

    const first = await bed.record({ workspace: 'acme', album: 'alb_1', seq: 1, data });
    await bed.record({ workspace: 'acme', album: 'alb_1', seq: 2 });
    await bed.record({ workspace: 'globex', album: 'alb_1', seq: 1 });
    expect(first).toEqual({ recorded: true, feedPosition: '1', deliveries: 3 });

    const acme1 = notificationIdOf({ workspace: 'acme', album: 'alb_1', seq: 1 });
    const acme2 = notificationIdOf({ workspace: 'acme', album: 'alb_1', seq: 2 });
    const globex1 = notificationIdOf({ workspace: 'globex', album: 'alb_1', seq: 1 });
    await vi.waitFor(() => expect(bed!.receiver.received()).toHaveLength(7), eventually);
    expect(arrivals(bed.receiver, 'acme-all')).toEqual([acme1, acme2]);
    expect(arrivals(bed.receiver, 'acme-ready')).toEqual([acme1]);
    expect(arrivals(bed.receiver, 'globex-all')).toEqual([globex1]);
    expect(arrivals(bed.receiver, 'ops').sort()).toEqual([acme1, acme2, globex1].sort());
    expect(bed.receiver.unverified()).toBe(0);
    // NOTIFY_SECRET's two secrets both sign.
    for (const request of bed.receiver.received('ops')) expect(request.verifiedBy).toEqual([0, 1]);

    // One webhook-id per notification, at every endpoint; the wire's body.
    const copies = bed.receiver.received().filter((request) => request.body.data.id === acme1);
    expect(new Set(copies.map((request) => request.webhookId))).toEqual(new Set([webhookId(acme1)]));
    const { body, headers } = copies[0]!;
    expect(body).toMatchObject({ type: 'album.ready', data: { id: acme1, decision: { seq: 1 } } });
    expect(new Date(body.timestamp).toISOString()).toBe(body.timestamp);
    expect(headers['content-type']).toBe('application/json');
    // The media link was minted for the attempt and opens the file.
    const mediaUrl = new URL(
      (body.data as unknown as typeof data & { album: { children: Array<{ attachments: Array<{ media_url: string }> }> } }).album
        .children[0]!.attachments[0]!.media_url,
    );
    expect(mediaUrl.pathname).toBe(`/workspaces/acme/media/${sha256}`);
    expect(await mediaLinks.check('acme', sha256, Object.fromEntries(mediaUrl.searchParams))).toBe('valid');
    // ... and was never stored.
    const { rows } = await bed.pool.query<{ payload: unknown }>(`SELECT payload FROM notifications WHERE id = $1`, [acme1]);
    expect(rows[0]!.payload).toEqual(data);

    await vi.waitFor(
      async () => expect((await states(bed!)).every((d) => d.state === 'delivered' && d.attempts === 1)).toBe(true),
      eventually,
    );
    expect((await states(bed)).filter((d) => d.endpoint_id === environmentEndpointId)).toHaveLength(3);
    expect((await states(bed)).filter((d) => d.endpoint_id === all.endpoint.id)).toHaveLength(2);
    expect((await states(bed)).filter((d) => d.endpoint_id === ready.endpoint.id)).toHaveLength(1);

    // Recording the same notification again (an activity's retry) changes nothing and sends nothing.
    expect(await bed.record({ workspace: 'acme', album: 'alb_1', seq: 1, data })).toEqual({
      recorded: false,
      feedPosition: null,
      deliveries: 0,
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(bed.receiver.received()).toHaveLength(7);
  });

  it('records a notification in the transaction that records the decision: a rollback leaves nothing', async () => {
    bed = await deliveryTestbed();
    await bed.endpoint('acme', 'acme-all');
    await bed.startEngine();
    await expect(
      withTransaction(bed.pool, async (db) => {
        await db.query(
          `INSERT INTO decisions (workflow_id, seq, trigger, child_message_ids, decided_at) VALUES ($1, 1, 'quiet_period', '{}', now())`,
          [workflowIdOf('acme', 'alb_9')],
        );
        await recordNotification(db, {
          id: `${workflowIdOf('acme', 'alb_9')}/1`,
          workflowId: workflowIdOf('acme', 'alb_9'),
          workspace: 'acme',
          type: 'album.ready',
          data: {},
          recordedAt: new Date(),
        });
        throw new Error('the decision failed');
      }),
    ).rejects.toThrow('the decision failed');
    const { rows } = await bed.pool.query(
      `SELECT (SELECT count(*)::int FROM notifications) AS notifications, (SELECT count(*)::int FROM deliveries) AS deliveries,
              (SELECT count(*)::int FROM feed) AS feed, (SELECT count(*)::int FROM feed_positions) AS positions, (SELECT count(*)::int FROM decisions) AS decisions`,
    );
    expect(rows[0]).toEqual({ notifications: 0, deliveries: 0, feed: 0, positions: 0, decisions: 0 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(bed.receiver.received()).toEqual([]);
  });

  it('refuses a private address for an endpoint of the API, at save and at every attempt; the environment endpoint is trusted', async () => {
    bed = await deliveryTestbed();
    const guarded = { ...bed.deps, guard: endpointGuard({ allowPrivateNetworks: false }) };
    await expect(withTransaction(bed.pool, (db) => addEndpoint(db, guarded, 'acme', { url: 'http://127.0.0.1:9/hook' }))).rejects.toThrow(
      EndpointInputError,
    );
    await expect(withTransaction(bed.pool, (db) => addEndpoint(db, guarded, 'acme', { url: 'ftp://example.com/' }))).rejects.toThrow(
      'url: only http and https URLs receive notifications',
    );

    // Saved while private networks were allowed; the engine of a process where they are not refuses to send there.
    const { endpoint } = await bed.endpoint('acme', 'private');
    const envSecret = generateSecret();
    const opsUrl = bed.receiver.endpoint('ops', [envSecret]);
    await bed.startEngine({
      env: { NOTIFY_URL: opsUrl, NOTIFY_SECRET: envSecret, NOTIFY_ALLOW_PRIVATE_NETWORKS: 'false', DELIVERY_SCHEDULE: '0s,1h' },
    });
    await bed.record({ workspace: 'acme', album: 'alb_1', seq: 1 });

    await vi.waitFor(() => expect(arrivals(bed!.receiver, 'ops')).toHaveLength(1), eventually);
    await vi.waitFor(async () => {
      const { rows } = await bed!.pool.query<{ status_code: number | null; error: string; state: string; attempts: number }>(
        `SELECT a.status_code, a.error, d.state, d.attempts FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id = $1`,
        [endpoint.id],
      );
      expect(rows).toEqual([
        { status_code: null, error: expect.stringMatching(/127\.0\.0\.1 is a loopback address/) as string, state: 'pending', attempts: 1 },
      ]);
    }, eventually);
    expect(arrivals(bed.receiver, 'private')).toEqual([]);
  });
});
