// Two customers on one albumflow: each workspace's endpoints get its own notifications, of the types they
// subscribe to, and the environment's (NOTIFY_URL) gets every workspace's; every delivery verified with the
// standardwebhooks package, as a receiver would; and a customer's token cannot see or change the other's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveSecretKey } from '../../src/common/secret-key.js';
import { deliveryConfig } from '../../src/delivery/config.js';
import { createDeliveryEngine, endpointGuard, type DeliveryEngine } from '../../src/delivery/engine.js';
import { withMediaLinks } from '../../src/delivery/materialize.js';
import { generateSecret } from '../../src/delivery/wire.js';
import { mediaLinksFor } from '../../src/media/links.js';
import { eventually } from '../harness/albums.js';
import { albumEvent, webhookRequest } from '../harness/events.js';
import { testLogger } from '../harness/env.js';
import { unique } from '../harness/random.js';
import { startWebhookReceiver, type ReceivedWebhook, type WebhookReceiver } from '../harness/servers/webhook-receiver.js';
import { startStack, type Stack } from '../harness/stack.js';

const acmeToken = unique('acme-token');
const globexToken = unique('globex-token');
const environmentSecret = generateSecret();

let receiver: WebhookReceiver;
let stack: Stack;
let engine: DeliveryEngine;
let acme: string;
let globex: string;
const globexSecret = 'globex-signing-secret';

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  const environmentUrl = receiver.endpoint('environment', [environmentSecret]);
  globex = unique('globex');
  stack = await startStack((workspace) => ({
    WORKSPACE_SECRETS: JSON.stringify({ [workspace]: ['stack-secret'], [globex]: [globexSecret] }),
    API_TOKENS: JSON.stringify({ [acmeToken]: [workspace], [globexToken]: [globex] }),
    NOTIFY_URL: environmentUrl,
    NOTIFY_SECRET: environmentSecret,
    NOTIFY_ALLOW_PRIVATE_NETWORKS: 'true',
    QUIET_PERIOD_MS: '300',
  }));
  acme = stack.workspace;
  // The worker's sender, as src/process/start.ts starts it beside the worker.
  const delivery = deliveryConfig(stack.config.notify);
  engine = createDeliveryEngine({
    pool: stack.pool,
    keys: resolveSecretKey({ secretKey: stack.config.secretKey, dataDir: stack.config.dataDir }).ring,
    config: delivery,
    guard: endpointGuard(delivery),
    materialize: withMediaLinks(mediaLinksFor(stack.config, stack.pool)),
    logger: testLogger(stack.config),
    sweepIntervalMs: 100,
  });
  await engine.start();
});

afterAll(async () => {
  await engine?.stop();
  await stack?.close();
  await receiver?.close();
});

/** An endpoint added by the customer's own token, pointed at the receiver's endpoint `name`. */
async function addEndpoint(workspace: string, token: string, name: string, types?: string[]): Promise<{ id: string }> {
  const url = receiver.endpoint(name, []);
  const response = await stack.app.inject({
    method: 'POST',
    url: `/workspaces/${workspace}/endpoints`,
    headers: bearer(token),
    payload: { url, ...(types ? { types } : {}) },
  });
  expect(response.statusCode, response.body).toBe(201);
  const added = response.json<{ id: string; secret: string }>();
  receiver.setSecrets(name, [added.secret]);
  return added;
}

/** A two-photo album with its total, sent to the workspace's UnifyPort route. */
async function sendAlbum(workspace: string, secret: string, albumId: string): Promise<void> {
  for (const [index, messageId] of ['m0', 'm1'].entries()) {
    const body = JSON.stringify(albumEvent({ albumId, messageId: `${albumId}-${messageId}`, index, total: 2, conversationId: 'c1' }));
    const { path, headers } = webhookRequest({ route: 'unifyport', workspace, secret, body });
    const answer = await stack.app.inject({ method: 'POST', url: path, headers, payload: body });
    expect(answer.statusCode, answer.body).toBe(202);
  }
}

