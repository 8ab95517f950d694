import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/common/paths.js';
import { runCli, type CliRun } from '../harness/cli.js';
import { startFakeBotApi, type FakeBotApi } from '../harness/servers/fake-bot-api.js';

// The Telegram commands of the CLI, run as users run it. `send --telegram` goes to a recording HTTP
// server standing in for albumflow's Telegram route; `telegram set-webhook` to the fake Bot API.

const token = '7000000001:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw';
const secretPart = token.split(':')[1]!;
const secretToken = 'S3cret_token-1';
const telegramBots = JSON.stringify({ demo: { shop: { token, secretToken } } });
const fixtures = path.join(projectRoot, 'test/fixtures/telegram');

interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

let albumflowServer: http.Server;
let albumflowUrl: string;
const received: Received[] = [];
/** What the stand-in answers next (then 200 with an empty body, as albumflow answers Telegram). */
const answers: Array<{ status: number; body: string }> = [];
let botApi: FakeBotApi;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-telegram-cli-'));

beforeAll(async () => {
  albumflowServer = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ path: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks) });
      const answer = answers.shift() ?? { status: 200, body: '' };
      response.writeHead(answer.status, answer.body ? { 'content-type': 'application/json' } : {});
      response.end(answer.body);
    });
  });
  await new Promise<void>((resolve) => albumflowServer.listen(0, '127.0.0.1', resolve));
  albumflowUrl = `http://127.0.0.1:${(albumflowServer.address() as AddressInfo).port}`;
  botApi = await startFakeBotApi();
  botApi.addBot(token);
});

afterEach(() => {
  received.splice(0);
  botApi.requests.splice(0);
});

