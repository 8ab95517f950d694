import crypto from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { albumWorkflowId } from '../../src/domain/keys.js';
import type { AlbumView } from '../../src/domain/types.js';
import { consolePaths } from '../../src/ui/paths.js';
import { statusQuery } from '../../workflows/definitions.js';
import { eventually } from '../harness/albums.js';
import { runCli } from '../harness/cli.js';
import { capturedLogger } from '../harness/env.js';
import { lineEvent, lineImageSet, lineMessageId, redeliveryOf, unsendOf, type LineBody, type LineEvent } from '../harness/events.js';
import { unique } from '../harness/random.js';
import * as stored from '../harness/rows.js';
import { storedNotifications } from '../harness/rows.js';
import { startFakeLineApi, type FakeLineApi } from '../harness/servers/fake-line-api.js';
import { startStack, type Stack } from '../harness/stack.js';

const channelSecret = crypto.randomBytes(16).toString('hex');
const otherSecret = crypto.randomBytes(16).toString('hex');
const accessToken = `line-token-${crypto.randomBytes(24).toString('base64url')}`;
const apiToken = crypto.randomBytes(24).toString('hex');
const destination = `U${crypto.randomBytes(16).toString('hex')}`;

const { logger, lines: logLines } = capturedLogger('line-test', 'debug');
const statusBodies: string[] = [];

let api: FakeLineApi;
let stack: Stack;
let url: string;

const body = (events: LineEvent[]): LineBody => ({ destination, events });

/** Bytes standing for a message's content, different for every message id. */
const contentOf = (messageId: string) => crypto.createHash('sha256').update(`line:${messageId}`).digest();

function serve(events: readonly LineEvent[]): void {
  for (const event of events) api.addContent(accessToken, lineMessageId(event), { content: contentOf(lineMessageId(event)) });
}

async function send(...bodies: LineBody[]): Promise<void> {
  for (const sent of bodies) {
    const answer = await stack.line(sent, { channel: 'shop' });
    expect([answer.statusCode, answer.body]).toEqual([200, '']);
  }
}

function albumKeyOf(setId: string, conversationId: string) {
  return { workspace: stack.workspace, provider: 'line', accountId: destination, conversationId, albumId: setId };
}

async function albumStatus(key: ReturnType<typeof albumKeyOf>): Promise<AlbumView> {
  const parts = [key.workspace, key.provider, key.accountId, key.conversationId, key.albumId].map(encodeURIComponent);
  const response = await stack.app.inject({
    method: 'GET',
    url: `/workspaces/${parts[0]}/albums/${parts.slice(1).join('/')}`,
    headers: { authorization: `Bearer ${apiToken}` },
  });
  expect(response.statusCode, response.body).toBe(200);
  statusBodies.push(response.body);
  return response.json<AlbumView>();
}

function settledAlbum(key: ReturnType<typeof albumKeyOf>, children: number): Promise<AlbumView> {
  return eventually(async () => {
    const status = await albumStatus(key);
    expect(status.distinctChildren).toBe(children);
    expect(status.decisions.length).toBeGreaterThan(0);
    expect(status.media.pending).toBe(0);
    return status;
  });
}

const downloaded = (messageId: string) => ({
  position: 0,
  status: 'downloaded',
  contentType: 'image/jpeg',
  bytes: contentOf(messageId).length,
  sha256: crypto.createHash('sha256').update(contentOf(messageId)).digest('hex'),
  error: null,
});

const errorCode = (text: string) => (JSON.parse(text) as { error: { code: string } }).error.code;

const counts = () =>
  Promise.all([stored.events.count(stack.pool, {}), stored.messages.count(stack.pool, {}), stored.quarantine.count(stack.pool, {})]);

/** albumflow_ingest_batch_size's count and sum, as /metrics shows them. */
async function batches(): Promise<{ count: number; sum: number }> {
  const metrics = await stack.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${apiToken}` } });
  const value = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(metrics.body)?.[1] ?? 0);
  return { count: value('albumflow_ingest_batch_size_count'), sum: value('albumflow_ingest_batch_size_sum') };
}

beforeAll(async () => {
  api = await startFakeLineApi();
  api.addChannel(accessToken);
  stack = await startStack(
    (workspace) => ({
      QUIET_PERIOD_MS: '600',
      MAX_WAIT_MS: '20000',
      LATE_WINDOW_MS: '60000',
      API_TOKENS: JSON.stringify({ [apiToken]: ['*'] }),
      LINE_API_ROOT: api.url,
      LINE_DATA_API_ROOT: api.url,
      LINE_CHANNELS: JSON.stringify({ [workspace]: { shop: { channelSecret, channelAccessToken: accessToken } } }),
    }),
    { logger },
  );
  await stack.app.listen({ port: 0, host: '127.0.0.1' });
  url = `http://127.0.0.1:${(stack.app.server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await stack?.close();
  await api?.close();
});