const summary = (requests: ReceivedWebhook[]) =>
  requests.map(({ body }) => ({ type: body.type, album: (body.data.album as { key: { workspace: string; albumId: string } }).key }));

describe('two workspaces, each with its own endpoint, and the environment endpoint', () => {
  it('sends each endpoint exactly its workspace’s notifications of its types, verified, album.ready before album.media_settled', async () => {
    await addEndpoint(acme, acmeToken, 'acme');
    await addEndpoint(globex, globexToken, 'globex', ['album.ready']);
    await sendAlbum(acme, stack.secret, 'acme-album');
    await sendAlbum(globex, globexSecret, 'globex-album');

    await eventually(() => {
      expect(summary(receiver.received('acme')).map(({ type }) => type)).toEqual(['album.ready', 'album.media_settled']);
      expect(summary(receiver.received('globex')).map(({ type }) => type)).toEqual(['album.ready']);
      expect(receiver.received('environment')).toHaveLength(4);
    }, 60_000);
    expect(summary(receiver.received('acme')).every(({ album }) => album.workspace === acme && album.albumId === 'acme-album')).toBe(true);
    expect(summary(receiver.received('globex')).map(({ type, album }) => [type, album.workspace])).toEqual([['album.ready', globex]]);
    const environment = summary(receiver.received('environment'));
    for (const workspace of [acme, globex]) {
      expect(environment.filter(({ album }) => album.workspace === workspace).map(({ type }) => type)).toEqual([
        'album.ready',
        'album.media_settled',
      ]);
    }
    // Every request verified with its endpoint's secret (one that does not is answered 401 and counted here).
    expect(receiver.unverified()).toBe(0);
    // One webhook-id per notification, the same at the environment's and the workspace's endpoint.
    const ids = (name: string) => receiver.received(name).map((request) => `${request.body.data.id} ${request.webhookId}`);
    expect(ids('environment')).toEqual(expect.arrayContaining([...ids('acme'), ...ids('globex')]));
  });

  it('does not let a workspace’s token see or change another workspace’s endpoints', async () => {
    const { id } = await addEndpoint(globex, globexToken, unique('globex-private'));
    const asAcme = (method: 'GET' | 'PATCH' | 'DELETE' | 'POST', url: string, payload?: object) =>
      stack.app.inject({ method, url, headers: bearer(acmeToken), ...(payload ? { payload } : {}) });

    expect((await asAcme('GET', `/workspaces/${globex}/endpoints`)).statusCode).toBe(403);
    expect((await asAcme('GET', `/workspaces/${globex}/endpoints/${id}`)).statusCode).toBe(403);
    expect((await asAcme('PATCH', `/workspaces/${globex}/endpoints/${id}`, { enabled: false })).statusCode).toBe(403);
    expect((await asAcme('POST', `/workspaces/${globex}/endpoints/${id}/secret/rotate`)).statusCode).toBe(403);
    expect((await asAcme('DELETE', `/workspaces/${globex}/endpoints/${id}`)).statusCode).toBe(403);
    // Through its own workspace's path, the other's endpoint is not found.
    expect((await asAcme('GET', `/workspaces/${acme}/endpoints/${id}`)).statusCode).toBe(404);
    expect((await asAcme('PATCH', `/workspaces/${acme}/endpoints/${id}`, { enabled: false })).statusCode).toBe(404);
    const listed = await asAcme('GET', `/workspaces/${acme}/endpoints`);
    expect(listed.json<{ endpoints: Array<{ id: string; workspace: string }> }>().endpoints.every((e) => e.workspace === acme)).toBe(true);

    const still = await stack.app.inject({ method: 'GET', url: `/workspaces/${globex}/endpoints/${id}`, headers: bearer(globexToken) });
    expect(still.json<{ enabled: boolean }>().enabled).toBe(true);
  });
});