afterAll(async () => {
  await new Promise<void>((resolve) => albumflowServer.close(() => resolve()));
  await botApi.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

function readUpdates(name: string): Array<Record<string, unknown>> {
  return JSON.parse(fs.readFileSync(path.join(fixtures, name), 'utf8')) as Array<Record<string, unknown>>;
}

/** The date and edit_date fields of an Update's message. */
function datesOf(update: Record<string, unknown>): Array<[Record<string, unknown>, 'date' | 'edit_date']> {
  const message = Object.values(update).find((value): value is Record<string, unknown> => typeof value === 'object' && value !== null);
  return message === undefined ? [] : (['date', 'edit_date'] as const).filter((field) => field in message).map((field) => [message, field]);
}

function albumflow(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return runCli(args, { ALBUMFLOW_URL: albumflowUrl, TELEGRAM_BOTS: telegramBots, TELEGRAM_API_ROOT: botApi.url, ...env });
}

// Each run starts a Node process that compiles the CLI: seconds, not the unit default of 5 s.
describe('albumflow send --telegram', { timeout: 60_000 }, () => {
  it('posts each Update of a list in order, with the bot secret token from TELEGRAM_BOTS', async () => {
    const file = path.join(fixtures, 'photo-album.json');
    const result = await albumflow(['send', '--telegram', file, '--workspace', 'demo', '--bot', 'shop']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout.trim().split('\n')).toEqual(['200 update_id 810000001', '200 update_id 810000002', '200 update_id 810000003']);

    const updates = JSON.parse(fs.readFileSync(file, 'utf8')) as unknown[];
    expect(received.map((r) => r.path)).toEqual(Array(3).fill('/webhooks/telegram/demo/shop'));
    expect(received.map((r) => JSON.parse(r.body.toString()) as unknown)).toEqual(updates);
    for (const r of received) {
      expect(r.headers['x-telegram-bot-api-secret-token']).toBe(secretToken);
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.body.toString()).not.toContain(secretPart);
    }
  });

  it('sends a file holding one Update byte for byte; --secret overrides TELEGRAM_BOTS', async () => {
    const file = path.join(tmp, 'one.json');
    fs.writeFileSync(file, '{ "update_id": 5,  "message": {"message_id": 1} }\n');
    const result = await albumflow(['send', '--telegram', file, '--workspace', 'other ws', '--bot', 'b/1', '--secret', 'given']);
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe('200 update_id 5');
    expect(received[0]!.path).toBe('/webhooks/telegram/other%20ws/b%2F1');
    expect(received[0]!.body.toString()).toBe(fs.readFileSync(file, 'utf8'));
    expect(received[0]!.headers['x-telegram-bot-api-secret-token']).toBe('given');
  });

  it('with --now, moves every date and edit_date of the file by one amount so that the latest is now', async () => {
    const updates = [...readUpdates('photo-album.json'), ...readUpdates('edited-caption.json')];
    const file = path.join(tmp, 'album-and-edit.json');
    fs.writeFileSync(file, JSON.stringify(updates));
    const before = Math.floor(Date.now() / 1000);
    const result = await albumflow(['send', '--telegram', file, '--workspace', 'demo', '--bot', 'shop', '--now']);
    expect(result.code, result.stderr).toBe(0);
    const sent = received.map((r) => JSON.parse(r.body.toString()) as Record<string, unknown>);
    const latest = Math.max(...sent.flatMap((update) => datesOf(update).map(([message, field]) => message[field] as number)));
    expect(latest).toBeGreaterThanOrEqual(before);
    expect(latest).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
    // Moved back by one amount, every Update is the file's again.
    const by = (datesOf(sent[0]!)[0]![0].date as number) - (datesOf(updates[0]!)[0]![0].date as number);
    for (const update of sent) for (const [message, field] of datesOf(update)) message[field] = (message[field] as number) - by;
    expect(sent).toEqual(updates);
    expect(datesOf(updates[3]!).map(([, field]) => field)).toEqual(['date', 'edit_date']);
  });

  it('stops at the first refused Update and says which', async () => {
    answers.push(
      { status: 200, body: '' },
      { status: 401, body: JSON.stringify({ error: { code: 'invalid_secret_token', message: 'wrong secret token' } }) },
    );
    const result = await albumflow(['send', '--telegram', path.join(fixtures, 'photo-album.json'), '--bot', 'shop', '--workspace', 'demo']);
    expect(result.code).toBe(1);
    expect(result.stdout.trim()).toBe('200 update_id 810000001');
    expect(result.stderr.trim()).toBe('albumflow: 401 invalid_secret_token: wrong secret token (update_id 810000002)');
    expect(received).toHaveLength(2);
  });

  it('needs --bot, and says when albumflow is unreachable', async () => {
    const noBot = await albumflow(['send', '--telegram', path.join(fixtures, 'text-message.json')]);
    expect(noBot.code).toBe(2);
    expect(noBot.stderr).toContain('--bot <name> is needed');
    const down = await albumflow(['send', '--telegram', path.join(fixtures, 'text-message.json'), '--bot', 'shop'], {
      ALBUMFLOW_URL: 'http://127.0.0.1:9',
    });
    expect(down.code).toBe(1);
    expect(down.stderr).toContain('cannot reach albumflow at http://127.0.0.1:9');
  });
});

describe('albumflow telegram set-webhook', { timeout: 60_000 }, () => {
  const args = ['telegram', 'set-webhook', '--workspace', 'demo', '--bot', 'shop', '--public-url', 'https://albumflow.example.com/'];
  const allowedUpdates = [
    'message',
    'channel_post',
    'business_message',
    'edited_message',
    'edited_channel_post',
    'edited_business_message',
    'deleted_business_messages',
  ];

  it('makes the setWebhook call with the secret token and allowed_updates', async () => {
    const result = await albumflow(args);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Webhook was set: bot 7000000001 (TELEGRAM_BOTS["demo"]["shop"]) now posts message, channel_post');
    expect(botApi.webhooks.get(token)?.at(-1)).toEqual({
      url: 'https://albumflow.example.com/webhooks/telegram/demo/shop',
      secret_token: secretToken,
      allowed_updates: allowedUpdates,
    });
    expect(botApi.calls('setWebhook', token)).toHaveLength(1);
    expect(result.stdout + result.stderr).not.toContain(secretPart);
    expect(result.stdout + result.stderr).not.toContain(secretToken);
  });

  it('--print shows the call without its token and secret token, and sends nothing', async () => {
    const result = await albumflow([...args, '--print']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`POST ${botApi.url}/bot<TELEGRAM_BOTS["demo"]["shop"].token>/setWebhook`);
    const json = result.stdout.slice(result.stdout.indexOf('{'));
    expect(JSON.parse(json)).toEqual({
      url: 'https://albumflow.example.com/webhooks/telegram/demo/shop',
      secret_token: '<TELEGRAM_BOTS["demo"]["shop"].secretToken>',
      allowed_updates: allowedUpdates,
    });
    expect(result.stdout).not.toContain(secretPart);
    expect(result.stdout).not.toContain(secretToken);
    expect(botApi.requests).toEqual([]);
  });

  it('prints the call to make when the Bot API is unreachable', async () => {
    const result = await albumflow(args, { TELEGRAM_API_ROOT: 'http://127.0.0.1:9' });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('setWebhook: cannot reach 127.0.0.1:9');
    expect(result.stderr).toContain('POST http://127.0.0.1:9/bot<TELEGRAM_BOTS["demo"]["shop"].token>/setWebhook');
    expect(result.stderr).not.toContain(secretPart);
  });

  it('refuses an unknown bot, a missing public URL and an invalid TELEGRAM_BOTS', async () => {
    const [unknown, noUrl, invalid, refused] = await Promise.all([
      albumflow(['telegram', 'set-webhook', '--bot', 'nope', '--workspace', 'demo', '--public-url', 'https://x.example']),
      albumflow(['telegram', 'set-webhook', '--bot', 'shop', '--workspace', 'demo']),
      albumflow(args, { TELEGRAM_BOTS: '{"demo":{"shop":{"token":"nonsense","secretToken":"s"}}}' }),
      albumflow([...args.slice(0, -1), 'http://albumflow.example.com']),
    ]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('TELEGRAM_BOTS has no bot "nope" in workspace "demo"');
    expect(noUrl.code).toBe(2);
    expect(noUrl.stderr).toContain('--public-url <https://…> is needed');
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toContain('TELEGRAM_BOTS["demo"]["shop"].token must be a bot token');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('setWebhook: 400 Bad Request: bad webhook: An HTTPS URL must be provided for webhook');
    expect(botApi.calls('setWebhook')).toHaveLength(1);
  });
});
