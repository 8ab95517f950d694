import { afterEach, describe, expect, it, vi } from 'vitest';
import { declareEnvironmentEndpoint } from '../../src/db/endpoints.js';
import { webhookId } from '../../src/delivery/wire.js';
import type { DeliveryInfo, DeliveryPageInfo, EndpointInfo } from '../../src/http/endpoints.js';
import { arrivals, deliveryTestbed, notificationIdOf, type Testbed } from '../harness/delivery.js';
import { deliveryApp, type DeliveryApp } from '../harness/delivery-app.js';
import { unique } from '../harness/random.js';

const eventually = { timeout: 20_000, interval: 50 };
const acme = 'acme';
const globex = 'globex';
const acmeToken = unique('acme-token');
const globexToken = unique('globex-token');
const opsToken = unique('ops-token');
const tokens = { [acmeToken]: [acme], [globexToken]: [globex], [opsToken]: ['*'] };

let bed: Testbed | undefined;
let surface: DeliveryApp | undefined;

afterEach(async () => {
  await surface?.close();
  surface = undefined;
  await bed?.close();
  bed = undefined;
});

async function setUp(options: { env?: Record<string, string>; allowPrivateNetworks?: boolean } = {}) {
  bed = await deliveryTestbed(options.env);
  surface = await deliveryApp(bed, { tokens, workspaces: [acme, globex], ...options });
  return { bed, surface };
}

type Created = EndpointInfo & { secret: string };

async function addEndpoint(s: DeliveryApp, token: string, workspace: string, body: Record<string, unknown>) {
  return s.app.inject({ method: 'POST', url: `/workspaces/${workspace}/endpoints`, headers: s.as(token), payload: body });
}

async function auditOf(testbed: Testbed): Promise<Array<{ token_name: string; action: string; subject: string }>> {
  const { rows } = await testbed.pool.query<{ token_name: string; action: string; subject: string }>(
    `SELECT token_name, action, subject FROM admin_audit ORDER BY id`,
  );
  return rows;
}

