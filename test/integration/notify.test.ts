import crypto from 'node:crypto';
import { Writable } from 'node:stream';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createNotifyActivities } from '../../activities/notify.js';
import type { NotifyInput, NotifyOutcome } from '../../workflows/activity-types.js';
import type { Config } from '../../src/common/config.js';
import type { Pool } from '../../src/db/pool.js';
import { notificationsTotal } from '../../src/common/metrics.js';
import { verifySignature } from '../../src/common/signature.js';
import type { AlbumView } from '../../src/domain/types.js';
import { testConfig, testPool } from '../harness/env.js';
import { unique } from '../harness/random.js';
import { startNotifyReceiver, type NotifyReceiver, type ReceivedRequest } from '../harness/servers/notify.js';

/** The NOTIFY_URL receiver; the tests check the signatures themselves. */
const startReceiver = () => startNotifyReceiver({ path: '/hooks/albumflow' });

/** A pino logger whose lines the test can read. */
function capturingLogger() {
  const lines: string[] = [];
  const logger = pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    }),
  );
  return { logger, lines };
}

const quietSdkLogger = new DefaultLogger('ERROR');

async function deliver(notifier: ReturnType<typeof createNotifyActivities>, n: TestNotification, attempt = 1): Promise<NotifyOutcome> {
  const env = new MockActivityEnvironment({ attempt }, { logger: quietSdkLogger });
  const { id, outcome } = await env.run<[NotifyInput], { id: string; outcome: NotifyOutcome }, typeof notifier.notify>(
    notifier.notify,
    n.input,
  );
  expect(id).toBe(n.id);
  return outcome;
}

interface TestNotification {
  id: string;
  input: NotifyInput;
  /** The body the receiver must get, exactly. */
  payload: unknown;
}

const attachment = (status: 'downloaded' | 'pending', sha256: string | null) => ({
  position: 0,
  status,
  contentType: sha256 ? 'image/jpeg' : null,
  bytes: sha256 ? 1234 : null,
  sha256,
  error: null,
});

/** An album.ready of two children, one with its file downloaded, whose body carries that file's `media_url`. */
function albumReady(): TestNotification {
  const workspace = unique('ws');
  const workflowId = `album:${workspace}:whatsapp:acc_1:conv_1:alb_1`;
  const id = `${workflowId}/1`;
  const sha256 = crypto.randomBytes(32).toString('hex');
  const children = [
    { messageId: 'm1', attachments: [attachment('downloaded', sha256)] },
    { messageId: 'm2', attachments: [attachment('pending', null)] },
  ];
  const album = {
    workflowId,
    key: { workspace, provider: 'whatsapp', accountId: 'acc_1', conversationId: 'conv_1', albumId: 'alb_1' },
    distinctChildren: 2,
    children,
    media: { total: 2, downloaded: 1, pending: 1 },
  } as unknown as AlbumView;
  // albumflow's own media route of that file, signed, for a day (MEDIA_URL_LIFETIME_S's default).
  const mediaUrl = expect.stringMatching(
    new RegExp(`^http://127\\.0\\.0\\.1:\\d+/workspaces/${workspace}/media/${sha256}\\?expires=\\d+&sig=[A-Za-z0-9_-]{43}$`),
  ) as string;
  const notified = {
    ...album,
    children: [{ ...children[0]!, attachments: [{ ...children[0]!.attachments[0]!, media_url: mediaUrl }] }, children[1]],
  };
  const decision = {
    seq: 1,
    trigger: 'expected_count_reached' as const,
    childMessageIds: ['m1', 'm2'],
    decidedAt: '2026-09-29T10:00:00.000Z',
  };
  return {
    id,
    input: { workflowId, seq: 1, type: 'album.ready', album, decision },
    payload: { id, type: 'album.ready', album: notified, decision },
  };
}

async function deliveredCount(outcome: string): Promise<number> {
  const metric = await notificationsTotal.get();
  return metric.values.find((v) => v.labels.type === 'album.ready' && v.labels.outcome === outcome)?.value ?? 0;
}

