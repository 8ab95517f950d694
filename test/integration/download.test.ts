import crypto from 'node:crypto';
import fs from 'node:fs';
import type { Socket } from 'node:net';
import path from 'node:path';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDownloadActivities, type DownloadOptions, type DownloadProgress } from '../../activities/download.js';
import { tempFilePrefix } from '../../src/downloads/download.js';
import { isPublicAddress, type NetworkPolicy } from '../../src/common/network-guard.js';
import type { Config } from '../../src/common/config.js';
import type { DownloadRequest, DownloadResult } from '../../src/domain/types.js';
import type { Pool } from '../../src/db/pool.js';
import type { DownloadInput } from '../../workflows/activity-types.js';
import { downloadsTotal } from '../../src/common/metrics.js';
import { eventually, storeAttachment as storeAttachmentRow } from '../harness/albums.js';
import { testConfig, testLogger, testPool } from '../harness/env.js';
import { unique } from '../harness/random.js';
import { attachments } from '../harness/rows.js';
import { sendBody, startMediaServer, type Handler, type MediaServer } from '../harness/servers/media.js';

const sha256 = (body: Buffer) => crypto.createHash('sha256').update(body).digest('hex');

const quietSdkLogger = new DefaultLogger('ERROR');

function activityEnvironment(attempt = 1, heartbeatDetails?: DownloadProgress): MockActivityEnvironment {
  return new MockActivityEnvironment({ attempt, heartbeatDetails }, { logger: quietSdkLogger });
}

type Download = ReturnType<typeof createDownloadActivities>['downloadAttachments'];

/** One attachment and the final attempt: a download activity asked for this attachment alone. */
interface OneAttachment extends DownloadRequest {
  finalAttempt: number;
}

function runBatch(env: MockActivityEnvironment, download: Download, input: DownloadInput): Promise<DownloadResult[]> {
  return env.run<[DownloadInput], DownloadResult[], Download>(download, input);
}

async function runIn(
  env: MockActivityEnvironment,
  download: Download,
  { finalAttempt, ...request }: OneAttachment,
): Promise<DownloadResult> {
  const results = await runBatch(env, download, { attachments: [request], finalAttempt });
  expect(results).toHaveLength(1);
  return results[0]!;
}

function attemptDownload(download: Download, input: OneAttachment, attempt = 1): Promise<DownloadResult> {
  return runIn(activityEnvironment(attempt), download, input);
}