describe('outbound delivery: the endpoint routes', () => {
  it('lets a workspace’s token manage its endpoints: the secret shown once, every change audited, another workspace kept out', async () => {
    const { bed, surface: s } = await setUp();
    const url = bed.receiver.endpoint('hook', []);
    const added = await addEndpoint(s, acmeToken, acme, { url, types: ['album.ready'], description: 'the shop', rateLimit: 5 });
    expect(added.statusCode).toBe(201);
    const created = added.json<Created>();
    expect(created).toMatchObject({ url, types: ['album.ready'], enabled: true, workspace: acme, description: 'the shop', rateLimit: 5 });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    bed.receiver.setSecrets('hook', [created.secret]);

    // Never the secret again.
    const listed = await s.app.inject({ method: 'GET', url: `/workspaces/${acme}/endpoints`, headers: s.as(acmeToken) });
    expect(listed.statusCode).toBe(200);
    expect(listed.json<{ endpoints: EndpointInfo[] }>().endpoints.map((e) => e.id)).toEqual([created.id]);
    const shown = await s.app.inject({ method: 'GET', url: `/workspaces/${acme}/endpoints/${created.id}`, headers: s.as(acmeToken) });
    expect(shown.json<EndpointInfo>()).toMatchObject({ id: created.id, backlog: 0, failed: 0, oldestUndeliveredAt: null });
    for (const body of [listed.body, shown.body]) expect(body).not.toContain('whsec_');

    // A customer serves itself, and no other: another workspace's token is refused, and another workspace's endpoint is none.
    const foreign = await s.app.inject({ method: 'GET', url: `/workspaces/${acme}/endpoints`, headers: s.as(globexToken) });
    expect(foreign.statusCode).toBe(403);
    expect(foreign.json()).toMatchObject({ error: { code: 'workspace_not_allowed' } });
    const elsewhere = await s.app.inject({
      method: 'GET',
      url: `/workspaces/${globex}/endpoints/${created.id}`,
      headers: s.as(globexToken),
    });
    expect(elsewhere.statusCode).toBe(404);
    expect(elsewhere.json()).toMatchObject({ error: { code: 'endpoint_not_found' } });
    const stolen = await s.app.inject({
      method: 'PATCH',
      url: `/workspaces/${globex}/endpoints/${created.id}`,
      headers: s.as(globexToken),
      payload: { url: 'https://93.184.216.34/stolen' },
    });
    expect(stolen.statusCode).toBe(404);

    // It receives what it subscribes to, signed with its secret.
    await bed.startEngine();
    await bed.record({ workspace: acme, album: 'alb_a', seq: 1 });
    await bed.record({ workspace: acme, album: 'alb_a', seq: 2 });
    await vi.waitFor(
      () => expect(arrivals(bed.receiver, 'hook')).toEqual([notificationIdOf({ workspace: acme, album: 'alb_a', seq: 1 })]),
      eventually,
    );

    const patched = await s.app.inject({
      method: 'PATCH',
      url: `/workspaces/${acme}/endpoints/${created.id}`,
      headers: s.as(acmeToken),
      payload: { types: null, description: 'the shop, all of it', rateLimit: 20 },
    });
    expect(patched.statusCode).toBe(200);
    expect(patched.json<EndpointInfo>()).toMatchObject({ types: null, description: 'the shop, all of it', rateLimit: 20, enabled: true });

    const rotated = await s.app.inject({
      method: 'POST',
      url: `/workspaces/${acme}/endpoints/${created.id}/secret/rotate`,
      headers: s.as(acmeToken),
    });
    expect(rotated.statusCode).toBe(200);
    const { secret, previousSecretsExpireAt } = rotated.json<{ secret: string; previousSecretsExpireAt: string }>();
    expect(secret).toMatch(/^whsec_/);
    expect(Date.parse(previousSecretsExpireAt) - Date.now()).toBeGreaterThan(23 * 3600 * 1000);
    bed.receiver.setSecrets('hook', [created.secret, secret]);
    await bed.record({ workspace: acme, album: 'alb_b', seq: 2 });
    await vi.waitFor(() => expect(bed.receiver.received('hook')).toHaveLength(2), eventually);
    expect(bed.receiver.received('hook')[1]!.verifiedBy).toEqual([0, 1]);
    // Recorded as delivered once its answer came (after the receiver kept it).
    await vi.waitFor(
      async () =>
        expect(
          (await s.app.inject({ method: 'GET', url: `/workspaces/${acme}/endpoints/${created.id}`, headers: s.as(acmeToken) })).json(),
        ).toMatchObject({ backlog: 0, lastSuccessAt: expect.any(String) as string }),
      eventually,
    );

    const disabled = await s.app.inject({
      method: 'PATCH',
      url: `/workspaces/${acme}/endpoints/${created.id}`,
      headers: s.as(acmeToken),
      payload: { enabled: false },
    });
    expect(disabled.json<EndpointInfo>()).toMatchObject({
      enabled: false,
      disabledReason: 'operator',
      disabledAt: expect.any(String) as string,
    });
    await bed.record({ workspace: acme, album: 'alb_c', seq: 1 });
    const held = await s.app.inject({ method: 'GET', url: `/workspaces/${acme}/endpoints/${created.id}`, headers: s.as(acmeToken) });
    expect(held.json<EndpointInfo>()).toMatchObject({ backlog: 1, oldestUndeliveredAt: expect.any(String) as string });

    const removed = await s.app.inject({ method: 'DELETE', url: `/workspaces/${acme}/endpoints/${created.id}`, headers: s.as(acmeToken) });
    expect(removed.statusCode).toBe(204);
    expect(
      (await s.app.inject({ method: 'GET', url: `/workspaces/${acme}/endpoints/${created.id}`, headers: s.as(acmeToken) })).statusCode,
    ).toBe(404);

    const audit = await auditOf(bed);
    expect(audit.map((entry) => entry.action)).toEqual([
      'endpoint.add',
      'endpoint.change',
      'endpoint.rotate-secret',
      'endpoint.disable',
      'endpoint.remove',
    ]);
    const acmeName = audit[0]!.token_name;
    expect(acmeName).toMatch(/^API_TOKENS #\d$/);
    expect(audit.every((entry) => entry.token_name === acmeName)).toBe(true);
    expect(audit[0]!.subject).toBe(`endpoint ${created.id} of workspace ${acme} → ${new URL(url).origin}`);
    expect(audit[1]!.subject).toBe(`endpoint ${created.id} of workspace ${acme}: types, description, rateLimit`);
    expect(JSON.stringify(audit)).not.toContain('whsec_');
    expect(bed.receiver.unverified()).toBe(0);
  });

  it('refuses with 400 naming the field, 404 for a workspace albumflow does not know, and private addresses unless allowed', async () => {
    const { surface: s } = await setUp({ allowPrivateNetworks: false });
    const refusals: Array<[Record<string, unknown>, string]> = [
      [{ url: 'http://127.0.0.1:9/hook' }, 'url'],
      [{ url: 'http://10.1.2.3/hook' }, 'url'],
      [{ url: 'http://169.254.169.254/latest' }, 'url'],
      [{ url: 'ftp://93.184.216.34/hook' }, 'url'],
      [{ url: 'not a url' }, 'url'],
      [{ url: 'https://93.184.216.34/hook', types: ['album.ready', 'album.exploded'] }, 'types'],
      [{ url: 'https://93.184.216.34/hook', types: [] }, 'types'],
      [{ url: 'https://93.184.216.34/hook', rateLimit: 0 }, 'rateLimit'],
      [{ url: 'https://93.184.216.34/hook', rateLimit: 2 ** 63 }, 'rateLimit'],
      [{ url: 'https://93.184.216.34/hook', description: 'a\u0000b' }, 'description'],
    ];
    for (const [body, field] of refusals) {
      const answer = await addEndpoint(s, acmeToken, acme, body);
      expect(answer.statusCode, JSON.stringify(body)).toBe(400);
      expect(answer.json<{ error: { message: string } }>().error.message, JSON.stringify(body)).toContain(field);
    }
    const unknown = await addEndpoint(s, opsToken, 'nobody-knows', { url: 'https://93.184.216.34/hook' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toMatchObject({ error: { code: 'workspace_not_found' } });
    // A public address is taken without connecting to it.
    expect((await addEndpoint(s, acmeToken, acme, { url: 'https://93.184.216.34/hook' })).statusCode).toBe(201);
    const { rows } = await bed!.pool.query(`SELECT url FROM endpoints`);
    expect(rows).toEqual([{ url: 'https://93.184.216.34/hook' }]);
  });

  it('lets a * token see the environment endpoint and turn it off and on, and nothing else of it (409 read_only)', async () => {
    const { bed, surface: s } = await setUp();
    await declareEnvironmentEndpoint(bed.pool, 'https://ops.example/notify');
    const own = (await addEndpoint(s, acmeToken, acme, { url: bed.receiver.endpoint('hook', []) })).json<Created>();

    const every = await s.app.inject({ method: 'GET', url: '/admin/endpoints', headers: s.as(opsToken) });
    expect(every.statusCode).toBe(200);
    expect(every.json<{ endpoints: EndpointInfo[] }>().endpoints.map((e) => [e.id, e.workspace, e.source])).toEqual([
      ['ep_environment', null, 'environment'],
      [own.id, acme, 'database'],
    ]);
    expect((await s.app.inject({ method: 'GET', url: '/admin/endpoints', headers: s.as(acmeToken) })).statusCode).toBe(403);
    // Not a workspace's: its routes answer as for none.
    expect(
      (await s.app.inject({ method: 'GET', url: `/workspaces/${acme}/endpoints/ep_environment`, headers: s.as(opsToken) })).statusCode,
    ).toBe(404);
    expect((await s.app.inject({ method: 'GET', url: `/workspaces/${acme}/endpoints`, headers: s.as(opsToken) })).json()).toEqual({
      endpoints: [expect.objectContaining({ id: own.id })],
    });

    const path = '/admin/endpoints/ep_environment';
    const readOnly = await s.app.inject({
      method: 'PATCH',
      url: path,
      headers: s.as(opsToken),
      payload: { url: 'https://elsewhere.example/' },
    });
    expect(readOnly.statusCode).toBe(409);
    expect(readOnly.json()).toMatchObject({ error: { code: 'read_only' } });
    const off = await s.app.inject({ method: 'PATCH', url: path, headers: s.as(opsToken), payload: { enabled: false } });
    expect(off.json<EndpointInfo>()).toMatchObject({ enabled: false, disabledReason: 'operator' });
    const on = await s.app.inject({ method: 'PATCH', url: path, headers: s.as(opsToken), payload: { enabled: true } });
    expect(on.json<EndpointInfo>()).toMatchObject({ enabled: true, disabledReason: null });
    // The workspace's own endpoint through the operator's routes too.
    expect((await s.app.inject({ method: 'GET', url: `/admin/endpoints/${own.id}`, headers: s.as(opsToken) })).json()).toMatchObject({
      id: own.id,
    });
    const audit = await auditOf(bed);
    expect(audit.map((entry) => [entry.action, entry.subject])).toEqual([
      ['endpoint.add', expect.stringContaining(own.id) as string],
      ['endpoint.disable', "endpoint ep_environment (the environment's): disabled"],
      ['endpoint.enable', "endpoint ep_environment (the environment's): enabled"],
    ]);
  });

  it('lists deliveries with their attempts and answers, retries one, and replays since a time under the original webhook-ids', async () => {
    const { bed, surface: s } = await setUp({ env: { DELIVERY_SCHEDULE: '0s' } });
    let status = 500;
    const answer = `<script>alert(1)</script>${'x'.repeat(2000)}`;
    const url = bed.receiver.endpoint('hook', [], () => ({ status, body: answer }));
    const created = (await addEndpoint(s, acmeToken, acme, { url })).json<Created>();
    bed.receiver.setSecrets('hook', [created.secret]);
    await bed.startEngine();
    const first = notificationIdOf({ workspace: acme, album: 'alb_a', seq: 1 });
    const second = notificationIdOf({ workspace: acme, album: 'alb_b', seq: 1 });
    await bed.record({ workspace: acme, album: 'alb_a', seq: 1 });
    await bed.record({ workspace: acme, album: 'alb_b', seq: 1 });
    const base = `/workspaces/${acme}/endpoints/${created.id}`;
    const page = async (query: string) =>
      (await s.app.inject({ method: 'GET', url: `${base}/deliveries${query}`, headers: s.as(acmeToken) })).json<DeliveryPageInfo>();
    await vi.waitFor(async () => expect((await page('?state=failed')).deliveries).toHaveLength(2), eventually);

    const failed = await page('?state=failed');
    const [newest] = failed.deliveries as [DeliveryInfo];
    expect(newest).toMatchObject({
      notificationId: second,
      webhookId: webhookId(second),
      type: 'album.ready',
      state: 'failed',
      attempts: 1,
    });
    expect(newest.history).toEqual([
      {
        at: expect.any(String) as string,
        statusCode: 500,
        durationMs: expect.any(Number) as number,
        error: null,
        response: expect.any(String) as string,
      },
    ]);
    expect(newest.history[0]!.response).toMatch(/^<script>alert\(1\)<\/script>x+$/);
    expect(Buffer.byteLength(newest.history[0]!.response!)).toBeLessThanOrEqual(1024);
    // Paginated, newest first.
    const one = await page('?limit=1');
    expect(one.deliveries.map((d) => d.notificationId)).toEqual([second]);
    expect((await page(`?limit=1&before=${one.next}`)).deliveries.map((d) => d.notificationId)).toEqual([first]);
    expect((await page('?state=delivered')).deliveries).toEqual([]);
    expect((await s.app.inject({ method: 'GET', url: `${base}/deliveries?state=lost`, headers: s.as(acmeToken) })).statusCode).toBe(400);

    status = 200;
    const retried = await s.app.inject({ method: 'POST', url: `${base}/deliveries/${newest.id}/retry`, headers: s.as(acmeToken) });
    expect(retried.statusCode).toBe(202);
    expect(retried.json()).toEqual({ id: newest.id, state: 'pending' });
    await vi.waitFor(() => expect(bed.receiver.received('hook').filter((r) => r.body.data.id === second)).toHaveLength(2), eventually);
    const unknown = await s.app.inject({ method: 'POST', url: `${base}/deliveries/999999/retry`, headers: s.as(acmeToken) });
    expect(unknown.statusCode).toBe(404);
    // Recorded as delivered once its answer came: a replay then sends it again (a pending one it would only hurry).
    await vi.waitFor(async () => expect((await page('?state=delivered')).deliveries).toHaveLength(1), eventually);

    const before = bed.receiver.received('hook').length;
    const replayed = await s.app.inject({
      method: 'POST',
      url: `${base}/replay`,
      headers: s.as(acmeToken),
      payload: { since: new Date(Date.now() - 60_000).toISOString() },
    });
    expect(replayed.statusCode).toBe(202);
    expect(replayed.json()).toEqual({ replayed: 2 });
    await vi.waitFor(() => expect(bed.receiver.received('hook').length).toBe(before + 2), eventually);
    const again = bed.receiver.received('hook').slice(before);
    expect(again.map((r) => r.webhookId).sort()).toEqual([webhookId(first), webhookId(second)].sort());
    expect((await page('?state=delivered')).deliveries).toHaveLength(2);
    expect((await auditOf(bed)).map((entry) => entry.action)).toEqual(['endpoint.add', 'delivery.retry', 'endpoint.replay']);

    // The backlog gauges at a scrape, labelled with the workspace.
    await bed.record({ workspace: acme, album: 'alb_c', seq: 1 });
    await s.app.inject({ method: 'PATCH', url: base, headers: s.as(acmeToken), payload: { enabled: false } });
    const metrics = await s.app.inject({ method: 'GET', url: '/metrics', headers: s.as(opsToken) });
    expect(metrics.body).toMatch(new RegExp(`albumflow_delivery_backlog\\{workspace="${acme}",endpoint="${created.id}"\\} [0-9]`));
    expect(metrics.body).toContain('albumflow_delivery_oldest_undelivered_seconds{');
  });
});

describe('outbound delivery: the pull feed over HTTP', () => {
  it('pages through a workspace’s events, filters by type, keeps other tokens out, and answers a long poll within a second of a commit', async () => {
    const { bed, surface: s } = await setUp();
    await bed.record({ workspace: acme, album: 'alb_a', seq: 1 });
    await bed.record({ workspace: acme, album: 'alb_a', seq: 2 });
    await bed.record({ workspace: globex, album: 'alb_g', seq: 1 });
    const read = (query: string, token = acmeToken) =>
      s.app.inject({ method: 'GET', url: `/workspaces/${acme}/events${query}`, headers: s.as(token) });

    const page = (await read('?limit=1')).json<{
      events: Array<{ cursor: string; id: string; type: string; data: { id: string } }>;
      next: string;
    }>();
    const first = notificationIdOf({ workspace: acme, album: 'alb_a', seq: 1 });
    expect(page.events).toEqual([
      {
        cursor: '1',
        id: webhookId(first),
        type: 'album.ready',
        timestamp: expect.any(String) as string,
        data: expect.objectContaining({ id: first }) as object,
      },
    ]);
    expect(page.next).toBe('1');
    expect((await read(`?after=${page.next}`)).json()).toMatchObject({ events: [{ cursor: '2', type: 'album.updated' }], next: '2' });
    expect((await read('?types=album.updated')).json()).toMatchObject({ events: [{ cursor: '2' }] });
    expect((await read('?types=album.exploded')).statusCode).toBe(400);
    expect((await read('?wait=31')).statusCode).toBe(400);
    expect((await read('?after=x')).statusCode).toBe(400);
    expect((await read('', globexToken)).statusCode).toBe(403);
    expect((await read('', opsToken)).statusCode).toBe(200);

    const started = Date.now();
    const waiting = read('?after=2&wait=20');
    await new Promise((resolve) => setTimeout(resolve, 700));
    // Another workspace's entry does not answer it.
    await bed.record({ workspace: globex, album: 'alb_g', seq: 2 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const committedAt = Date.now();
    await bed.record({ workspace: acme, album: 'alb_b', seq: 1 });
    const answered = await waiting;
    const answeredAt = Date.now();
    expect(answered.statusCode).toBe(200);
    expect(answered.json()).toMatchObject({
      events: [{ cursor: '3', data: { id: notificationIdOf({ workspace: acme, album: 'alb_b', seq: 1 }) } }],
      next: '3',
    });
    expect(committedAt - started).toBeGreaterThanOrEqual(1_000);
    expect(answeredAt - committedAt).toBeLessThan(1_000);

    // Nothing arrives: it answers when the wait is over, with the cursor it was given.
    const quiet = Date.now();
    expect((await read('?after=3&wait=1')).json()).toEqual({ events: [], next: '3' });
    expect(Date.now() - quiet).toBeGreaterThanOrEqual(900);
  });
});
