import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lineSignature } from '../../src/platforms/line/signature.js';
import { runCli } from '../harness/cli.js';
import { lineBodies } from '../harness/events.js';
import { startFakeLineApi, type FakeLineApi } from '../harness/servers/fake-line-api.js';
import { exampleImageSetFile } from '../harness/servers/fake-line-api-demo.js';

// The LINE commands of the CLI, run as users run it. `send --line` goes to a recording HTTP server
// standing in for albumflow's LINE route; `line set-webhook` to the fake LINE API.

const channelSecret = '0123456789abcdef0123456789abcdef';
const channelAccessToken = 'line-cli-test-access-token-0123456789';
const lineChannels = JSON.stringify({ demo: { shop: { channelSecret, channelAccessToken } } });

const received: Array<{ path: string; headers: http.IncomingHttpHeaders; body: Buffer }> = [];
let albumflowServer: http.Server;
let albumflowUrl: string;
let api: FakeLineApi;

beforeAll(async () => {
  albumflowServer = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ path: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks) });
      response.writeHead(200);
      response.end();
    });
  });
  await new Promise<void>((resolve) => albumflowServer.listen(0, '127.0.0.1', resolve));
  albumflowUrl = `http://127.0.0.1:${(albumflowServer.address() as AddressInfo).port}`;
  api = await startFakeLineApi();
  api.addChannel(channelAccessToken);
});

afterAll(async () => {
  await new Promise<void>((resolve) => albumflowServer.close(() => resolve()));
  await api.close();
});

const env = () => ({
  LINE_CHANNELS: lineChannels,
  LINE_API_ROOT: api.url,
  LINE_DATA_API_ROOT: api.url,
  ALBUMFLOW_TOKEN: 'unused-token-1234567',
});

describe('albumflow send --line', { timeout: 60_000 }, () => {
  it('posts each body of the file in order, signed with the channel secret as LINE signs', async () => {
    const run = await runCli(['send', '--line', exampleImageSetFile, '--channel', 'shop', '--url', albumflowUrl], env());
    expect(run.code, run.stderr).toBe(0);
    const bodies = lineBodies(exampleImageSetFile);
    expect(run.stdout.trim().split('\n')).toEqual(bodies.map((b) => `200 ${b.events.length} event${b.events.length === 1 ? '' : 's'}`));
    expect(received.map((r) => r.path)).toEqual(bodies.map(() => '/webhooks/line/demo/shop'));
    for (const [i, request] of received.entries()) {
      expect(JSON.parse(request.body.toString('utf8'))).toEqual(bodies[i]);
      expect(request.headers['x-line-signature']).toBe(lineSignature(channelSecret, request.body));
    }
  });
});

describe('albumflow send --line --now', { timeout: 60_000 }, () => {
  it("moves every event's timestamp by one amount so that the latest is now, and signs the bodies as sent", async () => {
    received.splice(0);
    const before = Date.now();
    const run = await runCli(['send', '--line', exampleImageSetFile, '--channel', 'shop', '--url', albumflowUrl, '--now'], env());
    expect(run.code, run.stderr).toBe(0);
    const bodies = lineBodies(exampleImageSetFile);
    const sent = received.map((request) => JSON.parse(request.body.toString('utf8')) as (typeof bodies)[number]);
    const times = (list: typeof bodies) => list.flatMap((body) => body.events.map((event) => event.timestamp as number));
    const latest = Math.max(...times(sent));
    expect(latest).toBeGreaterThanOrEqual(before);
    expect(latest).toBeLessThanOrEqual(Date.now());
    const by = times(sent)[0]! - times(bodies)[0]!;
    expect(times(sent)).toEqual(times(bodies).map((time) => time + by));
    for (const body of sent) for (const event of body.events) event.timestamp = (event.timestamp as number) - by;
    expect(sent).toEqual(bodies);
    for (const request of received) expect(request.headers['x-line-signature']).toBe(lineSignature(channelSecret, request.body));
  });
});

describe('albumflow line set-webhook', { timeout: 60_000 }, () => {
  it('sets the endpoint with the channel access token', async () => {
    const run = await runCli(['line', 'set-webhook', '--channel', 'shop', '--public-url', 'https://albumflow.example.com/'], env());
    expect(run.code, run.stderr).toBe(0);
    expect(api.endpoints.get(channelAccessToken)).toEqual(['https://albumflow.example.com/webhooks/line/demo/shop']);
    expect(run.stdout).toContain('https://albumflow.example.com/webhooks/line/demo/shop');
    expect(run.stdout + run.stderr).not.toContain(channelAccessToken);
  });

  it('with --print shows the call without the token, and makes none', async () => {
    const before = api.calls('webhookEndpoint').length;
    const run = await runCli(['line', 'set-webhook', '--channel', 'shop', '--public-url', 'https://a.example', '--print'], env());
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`PUT ${api.url}/v2/bot/channel/webhook/endpoint`);
    expect(run.stdout).toContain('authorization: Bearer <LINE_CHANNELS["demo"]["shop"].channelAccessToken>');
    expect(run.stdout).toContain('"endpoint": "https://a.example/webhooks/line/demo/shop"');
    expect(run.stdout).not.toContain(channelAccessToken);
    expect(api.calls('webhookEndpoint').length).toBe(before);
  });

  it('says what LINE refused, and names a channel LINE_CHANNELS lacks', async () => {
    const refused = await runCli(['line', 'set-webhook', '--channel', 'shop', '--public-url', 'http://not-https.example'], env());
    expect([refused.code, refused.stderr]).toEqual([1, expect.stringContaining('HTTP 400 Invalid webhook endpoint URL')]);
    const unknown = await runCli(['line', 'set-webhook', '--channel', 'other', '--public-url', 'https://a.example'], env());
    expect(unknown.stderr).toContain('LINE_CHANNELS has no channel "other" in workspace "demo"');
  });
});