async function thrown(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await promise.then(
    () => expect.fail('expected the delivery to throw'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}

describe('the notify activity against a local receiver and the real PostgreSQL', () => {
  const secret = 'notify-secret-that-never-appears-in-logs';
  let receiver: NotifyReceiver;
  let pool: Pool;
  let config: Config;

  beforeAll(async () => {
    receiver = await startReceiver();
    config = testConfig({ NOTIFY_URL: receiver.url, NOTIFY_SECRET: secret });
    pool = testPool(config);
  });

  afterAll(async () => {
    await receiver.close();
    await pool.end();
  });

  beforeEach(() => {
    receiver.requests.length = 0;
    receiver.answers.length = 0;
  });

  async function storedRow(id: string) {
    const { rows } = await pool.query<{
      status: string;
      attempts: number;
      last_error: string | null;
      delivered_at: Date | null;
      payload: unknown;
    }>('SELECT status, attempts, last_error, delivered_at, payload FROM notifications WHERE id = $1', [id]);
    return rows[0];
  }

  function notifierWith(overrides: Partial<Config['notify']>, logger = capturingLogger().logger) {
    return createNotifyActivities({ pool, logger, config: { ...config, notify: { ...config.notify, ...overrides } } });
  }

  function verdictInput(request: ReceivedRequest) {
    return {
      secrets: [secret],
      timestamp: request.headers['x-albumflow-timestamp'] as string,
      signature: request.headers['x-albumflow-signature'] as string,
      body: request.body,
      toleranceS: 300,
    };
  }

  it('POSTs exactly the payload, signed over "<timestamp>.<raw body>" with NOTIFY_SECRET', async () => {
    const n = albumReady();
    const before = await deliveredCount('delivered');

    await expect(deliver(notifierWith({}), n)).resolves.toBe('delivered');

    expect(receiver.requests).toHaveLength(1);
    const request = receiver.requests[0]!;
    expect(request.method).toBe('POST');
    expect(request.headers['content-type']).toBe('application/json');
    expect(JSON.parse(request.body.toString())).toEqual(n.payload);
    expect(verifySignature(verdictInput(request))).toEqual({ ok: true });
    expect(verifySignature({ ...verdictInput(request), secrets: ['another-secret'] })).toEqual({ ok: false, reason: 'invalid_signature' });

    const row = await storedRow(n.id);
    expect(row).toMatchObject({ status: 'delivered', attempts: 1, last_error: null, payload: n.payload });
    expect(row?.delivered_at).toBeInstanceOf(Date);
    expect(await deliveredCount('delivered')).toBe(before + 1);
  });

  it('retries after an HTTP 500 with the same id and body, then delivers', async () => {
    const n = albumReady();
    receiver.answers.push(500);
    const notifier = notifierWith({});

    const failure = await thrown(deliver(notifier, n, 1));
    expect(failure.nonRetryable).toBe(false);
    expect(failure.message).toContain('HTTP 500');
    expect(await storedRow(n.id)).toMatchObject({ status: 'pending', attempts: 1, last_error: 'HTTP 500' });

    await expect(deliver(notifier, n, 2)).resolves.toBe('delivered');
    expect(receiver.requests).toHaveLength(2);
    const [first, second] = receiver.requests.map((r) => JSON.parse(r.body.toString()) as { id: string });
    expect(first?.id).toBe(n.id);
    expect(second?.id).toBe(n.id);
    expect(receiver.requests.every((r) => verifySignature(verdictInput(r)).ok)).toBe(true);
    expect(await storedRow(n.id)).toMatchObject({ status: 'delivered', attempts: 2, last_error: null });
  });

  it('answers already for a delivered id without sending it again', async () => {
    const n = albumReady();
    const notifier = notifierWith({});
    await expect(deliver(notifier, n)).resolves.toBe('delivered');
    const before = await deliveredCount('already');

    await expect(deliver(notifier, n)).resolves.toBe('already');
    await expect(deliver(notifierWith({}), n, 3)).resolves.toBe('already');

    expect(receiver.requests).toHaveLength(1);
    expect(await storedRow(n.id)).toMatchObject({ status: 'delivered', attempts: 1 });
    expect(await deliveredCount('already')).toBe(before + 2);
  });

  it('records, logs and does not send when NOTIFY_URL is not set', async () => {
    const n = albumReady();
    const { logger, lines } = capturingLogger();
    const notifier = notifierWith({ url: undefined }, logger);

    await expect(deliver(notifier, n)).resolves.toBe('recorded');
    await expect(deliver(notifier, n)).resolves.toBe('already');

    expect(receiver.requests).toHaveLength(0);
    expect(await storedRow(n.id)).toMatchObject({ status: 'recorded', payload: n.payload, delivered_at: null });
    const recorded = lines.map((line) => JSON.parse(line) as { level: number; msg: string; notificationId?: string });
    expect(recorded).toContainEqual(
      expect.objectContaining({ level: 30, notificationId: n.id, msg: 'notification recorded (NOTIFY_URL is not set)' }),
    );
    expect(lines.join('')).not.toContain(secret);
  });

  it('fails without retry on an HTTP 400 and marks the row failed', async () => {
    const n = albumReady();
    receiver.answers.push(400);
    const before = await deliveredCount('failed');

    const failure = await thrown(deliver(notifierWith({}), n));

    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toContain('HTTP 400');
    expect(receiver.requests).toHaveLength(1);
    expect(await storedRow(n.id)).toMatchObject({ status: 'failed', attempts: 1, last_error: 'HTTP 400' });
    expect(await deliveredCount('failed')).toBe(before + 1);
  });

  it.each([408, 429, 503])('retries HTTP %i', async (status) => {
    const n = albumReady();
    receiver.answers.push(status);
    const failure = await thrown(deliver(notifierWith({}), n));
    expect(failure.nonRetryable).toBe(false);
    expect(await storedRow(n.id)).toMatchObject({ status: 'pending', last_error: `HTTP ${status}` });
  });

  it('retries when the receiver cannot be reached', async () => {
    const n = albumReady();
    const closed = await startReceiver();
    await closed.close();
    const failure = await thrown(deliver(notifierWith({ url: closed.url }), n));
    expect(failure.nonRetryable).toBe(false);
    expect((await storedRow(n.id))?.last_error).toMatch(/ECONNREFUSED/);
  });

  it('sends unsigned without NOTIFY_SECRET and warns once', async () => {
    const { logger, lines } = capturingLogger();
    const notifier = notifierWith({ secret: undefined }, logger);

    await expect(deliver(notifier, albumReady())).resolves.toBe('delivered');
    await expect(deliver(notifier, albumReady())).resolves.toBe('delivered');

    expect(receiver.requests).toHaveLength(2);
    expect(receiver.requests.every((r) => r.headers['x-albumflow-signature'] === undefined)).toBe(true);
    expect(receiver.requests.every((r) => /^\d+$/.test(String(r.headers['x-albumflow-timestamp'])))).toBe(true);
    const warnings = lines.filter((line) => line.includes('NOTIFY_SECRET is not set'));
    expect(warnings).toHaveLength(1);
  });
});