async function retryableFailure(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await promise.then(
    () => expect.fail('expected the attempt to throw'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  expect((err as ApplicationFailure).nonRetryable).toBe(false);
  return err as ApplicationFailure;
}

/** The error of the one attachment a failed single-attachment attempt names. */
function attachmentError(failure: ApplicationFailure): string {
  expect(failure.message).toMatch(/^1 of 1 attachments will be tried again: .+ #0: /);
  return failure.message.slice(failure.message.indexOf(' #0: ') + ' #0: '.length);
}

async function downloadCount(outcome: string): Promise<number> {
  const metric = await downloadsTotal.get();
  return metric.values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
}

describe('downloadAttachments against a local HTTP server and the real PostgreSQL', () => {
  const maxBytes = 64 * 1024;
  const config = testConfig({ MEDIA_MAX_BYTES: String(maxBytes) });
  const tempDir = path.join(config.media.dir, '.tmp');
  let pool: Pool;
  let server: MediaServer;

  beforeAll(async () => {
    pool = testPool(config);
    server = await startMediaServer();
  });

  afterAll(async () => {
    await server.close();
    await pool.end();
    fs.rmSync(config.media.dir, { recursive: true, force: true });
  });

  function activities(overrides: { config?: Config; options?: DownloadOptions } = {}) {
    const activityConfig = overrides.config ?? config;
    return createDownloadActivities({ pool, config: activityConfig, logger: testLogger(activityConfig) }, overrides.options);
  }

  async function storeAttachment(url: string | null): Promise<{ input: OneAttachment; messagePk: string }> {
    const key = {
      workspace: unique('media-ws'),
      provider: 'whatsapp',
      accountId: 'acc_1',
      conversationId: 'conv_1',
      messageId: unique('msg'),
    };
    const messagePk = await storeAttachmentRow(pool, key, { url, kind: 'image', fileName: '../../evil.jpg' });
    return { input: { key, position: 0, finalAttempt: 3, retry: false }, messagePk };
  }

  async function attachmentState(messagePk: string) {
    const rows = await attachments.read(pool, { messagePk, position: 0 }, [
      'status',
      'attempts',
      'error',
      'bytes',
      'sha256',
      'content_type',
    ]);
    return rows[0]!;
  }

  const tempFiles = () => (fs.existsSync(tempDir) ? fs.readdirSync(tempDir) : []);

  it('streams the body to a content-addressed file and records its sha256, size and content type', async () => {
    const body = crypto.randomBytes(40_000);
    const { input, messagePk } = await storeAttachment(server.route(sendBody(body)));
    const downloadedBefore = await downloadCount('downloaded');
    const env = activityEnvironment();
    const heartbeats: unknown[] = [];
    env.on('heartbeat', (details: unknown) => heartbeats.push(details));

    const result = await runIn(env, activities().downloadAttachments, input);

    const digest = sha256(body);
    expect(result).toEqual({ status: 'downloaded', contentType: 'image/jpeg', bytes: 40_000, sha256: digest, error: null });
    const stored = path.join(config.media.dir, 'sha256', digest.slice(0, 2), digest);
    expect(fs.readFileSync(stored).equals(body)).toBe(true);
    expect(fs.readdirSync(config.media.dir).some((name) => name.includes('evil'))).toBe(false);
    expect(tempFiles()).toEqual([]);
    // A heartbeat that reaches Temporal is a billable action: an activity done within its heartbeat interval sends none.
    expect(heartbeats).toEqual([]);
    expect(await attachmentState(messagePk)).toEqual({
      status: 'downloaded',
      attempts: 1,
      error: null,
      bytes: '40000',
      sha256: digest,
      content_type: 'image/jpeg',
    });
    expect(await downloadCount('downloaded')).toBe(downloadedBefore + 1);
  });

  it('downloads one file after another from a host over one kept-alive connection', async () => {
    const ports = new Set<number>();
    const download = activities().downloadAttachments;
    for (let i = 0; i < 3; i++) {
      const body = crypto.randomBytes(5_000);
      const url = server.route((req, res, hit) => {
        ports.add(req.socket.remotePort!);
        sendBody(body)(req, res, hit);
      });
      const { input } = await storeAttachment(url);
      expect(await attemptDownload(download, input)).toMatchObject({ status: 'downloaded', sha256: sha256(body) });
    }
    expect(ports.size).toBe(1);
  });

  it('closes a kept-alive connection left idle longer than its limit, and the next download connects anew', async () => {
    const download = activities({ options: { limits: { keptAliveIdleMs: 200 } } }).downloadAttachments;
    const sockets: Socket[] = [];
    const body = crypto.randomBytes(5_000);
    const url = server.route((req, res, hit) => {
      sockets.push(req.socket);
      sendBody(body)(req, res, hit);
    });
    const { input } = await storeAttachment(url);
    const started = Date.now();
    expect(await attemptDownload(download, input)).toMatchObject({ status: 'downloaded' });
    const first = sockets[0]!;
    // The media server would keep it for Node's default 5 s: a close this soon is the worker's.
    await eventually(() => expect(first.destroyed).toBe(true), 2_000);
    expect(Date.now() - started).toBeLessThan(4_000);

    const again = await storeAttachment(url);
    expect(await attemptDownload(download, again.input)).toMatchObject({ status: 'downloaded' });
    expect(sockets[1]!.remotePort).not.toBe(first.remotePort);
  });

  it('does not fetch a downloaded attachment again while its file exists', async () => {
    const body = crypto.randomBytes(1000);
    const url = server.route(sendBody(body));
    const { input, messagePk } = await storeAttachment(url);
    const download = activities().downloadAttachments;

    const first = await attemptDownload(download, input);
    const second = await attemptDownload(download, input);

    expect(second).toEqual(first);
    expect(server.hits(url)).toBe(1);
    expect((await attachmentState(messagePk)).attempts).toBe(1);

    fs.rmSync(path.join(config.media.dir, 'sha256', first.sha256!.slice(0, 2), first.sha256!));
    const third = await attemptDownload(download, input);
    expect(third).toEqual(first);
    expect(server.hits(url)).toBe(2);
  });

  it.each([401, 403, 404, 410])('marks HTTP %i as expired after exactly one request, and keeps it so', async (status) => {
    const url = server.route((_req, res) => res.writeHead(status).end());
    const { input, messagePk } = await storeAttachment(url);
    const download = activities().downloadAttachments;

    const result = await attemptDownload(download, input);
    expect(result).toEqual({ status: 'expired', contentType: null, bytes: null, sha256: null, error: `HTTP ${status}` });
    expect(server.hits(url)).toBe(1);

    await expect(attemptDownload(download, input, 2)).resolves.toEqual(result);
    expect(server.hits(url)).toBe(1);
    expect(await attachmentState(messagePk)).toMatchObject({ status: 'expired', attempts: 1, error: `HTTP ${status}` });
  });

  it('retries an HTTP 500 and succeeds on the next attempt', async () => {
    const body = crypto.randomBytes(5000);
    const url = server.route((req, res, hit) => (hit === 1 ? res.writeHead(500).end() : sendBody(body)(req, res, hit)));
    const { input, messagePk } = await storeAttachment(url);
    const download = activities().downloadAttachments;

    const failure = await retryableFailure(attemptDownload(download, input));
    expect(attachmentError(failure)).toBe('HTTP 500');
    expect(await attachmentState(messagePk)).toMatchObject({ status: 'pending', attempts: 1, error: 'HTTP 500' });

    const result = await attemptDownload(download, input, 2);
    expect(result).toMatchObject({ status: 'downloaded', sha256: sha256(body), bytes: 5000 });
    expect(await attachmentState(messagePk)).toMatchObject({ status: 'downloaded', attempts: 2, error: null });
    expect(server.hits(url)).toBe(2);
  });

  it.each([502, 503, 408, 429])('treats HTTP %i as transient', async (status) => {
    const url = server.route((_req, res) => res.writeHead(status).end());
    const { input } = await storeAttachment(url);
    const failure = await retryableFailure(attemptDownload(activities().downloadAttachments, input));
    expect(attachmentError(failure)).toBe(`HTTP ${status}`);
  });

  it('records failed when the final attempt gets an HTTP 500', async () => {
    const url = server.route((_req, res) => res.writeHead(500).end());
    const { input, messagePk } = await storeAttachment(url);

    const result = await attemptDownload(activities().downloadAttachments, { ...input, finalAttempt: 3 }, 3);

    expect(result).toEqual({ status: 'failed', contentType: null, bytes: null, sha256: null, error: 'HTTP 500' });
    expect(await attachmentState(messagePk)).toMatchObject({ status: 'failed', attempts: 1, error: 'HTTP 500' });
    expect(server.hits(url)).toBe(1);
  });

  it.each([400, 418, 451])('records HTTP %i as failed without retrying', async (status) => {
    const url = server.route((_req, res) => res.writeHead(status).end());
    const { input } = await storeAttachment(url);
    await expect(attemptDownload(activities().downloadAttachments, input)).resolves.toMatchObject({
      status: 'failed',
      error: `HTTP ${status}`,
    });
  });

  it('marks an attachment without URL as unavailable without any request', async () => {
    const before = server.totalHits();
    const { input, messagePk } = await storeAttachment(null);
    const result = await attemptDownload(activities().downloadAttachments, input);
    expect(result).toMatchObject({ status: 'unavailable', bytes: null, sha256: null });
    expect((await attachmentState(messagePk)).status).toBe('unavailable');
    expect(server.totalHits()).toBe(before);
  });

  it('refuses a body whose Content-Length is over MEDIA_MAX_BYTES before reading it', async () => {
    const url = server.route((_req, res) => {
      res.writeHead(200, { 'content-length': maxBytes + 1 });
      res.write(Buffer.alloc(10));
    });
    const { input, messagePk } = await storeAttachment(url);
    const download = activities({ options: { limits: { idleTimeoutMs: 5000 } } }).downloadAttachments;

    const result = await attemptDownload(download, input);

    expect(result).toMatchObject({ status: 'failed', error: `the file is larger than MEDIA_MAX_BYTES (${maxBytes} bytes)` });
    expect((await attachmentState(messagePk)).status).toBe('failed');
    expect(tempFiles()).toEqual([]);
  });

  it('stops a chunked body without Content-Length as soon as it passes MEDIA_MAX_BYTES', async () => {
    const chunk = crypto.randomBytes(16 * 1024);
    const url = server.route((_req, res) => {
      res.writeHead(200, { 'content-type': 'video/mp4' });
      for (let i = 0; i < 8; i++) res.write(chunk);
      res.end();
    });
    const { input } = await storeAttachment(url);

    const result = await attemptDownload(activities().downloadAttachments, input);

    expect(result).toMatchObject({ status: 'failed', error: `the file is larger than MEDIA_MAX_BYTES (${maxBytes} bytes)` });
    expect(tempFiles()).toEqual([]);
  });

  it('retries a body cut short by the server, leaving no partial file', async () => {
    const url = server.route((_req, res) => {
      res.writeHead(200, { 'content-length': 10_000 });
      res.write(crypto.randomBytes(4000), () => res.socket?.destroy());
    });
    const { input } = await storeAttachment(url);
    const failure = await retryableFailure(attemptDownload(activities().downloadAttachments, input));
    expect(attachmentError(failure)).toBe('the server closed the connection before the whole file arrived');
    expect(tempFiles()).toEqual([]);
  });

  describe('with MEDIA_ALLOW_PRIVATE_NETWORKS=false', () => {
    const guardedConfig = { ...config, media: { ...config.media, allowPrivateNetworks: false } };

    it.each([
      ['the loopback test server', (url: string) => url, /127\.0\.0\.1 is a loopback address/],
      ['the loopback test server as IPv4-mapped IPv6', (url: string) => url.replace('127.0.0.1', '[::ffff:127.0.0.1]'), /loopback/],
      ['the cloud metadata address', () => 'http://169.254.169.254/latest/meta-data/iam/', /169\.254\.169\.254 is a linkLocal address/],
      ['a private address', () => 'http://10.0.0.8/photo.jpg', /10\.0\.0\.8 is a private address/],
      ['a CGNAT address', () => 'http://100.64.0.9/photo.jpg', /carrierGradeNat/],
      ['localhost', (url: string) => url.replace('127.0.0.1', 'localhost'), /loopback address/],
      ['a non-http scheme', () => 'file:///etc/passwd', /only http and https URLs are fetched/],
    ])('refuses %s without connecting and without retrying', async (_name, target, message) => {
      const served = server.route(sendBody(Buffer.from('secret')));
      const { input, messagePk } = await storeAttachment(target(served));
      const before = server.totalHits();

      const result = await attemptDownload(activities({ config: guardedConfig }).downloadAttachments, input);

      expect(result.status).toBe('failed');
      expect(result.error).toMatch(message);
      expect(server.totalHits()).toBe(before);
      expect(await attachmentState(messagePk)).toMatchObject({ status: 'failed', attempts: 1 });
    });
  });

  describe('redirects, vetted hop by hop', () => {
    // cdn.test and internal.test exist only in this resolver; system DNS cannot resolve them, so a
    // successful fetch also shows that the connection went to the vetted (pinned) address.
    const network: NetworkPolicy = {
      resolve: (hostname) =>
        Promise.resolve(
          hostname === 'cdn.test'
            ? [{ address: '127.0.0.1', family: 4 }]
            : hostname === 'internal.test'
              ? [{ address: '10.20.30.40', family: 4 }]
              : [],
        ),
      permits: (address) => address === '127.0.0.1' || isPublicAddress(address),
    };
    const viaCdn = (url: string) => url.replace('127.0.0.1', 'cdn.test');
    const redirectTo =
      (location: string): Handler =>
      (_req, res) =>
        res.writeHead(302, { location }).end();

    it('follows relative and absolute redirects on allowed hosts', async () => {
      const body = crypto.randomBytes(3000);
      const file = server.route(sendBody(body));
      const second = server.route(redirectTo(new URL(file).pathname));
      const first = server.route(redirectTo(viaCdn(second)));
      const { input } = await storeAttachment(viaCdn(first));

      const result = await attemptDownload(activities({ options: { network } }).downloadAttachments, input);

      expect(result).toMatchObject({ status: 'downloaded', sha256: sha256(body) });
      expect([server.hits(first), server.hits(second), server.hits(file)]).toEqual([1, 1, 1]);
    });

    it('refuses a redirect from an allowed host to a private address', async () => {
      const first = server.route(redirectTo('http://internal.test/admin'));
      const { input } = await storeAttachment(viaCdn(first));

      const result = await attemptDownload(activities({ options: { network } }).downloadAttachments, input);

      expect(result.status).toBe('failed');
      expect(result.error).toMatch(/internal\.test: 10\.20\.30\.40 is a private address/);
      expect(server.hits(first)).toBe(1);
    });

    it('refuses a redirect to a literal loopback address when only the first host is allowed', async () => {
      const target = server.route(sendBody(Buffer.from('internal')));
      const first = server.route(redirectTo(target.replace('127.0.0.1', '[::1]')));
      const { input } = await storeAttachment(viaCdn(first));

      const result = await attemptDownload(activities({ options: { network } }).downloadAttachments, input);

      expect(result.status).toBe('failed');
      expect(result.error).toMatch(/::1 is a loopback address/);
      expect(server.hits(target)).toBe(0);
    });

    it('gives up after 5 redirects', async () => {
      let loop = '';
      loop = server.route((_req, res) => res.writeHead(307, { location: viaCdn(loop) }).end());
      const { input } = await storeAttachment(viaCdn(loop));

      const result = await attemptDownload(activities({ options: { network } }).downloadAttachments, input);

      expect(result).toMatchObject({ status: 'failed', error: 'more than 5 redirects' });
      expect(server.hits(loop)).toBe(6);
    });
  });

  describe('interrupted attempts', () => {
    /** Sends the first 1,000 bytes and then nothing; without `declaredBytes`, no Content-Length (a chunked body). */
    const stalling =
      (declaredBytes: number | null): Handler =>
      (_req, res) => {
        res.writeHead(200, declaredBytes === null ? {} : { 'content-length': declaredBytes });
        res.write(crypto.randomBytes(1000));
      };

    async function partialFileWritten(): Promise<void> {
      while (tempFiles().length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    }

    it.each([
      { kept: 'keeps nothing of a file announced small enough to be held in memory', declared: true },
      { kept: 'cleans up the partial file of a body that does not announce its size (it is spooled)', declared: false },
    ])('$kept when the attempt is cancelled mid-body, and a later attempt stores it', async ({ declared }) => {
      const body = crypto.randomBytes(20_000);
      const firstAnswer = stalling(declared ? body.length : null);
      const url = server.route((req, res, hit) => (hit === 1 ? firstAnswer(req, res, hit) : sendBody(body)(req, res, hit)));
      const { input, messagePk } = await storeAttachment(url);
      const download = activities().downloadAttachments;

      const env = activityEnvironment(1);
      const running = runIn(env, download, input);
      if (declared) {
        while (server.hits(url) === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      } else {
        await partialFileWritten();
        expect(tempFiles()).toHaveLength(1);
      }

      env.cancel();
      await expect(running).rejects.toBeInstanceOf(CancelledFailure);
      expect(tempFiles()).toEqual([]);
      expect(await attachmentState(messagePk)).toMatchObject({ status: 'pending', attempts: 0 });

      const result = await attemptDownload(download, input, 2);
      expect(result).toMatchObject({ status: 'downloaded', sha256: sha256(body), bytes: body.length });
      expect(server.hits(url)).toBe(2);
      expect(tempFiles()).toEqual([]);
    });

    it('abandons a stalled server after the idle limit and retries', async () => {
      const url = server.route(stalling(50_000));
      const { input, messagePk } = await storeAttachment(url);
      const download = activities({ options: { limits: { idleTimeoutMs: 300 } } }).downloadAttachments;

      const failure = await retryableFailure(attemptDownload(download, input));

      expect(attachmentError(failure)).toBe('127.0.0.1 sent nothing for 0.3 s');
      expect(tempFiles()).toEqual([]);
      expect(await attachmentState(messagePk)).toMatchObject({ status: 'pending', attempts: 1, error: attachmentError(failure) });
    });

    it('removes partial files a crashed worker left for the attachment on the next attempt, keeping recent ones', async () => {
      const body = crypto.randomBytes(2000);
      const { input, messagePk } = await storeAttachment(server.route(sendBody(body)));
      fs.mkdirSync(tempDir, { recursive: true });
      const abandoned = path.join(tempDir, `${tempFilePrefix(messagePk, 0)}abandoned.part`);
      const recent = path.join(tempDir, `${tempFilePrefix(messagePk, 0)}recent.part`);
      const otherAttachment = path.join(tempDir, `${tempFilePrefix(messagePk, 1)}abandoned.part`);
      for (const file of [abandoned, recent, otherAttachment]) fs.writeFileSync(file, 'partial');
      const anHourAgo = new Date(Date.now() - 3_600_000);
      fs.utimesSync(abandoned, anHourAgo, anHourAgo);
      fs.utimesSync(otherAttachment, anHourAgo, anHourAgo);

      try {
        // The attempt after the crash: a crash fails the attempt it happened in, so the next one has a higher number.
        await expect(attemptDownload(activities().downloadAttachments, input, 2)).resolves.toMatchObject({ status: 'downloaded' });
        expect(fs.existsSync(abandoned)).toBe(false);
        expect(fs.existsSync(recent)).toBe(true);
        expect(fs.existsSync(otherAttachment)).toBe(true);
      } finally {
        fs.rmSync(recent, { force: true });
        fs.rmSync(otherAttachment, { force: true });
      }
    });
  });

  it('settles an attachment that is not stored as failed, without a request', async () => {
    const { input } = await storeAttachment(null);
    const hitsBefore = server.totalHits();
    const result = await attemptDownload(activities().downloadAttachments, { ...input, position: 7 });
    expect(result.status).toBe('failed');
    expect(result.error).toMatch(/^no attachment 7 is stored for message /);
    expect(server.totalHits()).toBe(hitsBefore);
  });

  describe('a batch of attachments in one activity', () => {
    it('reports each outcome at its place, and its retry fetches only what failed transiently', async () => {
      const bodies = [crypto.randomBytes(3000), crypto.randomBytes(4000)];
      const ok = await storeAttachment(server.route(sendBody(bodies[0]!)));
      const flaky = await storeAttachment(
        server.route((req, res, hit) => (hit === 1 ? res.writeHead(503).end() : sendBody(bodies[1]!)(req, res, hit))),
      );
      const gone = await storeAttachment(server.route((_req, res) => res.writeHead(404).end()));
      const stored = [ok, flaky, gone];
      const input: DownloadInput = { attachments: stored.map(({ input: { finalAttempt: _, ...request } }) => request), finalAttempt: 3 };
      const download = activities().downloadAttachments;

      const first = activityEnvironment(1);
      const heartbeats: DownloadProgress[] = [];
      first.on('heartbeat', (details: DownloadProgress) => heartbeats.push(structuredClone(details)));
      const failure = await retryableFailure(runBatch(first, download, input));
      expect(failure.message).toMatch(/^1 of 3 attachments will be tried again: .* #0: HTTP 503$/);
      const progress = heartbeats.at(-1)!;
      expect(progress.settled.map((result) => result?.status ?? null)).toEqual(['downloaded', null, 'expired']);

      const results = await runBatch(activityEnvironment(2, progress), download, input);
      expect(results.map((result) => result.status)).toEqual(['downloaded', 'downloaded', 'expired']);
      expect(results[1]).toMatchObject({ sha256: sha256(bodies[1]!), bytes: 4000 });
      const urls = await Promise.all(stored.map(async ({ messagePk }) => (await attachments.read(pool, { messagePk }, ['url']))[0]!.url!));
      expect(urls.map((url) => server.hits(url))).toEqual([1, 2, 1]);
    });

    it('does not fetch again an operator-retried attachment that its first attempt settled', async () => {
      const retriedUrl = server.route((_req, res) => res.writeHead(410).end());
      const retried = await storeAttachment(retriedUrl);
      await pool.query(`UPDATE attachments SET status = 'failed', error = 'HTTP 500' WHERE message_pk = $1`, [retried.messagePk]);
      const flaky = await storeAttachment(
        server.route((req, res, hit) => (hit === 1 ? res.writeHead(500).end() : sendBody(crypto.randomBytes(100))(req, res, hit))),
      );
      const input: DownloadInput = {
        attachments: [
          { key: retried.input.key, position: 0, retry: true },
          { key: flaky.input.key, position: 0, retry: false },
        ],
        finalAttempt: 3,
      };
      const download = activities().downloadAttachments;

      const first = activityEnvironment(1);
      let progress: DownloadProgress | undefined;
      first.on('heartbeat', (details: DownloadProgress) => (progress = structuredClone(details)));
      await retryableFailure(runBatch(first, download, input));
      const results = await runBatch(activityEnvironment(2, progress), download, input);

      expect(results.map((result) => result.status)).toEqual(['expired', 'downloaded']);
      expect(server.hits(retriedUrl)).toBe(1);
    });
  });
});