describe('the LINE webhook: answers', () => {
  it('refuses a missing or wrong signature with 401 and stores nothing', async () => {
    const sent = body(lineImageSet({ setId: unique('set'), count: 1 }));
    const before = await counts();
    const missing = await stack.line(sent, { channel: 'shop', channelSecret: null });
    const wrong = await stack.line(sent, { channel: 'shop', channelSecret: otherSecret });
    // Signed, then changed: the signature covers the raw bytes.
    const signedHeaders = {
      'content-type': 'application/json',
      'x-line-signature': crypto.createHmac('sha256', channelSecret).update(JSON.stringify(sent)).digest('base64'),
    };
    const changed = await stack.app.inject({
      method: 'POST',
      url: `/webhooks/line/${stack.workspace}/shop`,
      headers: signedHeaders,
      payload: JSON.stringify(sent, null, 1),
    });
    expect([missing.statusCode, errorCode(missing.body)]).toEqual([401, 'missing_signature']);
    expect([wrong.statusCode, errorCode(wrong.body)]).toEqual([401, 'invalid_signature']);
    expect([changed.statusCode, errorCode(changed.body)]).toEqual([401, 'invalid_signature']);
    expect(await counts()).toEqual(before);
  });

  it('answers 404 for a channel or workspace not in LINE_CHANNELS, before reading the body', async () => {
    const sent = JSON.stringify(body([]));
    const unknownChannel = await stack.line(sent, { channel: 'nobody', channelSecret });
    expect([unknownChannel.statusCode, errorCode(unknownChannel.body)]).toEqual([404, 'unknown_channel']);
    const elsewhere = await stack.app.inject({
      method: 'POST',
      url: '/webhooks/line/elsewhere/shop',
      headers: { 'content-type': 'application/json' },
      payload: sent,
    });
    expect(elsewhere.statusCode).toBe(404);
    // Not even a body the route could never parse gets further than the 404.
    const garbage = await stack.app.inject({
      method: 'POST',
      url: '/webhooks/line/elsewhere/shop',
      headers: { 'content-type': 'text/plain' },
      payload: 'x',
    });
    expect(garbage.statusCode).toBe(404);
  });

  it("answers the console's Verify (no events) with 200 and stores nothing", async () => {
    const before = await counts();
    await send(body([]));
    expect(await counts()).toEqual(before);
  });

  it('answers 200 to events older than REPLAY_HORIZON_S by their timestamp and stores nothing of them; one just inside it is stored', async () => {
    const horizonMs = stack.config.replayHorizonS * 1000;
    const groupId = unique('C');
    const old = lineImageSet({ setId: unique('set'), count: 2, groupId, timestamp: Date.now() - horizonMs - 60_000 });
    const oldUnsend = unsendOf(old[0]!, Date.now() - horizonMs - 1_000);
    const before = await counts();
    await send(body([...old, oldUnsend]));
    expect(await counts()).toEqual(before);
    expect(await stored.messages.count(stack.pool, { conversationId: groupId })).toBe(0);

    // In one body with an old event, an event just inside the horizon is stored, the old one is not.
    const [recent] = lineImageSet({ setId: unique('set'), count: 1, groupId, timestamp: Date.now() - horizonMs + 60_000 });
    serve([recent!]);
    const [stale] = lineImageSet({ setId: unique('set'), count: 1, groupId, timestamp: Date.now() - horizonMs - 60_000 });
    await send(body([stale!, recent!]));
    const rows = await stored.events.read(
      stack.pool,
      { source: 'line', eventIds: [stale!, recent!].map((e) => `${destination}:${e.webhookEventId}`) },
      ['event_id'],
    );
    expect(rows.map((row) => row.event_id)).toEqual([`${destination}:${recent!.webhookEventId}`]);
    const children = await stored.messages.read(stack.pool, { conversationId: groupId }, ['message_id']);
    expect(children.map((row) => row.message_id)).toEqual([lineMessageId(recent!)]);

    const metrics = await stack.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${apiToken}` } });
    expect(metrics.body).toMatch(/^albumflow_webhooks_total\{status="200",outcome="too_old"\} 1$/m);
  });

  it('quarantines a signed body without a destination or with an event without identity with 400', async () => {
    const before = (await counts())[2];
    const noDestination = await stack.line({ events: [] }, { channel: 'shop' });
    expect([noDestination.statusCode, errorCode(noDestination.body)]).toEqual([400, 'missing_identity']);
    const [event] = lineImageSet({ setId: unique('set'), count: 1 });
    delete (event!.message as Record<string, unknown>).id;
    const noId = await stack.line(body([event!]), { channel: 'shop' });
    expect([noId.statusCode, errorCode(noId.body)]).toEqual([400, 'missing_identity']);
    const nul = await stack.line(body([lineEvent({ type: 'follow', source: { type: 'user', userId: 'U\u0000' } })]), { channel: 'shop' });
    expect([nul.statusCode, errorCode(nul.body)]).toEqual([400, 'unstorable_webhook']);
    expect((await counts())[2]).toBe(before + 3);
  });

  it('records other events (follow, join, postback) and answers 200 without a child; a sticker is a child of its own', async () => {
    const before = await stored.messages.count(stack.pool, {});
    const events = [
      lineEvent({ type: 'follow', source: { type: 'user', userId: unique('U') } }),
      lineEvent({ type: 'join', source: { type: 'group', groupId: unique('C') } }),
      lineEvent({ type: 'postback', source: { type: 'user', userId: unique('U') }, postback: { data: 'a=1' } }),
      lineEvent({
        type: 'message',
        source: { type: 'user', userId: unique('U') },
        message: { type: 'sticker', id: unique('m'), packageId: '1', stickerId: '2' },
      }),
    ];
    await send(body(events));
    const rows = await stored.events.read(
      stack.pool,
      { source: 'line', eventIds: events.map((e) => `${destination}:${e.webhookEventId}`) },
      ['type'],
      {
        orderBy: ['type'],
      },
    );
    expect(rows.map((row) => row.type)).toEqual(['follow', 'join', 'message', 'postback']);
    expect(await stored.messages.count(stack.pool, {})).toBe(before + 1);
  });

  it('commits a request of 100 events in one batch of the group commit', async () => {
    // Five image sets of 20 (the most LINE puts in one set), in one group.
    const groupId = unique('C');
    const events = Array.from({ length: 5 }, () => lineImageSet({ setId: unique('big'), count: 20, groupId })).flat();
    const before = await batches();
    const messages = await stored.messages.count(stack.pool, {});
    await send(body(events));
    const after = await batches();
    expect([after.count - before.count, after.sum - before.sum]).toEqual([1, 100]);
    expect(await stored.messages.count(stack.pool, {})).toBe(messages + 100);
  });
});

describe('LINE image sets end to end (fake LINE API, real PostgreSQL and Temporal)', () => {
  it('builds one album of a 4-image set sent shuffled, one event twice, two in one request: expected_count_reached with indexes 1-4', async () => {
    const setId = unique('set');
    const groupId = unique('C');
    const events = lineImageSet({ setId, count: 4, groupId });
    serve(events);
    const [first, second, third, fourth] = events as [LineEvent, LineEvent, LineEvent, LineEvent];
    const fetchedBefore = api.calls('content').length;
    await send(body([third, first]), body([redeliveryOf(third)]), body([fourth]), body([second]));

    const key = albumKeyOf(setId, groupId);
    const album = await settledAlbum(key, 4);
    const ids = events.map(lineMessageId);
    expect(album.children.map((c) => [c.messageId, c.index, c.total])).toEqual(ids.map((id, i) => [id, i + 1, 4]));
    expect(album.decisions.map((d) => [d.trigger, d.childMessageIds])).toEqual([['expected_count_reached', ids]]);
    expect([album.expectedTotal, album.expectedCountReached, album.review.reasons]).toEqual([4, true, []]);
    expect(album.children.map((c) => c.attachments)).toEqual(ids.map((id) => [downloaded(id)]));
    // Each image fetched once from the content API, with the channel's token.
    const fetched = api.calls('content').slice(fetchedBefore);
    expect(ids.map((id) => fetched.filter((r) => r.path === `/v2/bot/message/${id}/content`).length)).toEqual([1, 1, 1, 1]);
    expect(fetched.every((r) => r.headers.authorization === `Bearer ${accessToken}`)).toBe(true);
    // The redelivered event is one event delivered twice.
    const [redelivered] = await stored.events.read(stack.pool, { source: 'line', eventIds: [`${destination}:${third.webhookEventId}`] }, [
      'delivery_count',
    ]);
    expect(redelivered?.delivery_count).toBe(2);

    // The workflow's own answer, as the Temporal UI and CLI query it, and its search attributes.
    const handle = stack.client.workflow.getHandle(albumWorkflowId(key));
    const queried = await handle.query(statusQuery);
    expect(queried.decisions.map((d) => d.trigger)).toEqual(['expected_count_reached']);
    expect(queried.children.map((c) => c.index)).toEqual([1, 2, 3, 4]);
    const attributes = (await handle.describe()).searchAttributes;
    expect([attributes.AlbumProvider, attributes.AlbumChildren]).toEqual([['line'], [4]]);
    await eventually(async () => {
      const notifications = await storedNotifications(stack.pool, albumWorkflowId(key));
      expect(notifications.filter((n) => n.type === 'album.ready')).toHaveLength(1);
    });

    // The CLI shows the same album.
    const cli = await runCli(['status', ...Object.values(key)], { ALBUMFLOW_URL: url, ALBUMFLOW_TOKEN: apiToken });
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stdout).toContain('expected_count_reached');
    for (const id of ids) expect(cli.stdout).toContain(id);
    const json = await runCli(['status', ...Object.values(key), '--json'], { ALBUMFLOW_URL: url, ALBUMFLOW_TOKEN: apiToken });
    expect((JSON.parse(json.stdout) as AlbumView).children.map((c) => c.index)).toEqual([1, 2, 3, 4]);

    // The console's album page: every image with its thumbnail, and the trigger that decided them.
    const page = await stack.app.inject({ method: 'GET', url: consolePaths.album(key), headers: { authorization: `Bearer ${apiToken}` } });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('expected count reached');
    const thumbnails = [...page.body.matchAll(/<img class="thumbnail" src="([^"]+)" alt="photo of message ([^"]+)">/g)];
    expect(thumbnails.map((match) => match[2])).toEqual(ids);
    for (const [, src] of thumbnails) {
      const thumbnail = await stack.app.inject({
        method: 'GET',
        url: src!.replaceAll('&amp;', '&'),
        headers: { authorization: `Bearer ${apiToken}` },
      });
      expect([thumbnail.statusCode, thumbnail.headers['content-type']]).toEqual([200, expect.stringMatching(/^image\//)]);
    }
  });

  it('decides a 3-image set of an old Android client (no index, no total) by the quiet period', async () => {
    const setId = unique('set');
    const userId = unique('U');
    const events = lineImageSet({ setId, count: 3, userId, withIndex: false });
    serve(events);
    await send(body([events[1]!]), body([events[0]!, events[2]!]));
    const album = await settledAlbum(albumKeyOf(setId, userId), 3);
    expect(album.decisions.map((d) => d.trigger)).toEqual(['quiet_period']);
    expect(album.children.map((c) => [c.index, c.total])).toEqual([
      [null, null],
      [null, null],
      [null, null],
    ]);
    expect(album.media.downloaded).toBe(3);
  });

  it('marks an image unsent after the decision as withdrawn, keeps it, and notifies exactly one album.updated "unsent"', async () => {
    const setId = unique('set');
    const groupId = unique('C');
    const events = lineImageSet({ setId, count: 2, groupId });
    serve(events);
    await send(body(events));
    const key = albumKeyOf(setId, groupId);
    await settledAlbum(key, 2);
    const unsend = unsendOf(events[1]!);
    // The unsend, and LINE delivering it again.
    await send(body([unsend]), body([redeliveryOf(unsend)]));
    const workflowId = albumWorkflowId(key);
    const updated = await eventually(async () => {
      const notifications = (await storedNotifications(stack.pool, workflowId)).filter((n) => n.type === 'album.updated');
      expect(notifications).toHaveLength(1);
      return notifications[0]!;
    });
    const messageId = lineMessageId(events[1]!);
    expect(updated.id).toBe(`${workflowId}/unsent/${encodeURIComponent(messageId)}`);
    expect(updated.payload).toMatchObject({ change: 'unsent', unsent: { messageId } });
    const album = await albumStatus(key);
    expect(album.children.map((c) => [c.messageId, c.withdrawnAt !== undefined])).toEqual([
      [lineMessageId(events[0]!), false],
      [messageId, true],
    ]);
    expect(album.decisions).toHaveLength(1);
    const queried = await stack.client.workflow.getHandle(workflowId).query(statusQuery);
    expect(queried.children[1]?.withdrawnAt).toBeDefined();
    // The CLI and the console flag it too.
    const cli = await runCli(['status', ...Object.values(key)], { ALBUMFLOW_URL: url, ALBUMFLOW_TOKEN: apiToken });
    expect(cli.stdout.split('\n').filter((line) => line.includes('(unsent '))).toHaveLength(1);
    const page = await stack.app.inject({ method: 'GET', url: consolePaths.album(key), headers: { authorization: `Bearer ${apiToken}` } });
    expect(page.statusCode).toBe(200);
    expect(page.body.match(/unsent by the sender/g)).toHaveLength(1);
  });

  it('marks content LINE no longer keeps expired, and retries content still being prepared', async () => {
    const userId = unique('U');
    const [gone, preparing] = [0, 1].map((i) =>
      lineEvent({
        type: 'message',
        source: { type: 'user', userId },
        message: { type: 'video', id: unique(`v${i}`), contentProvider: { type: 'line' } },
      }),
    ) as [LineEvent, LineEvent];
    api.addContent(accessToken, lineMessageId(preparing), { content: contentOf(lineMessageId(preparing)), contentType: 'video/mp4' });
    // Scripted for this message: downloads of earlier tests may still be asking for theirs.
    api.failNext('content', { status: 202, body: {} }, lineMessageId(preparing));
    await send(body([preparing]));
    await send(body([gone]));
    const message = (id: string) =>
      eventually(async () => {
        const parts = [stack.workspace, 'line', destination, userId, id].map(encodeURIComponent);
        const response = await stack.app.inject({
          method: 'GET',
          url: `/workspaces/${parts[0]}/messages/${parts.slice(1).join('/')}`,
          headers: { authorization: `Bearer ${apiToken}` },
        });
        statusBodies.push(response.body);
        const status = response.json<{ attachments: Array<{ status: string; error: string | null }> }>();
        expect(status.attachments[0]?.status).not.toBe('pending');
        return status.attachments[0]!;
      });
    expect(await message(lineMessageId(preparing))).toMatchObject({ status: 'downloaded' });
    expect(api.calls('content', lineMessageId(preparing)).length).toBe(2);
    expect(await message(lineMessageId(gone))).toMatchObject({ status: 'expired' });
  });

  it("fetches an external provider's originalContentUrl as any sender's URL, without the channel's token", async () => {
    const userId = unique('U');
    const event = lineEvent({
      type: 'message',
      source: { type: 'user', userId },
      message: { type: 'image', id: unique('x'), contentProvider: { type: 'external', originalContentUrl: `${api.url}/image.jpg` } },
    });
    await send(body([event]));
    const parts = [stack.workspace, 'line', destination, userId, lineMessageId(event)].map(encodeURIComponent);
    const attachment = await eventually(async () => {
      const response = await stack.app.inject({
        method: 'GET',
        url: `/workspaces/${parts[0]}/messages/${parts.slice(1).join('/')}`,
        headers: { authorization: `Bearer ${apiToken}` },
      });
      const status = response.json<{ attachments: Array<{ status: string; error: string | null }> }>();
      expect(status.attachments[0]?.status).not.toBe('pending');
      return status.attachments[0]!;
    });
    // The fake serves nothing there: the URL's own answer, and never the content API or the token.
    expect(attachment).toMatchObject({ status: 'expired', error: 'HTTP 404' });
    const asked = api.requests.filter((r) => r.path === '/image.jpg');
    expect(asked.length).toBe(1);
    expect(asked[0]!.headers.authorization).toBeUndefined();
    expect(api.calls('content', lineMessageId(event))).toEqual([]);
  });
});

describe('the channel secret and access token', () => {
  it('appear in no log line, status body, notification, attachment error or workflow history', async () => {
    const albums = await stored.albums.read(stack.pool, {}, ['workflow_id']);
    const histories: string[] = [];
    for (const { workflow_id } of albums) histories.push(historyToJSON(await stack.client.workflow.getHandle(workflow_id).fetchHistory()));
    const notifications = [
      ...(await stored.notifications.read(stack.pool, {}, ['payload'])),
      ...(await stored.deliveryAttempts.read(stack.pool, {}, ['error', 'response'])),
    ].map((row) => JSON.stringify(row));
    const errors = (await stored.attachments.read(stack.pool, {}, ['error'])).map((row) => String(row.error));
    expect([histories.length >= 3, logLines.length > 0, statusBodies.length > 3, notifications.length > 3]).toEqual([
      true,
      true,
      true,
      true,
    ]);
    for (const [where, texts] of Object.entries({ logLines, statusBodies, notifications, errors, histories })) {
      for (const secret of [accessToken, channelSecret])
        expect(texts.filter((text) => text.includes(secret)).length, `${where} hold a secret`).toBe(0);
    }
  });
});
