import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PlatformApiError, type OpenedFile } from '../../src/platforms/api.js';
import { cloudDownloadLimitBytes, createBotApi, type BotApi } from '../../src/platforms/telegram/bot-api.js';
import { readUpdateTypes } from '../../src/platforms/telegram/parse.js';
import { startFakeBotApi, type FakeBotApi } from '../harness/servers/fake-bot-api.js';

const token = '7000000001:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw';
const secretPart = token.split(':')[1]!;
const otherToken = '7000000002:BBHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw';
const photo = Buffer.from('a photo of the lake');

/** Every error message any test saw: none may hold the token. */
const errorMessages: string[] = [];

async function bytes(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}

async function content(download: OpenedFile): Promise<Buffer> {
  if (download.status !== 'ready') throw new Error(`expected a file, got ${JSON.stringify(download)}`);
  return bytes(download.stream);
}

async function failure(promise: Promise<unknown>): Promise<PlatformApiError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(PlatformApiError);
    errorMessages.push((err as Error).message, String((err as Error).stack));
    return err as PlatformApiError;
  }
  throw new Error('expected a PlatformApiError');
}

describe('Bot API client against the fake Bot API', () => {
  let fake: FakeBotApi;
  let api: BotApi;

  beforeAll(async () => {
    fake = await startFakeBotApi();
    api = createBotApi({ apiRoot: fake.url, token });
  });
  afterEach(() => fake.requests.splice(0));
  afterAll(async () => {
    await fake.close();
    expect(errorMessages.length).toBeGreaterThan(5);
    for (const message of errorMessages) expect(message).not.toContain(secretPart);
  });

  it('downloads a file: getFile with the token in the path only, then the file at /file/bot<token>/<file_path>', async () => {
    fake.addFile(token, 'photo-1', { content: photo });
    const download = await api.openFile({ fileId: 'photo-1', declaredSize: photo.length });
    expect(download).toMatchObject({ status: 'ready', contentLength: photo.length, contentType: 'application/octet-stream' });
    expect(await content(download)).toEqual(photo);

    const [getFile, file] = fake.requests;
    expect(getFile).toMatchObject({ method: 'POST', path: `/bot${token}/getFile`, body: JSON.stringify({ file_id: 'photo-1' }) });
    expect(file).toMatchObject({ method: 'GET', path: `/file/bot${token}/documents/file_1` });
    for (const request of fake.requests) {
      expect(request.body).not.toContain(secretPart);
      expect(JSON.stringify(request.headers)).not.toContain(secretPart);
    }
  });

  it('asks getFile again on every call, so an expired path is never reused', async () => {
    fake.addFile(token, 'once', { content: photo, expireAfterOneUse: true });
    expect(await content(await api.openFile({ fileId: 'once', declaredSize: null }))).toEqual(photo);
    const usedPath = fake.calls('file')[0]!.path;
    expect((await fetch(`${fake.url}${usedPath}`)).status).toBe(404);

    expect(await content(await api.openFile({ fileId: 'once', declaredSize: null }))).toEqual(photo);
    expect(fake.calls('getFile')).toHaveLength(2);
    const paths = fake.calls('file').map((request) => request.path);
    expect(paths).toHaveLength(3);
    expect(paths[2]).not.toBe(usedPath);
  });

  it('an expired path met after getFile is retryable: the next attempt asks again', async () => {
    fake.addFile(token, 'expiring', { content: photo });
    fake.failNext('file', { status: 404, body: { ok: false, error_code: 404, description: 'Not Found' } });
    const error = await failure(api.openFile({ fileId: 'expiring', declaredSize: null }));
    expect(error).toMatchObject({ retryable: true, message: 'file download: HTTP 404 (the file path expired or is unknown)' });
    expect(await content(await api.openFile({ fileId: 'expiring', declaredSize: null }))).toEqual(photo);
  });

  it('a transfer that breaks before the caller reads fails that read, and throws nothing elsewhere', async () => {
    const big = Buffer.alloc(4096, 1);
    fake.addFile(token, 'broken', { content: big });
    fake.failNext('file', { cutShort: true });
    const download = await api.openFile({ fileId: 'broken', declaredSize: null });
    // The caller opens its file first: the connection is gone by the time it reads. Nothing listened to the
    // stream meanwhile, and an error emitted then would be an uncaught exception (the run would report it).
    await new Promise((resolve) => setTimeout(resolve, 200));
    await expect(content(download)).rejects.toThrow('terminated');
  });

  it('"file is too big" makes the attachment unavailable with that reason, and nothing is fetched', async () => {
    fake.addFile(token, 'huge', { content: photo, tooBig: true });
    const download = await api.openFile({ fileId: 'huge', declaredSize: null });
    expect(download).toEqual({
      status: 'unavailable',
      reason: expect.stringContaining('getFile: Bad Request: file is too big') as unknown,
    });
    expect(fake.calls('file')).toEqual([]);
  });

  it('a declared size over 20 MB is unavailable from the cloud Bot API without asking it', async () => {
    const cloud = createBotApi({ apiRoot: 'https://api.telegram.org', token });
    const download = await cloud.openFile({ fileId: 'anything', declaredSize: cloudDownloadLimitBytes + 1 });
    expect(download).toMatchObject({
      status: 'unavailable',
      reason: expect.stringContaining(`declares ${cloudDownloadLimitBytes + 1} bytes`) as unknown,
    });
  });

  it('another API root (a local Bot API server) is asked about any size', async () => {
    fake.addFile(token, 'big-but-local', { content: photo });
    expect(await content(await api.openFile({ fileId: 'big-but-local', declaredSize: cloudDownloadLimitBytes * 3 }))).toEqual(photo);
  });

  it('a transient failure is retryable once and the next call succeeds', async () => {
    fake.addFile(token, 'flaky', { content: photo });
    fake.failNext('getFile', { status: 500, body: { ok: false, error_code: 500, description: 'Internal Server Error' } });
    expect(await failure(api.openFile({ fileId: 'flaky', declaredSize: null }))).toMatchObject({
      retryable: true,
      message: 'getFile: 500 Internal Server Error',
    });
    fake.failNext('file', { status: 502, body: '<html>Bad Gateway</html>' });
    expect(await failure(api.openFile({ fileId: 'flaky', declaredSize: null }))).toMatchObject({
      retryable: true,
      message: 'file download: HTTP 502',
    });
    expect(await content(await api.openFile({ fileId: 'flaky', declaredSize: null }))).toEqual(photo);
    expect(fake.calls('getFile')).toHaveLength(3);
  });

  it('throttling is retryable and says how long to wait', async () => {
    fake.addFile(token, 'busy', { content: photo });
    fake.failNext('getFile', {
      status: 429,
      body: { ok: false, error_code: 429, description: 'Too Many Requests: retry after 7', parameters: { retry_after: 7 } },
    });
    expect(await failure(api.openFile({ fileId: 'busy', declaredSize: null }))).toMatchObject({
      retryable: true,
      message: 'getFile: 429 Too Many Requests: retry after 7; retry after 7 s',
    });
  });

  it('a body that is not a Bot API answer is judged by its status', async () => {
    fake.failNext('getFile', { status: 503, body: 'Service Unavailable' });
    expect(await failure(api.openFile({ fileId: 'x', declaredSize: null }))).toMatchObject({
      retryable: true,
      message: expect.stringContaining('HTTP 503 without a Bot API body') as unknown,
    });
    fake.failNext('getFile', { status: 200, body: 'hello' });
    expect(await failure(api.openFile({ fileId: 'x', declaredSize: null }))).toMatchObject({ retryable: false });
  });

  it('a refused token, an unknown file id or an unusable file_path fails for good, never naming the token', async () => {
    const stranger = createBotApi({ apiRoot: fake.url, token: '7000000009:ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ' });
    const refused = await failure(stranger.openFile({ fileId: 'photo-1', declaredSize: null }));
    expect(refused).toMatchObject({ retryable: false, message: "getFile: the Bot API refused the bot's token (401 Unauthorized)" });
    expect(refused.message).not.toContain('ZZZZ');

    expect(await failure(api.openFile({ fileId: 'no-such-file', declaredSize: null }))).toMatchObject({
      retryable: false,
      message: 'getFile: 400 Bad Request: invalid file_id',
    });
    fake.failNext('getFile', {
      status: 400,
      body: { ok: false, error_code: 400, description: 'Bad Request: wrong file_id or the file is temporarily unavailable' },
    });
    expect(await failure(api.openFile({ fileId: 'photo-1', declaredSize: null }))).toMatchObject({ retryable: true });

    fake.addFile(token, 'escape', { content: photo, filePath: `../bot${token}/getMe` });
    expect(await failure(api.openFile({ fileId: 'escape', declaredSize: null }))).toMatchObject({ retryable: false });
    expect(fake.calls('file')).toEqual([]);
  });

  it('a Bot API server that echoes the token gets it scrubbed from the error', async () => {
    fake.failNext('getFile', {
      status: 400,
      body: { ok: false, error_code: 400, description: `Bad Request: bot${token} and ${encodeURIComponent(token)}` },
    });
    const error = await failure(api.openFile({ fileId: 'x', declaredSize: null }));
    expect(error.message).toBe('getFile: 400 Bad Request: bot7000000001:[redacted] and 7000000001%3A[redacted]');
  });

  it('an unreachable or silent Bot API is retryable; the caller can abort', async () => {
    const closed = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as net.AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    const nowhere = createBotApi({ apiRoot: `http://127.0.0.1:${closed}`, token });
    expect(await failure(nowhere.openFile({ fileId: 'x', declaredSize: null }))).toMatchObject({
      retryable: true,
      message: `getFile: cannot reach 127.0.0.1:${closed} (ECONNREFUSED)`,
    });

    fake.failNext('getFile', { hang: true });
    const impatient = createBotApi({ apiRoot: fake.url, token, callTimeoutMs: 200 });
    expect(await failure(impatient.openFile({ fileId: 'x', declaredSize: null }))).toMatchObject({
      retryable: true,
      message: expect.stringContaining('no answer from 127.0.0.1') as unknown,
    });

    fake.failNext('getFile', { hang: true });
    const cancelled = new AbortController();
    const pending = api.openFile({ fileId: 'x', declaredSize: null }, cancelled.signal);
    const reason = new Error('activity cancelled');
    cancelled.abort(reason);
    await expect(pending).rejects.toBe(reason);
  });

  it('setWebhook sends the URL, the secret token and allowed_updates, and answers the description', async () => {
    const description = await api.setWebhook({
      url: 'https://albumflow.example.com/webhooks/telegram/demo/shop',
      secretToken: 'S3cret_token-1',
      allowedUpdates: readUpdateTypes,
    });
    expect(description).toBe('Webhook was set');
    expect(fake.webhooks.get(token)?.at(-1)).toEqual({
      url: 'https://albumflow.example.com/webhooks/telegram/demo/shop',
      secret_token: 'S3cret_token-1',
      allowed_updates: [
        'message',
        'channel_post',
        'business_message',
        'edited_message',
        'edited_channel_post',
        'edited_business_message',
        'deleted_business_messages',
      ],
    });
    expect(await failure(api.setWebhook({ url: 'https://x.example', secretToken: 'bad token!', allowedUpdates: [] }))).toMatchObject({
      retryable: false,
      message: 'setWebhook: 400 Bad Request: secret token contains unallowed characters',
    });
    expect(fake.webhooks.has(otherToken)).toBe(false);
  });
});

describe('Bot API client against a local Bot API server (--local)', () => {
  let fake: FakeBotApi;
  let dir: string;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-local-bot-api-'));
    fake = await startFakeBotApi({ localDir: dir });
  });
  afterAll(async () => {
    await fake.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('reads the absolute file_path from disk: that server serves no files over HTTP', async () => {
    const api = createBotApi({ apiRoot: fake.url, token });
    fake.addFile(token, 'video', { content: photo });
    const download = await api.openFile({ fileId: 'video', declaredSize: cloudDownloadLimitBytes * 2 });
    expect(download).toMatchObject({ status: 'ready', contentLength: photo.length, contentType: null });
    expect(await content(download)).toEqual(photo);
    expect(fake.calls('getFile')).toHaveLength(1);
    expect(fake.calls('file')).toEqual([]);
  });

  it('a path it cannot read fails for good, and the path (which holds the token) is not in the message', async () => {
    const api = createBotApi({ apiRoot: fake.url, token });
    fake.addFile(token, 'gone', { content: photo, filePath: path.join(dir, token, 'documents', 'missing') });
    const error = await failure(api.openFile({ fileId: 'gone', declaredSize: null }));
    expect(error).toMatchObject({ retryable: false, message: expect.stringContaining('not readable here (ENOENT)') as unknown });
    fake.addFile(token, 'a-directory', { content: photo, filePath: path.join(dir, token) });
    expect((await failure(api.openFile({ fileId: 'a-directory', declaredSize: null }))).message).toContain('(ENOTFILE)');
  });
});
