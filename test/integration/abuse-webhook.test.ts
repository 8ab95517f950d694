import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@temporalio/client';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/common/config.js';
import type { Pool } from '../../src/db/pool.js';
import { buildApp, type App } from '../../src/process/app.js';
import { maxNestingDepth } from '../../src/platforms/json-body.js';
import { maxSignatureEntries } from '../../src/common/signature.js';
import { testClient, testConfig, testLogger, testPool } from '../harness/env.js';
import { unifyportEvent, unifyportHeaders } from '../harness/events.js';
import { events, messages, quarantine, webhookRows } from '../harness/rows.js';
import { unique } from '../harness/random.js';

// Hostile and malformed traffic against the webhook route. What webhook.test.ts already covers (a secret
// of another workspace, a changed field, stale and future timestamps, 413 by length and by stream) is not
// repeated here.

const prefix = unique('abuse');
const signed = `${prefix}-signed`;
const secret = 'abuse-secret';
const maxBodyBytes = 64 * 1024;

function config(env: Record<string, string> = {}): Config {
  return testConfig({
    WORKSPACE_SECRETS: JSON.stringify({ [signed]: [secret] }),
    MAX_BODY_BYTES: String(maxBodyBytes),
    ...env,
  });
}

let pool: Pool;
let temporal: Client;
let app: App;
const appConfig = config();

async function appWith(appConfiguration: Config): Promise<App> {
  return buildApp({ config: appConfiguration, pool, temporal, wakeDispatcher: () => undefined, logger: testLogger(appConfiguration) });
}

beforeAll(async () => {
  pool = testPool(appConfig);
  temporal = await testClient(appConfig);
  app = await appWith(appConfig);
});

afterAll(async () => {
  await app.close();
  await temporal.connection.close();
  await pool.end();
});

const nowS = () => Math.floor(Date.now() / 1000);

function event(overrides: { account?: string; message?: string; extra?: unknown } = {}): string {
  return JSON.stringify(
    unifyportEvent({
      accountId: overrides.account ?? unique('acc'),
      conversationId: 'conv-1',
      message: {
        id: overrides.message ?? unique('msg'),
        attachments: [{ type: 'image', url: 'https://media.example/a.jpg' }],
        album: { id: 'alb-1', index: 0 },
        extra: overrides.extra,
      },
    }),
  );
}

function signedHeaders(body: string | Buffer, timestamp = String(nowS())): Record<string, string> {
  return unifyportHeaders(secret, body, timestamp);
}

function post(target: App, body: string | Buffer, headers: Record<string, string>) {
  return target.inject({ method: 'POST', url: `/webhooks/unifyport/${signed}`, headers, payload: body });
}

/** Rows of every table the webhook writes, for this test's workspace. */
function storedRows(): Promise<number> {
  return webhookRows(pool, signed);
}

async function deliveryCount(eventId: string): Promise<number | undefined> {
  return (await events.read(pool, { workspace: signed, eventId }, ['delivery_count']))[0]?.delivery_count;
}

describe('fuzzing the webhook route (fast-check)', () => {
  const anyBody = fc.oneof(
    fc.uint8Array({ maxLength: 512 }).map((bytes) => Buffer.from(bytes)),
    fc.string({ maxLength: 256 }),
    fc.jsonValue({ maxDepth: 6 }).map((value) => JSON.stringify(value) ?? 'null'),
    fc
      .record(
        {
          id: fc.jsonValue({ maxDepth: 1 }),
          type: fc.oneof(fc.constant('message.received'), fc.string()),
          provider: fc.jsonValue({ maxDepth: 1 }),
          account_id: fc.jsonValue({ maxDepth: 1 }),
          data: fc.record(
            {
              conversation: fc.oneof(fc.record({ id: fc.jsonValue({ maxDepth: 1 }) }), fc.jsonValue({ maxDepth: 2 })),
              message: fc.record(
                {
                  id: fc.jsonValue({ maxDepth: 1 }),
                  text: fc.jsonValue({ maxDepth: 1 }),
                  sent_at: fc.oneof(
                    fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
                    fc.jsonValue({ maxDepth: 1 }),
                  ),
                  attachments: fc.oneof(fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 }), fc.jsonValue({ maxDepth: 2 })),
                  album: fc.oneof(
                    fc.record(
                      { id: fc.jsonValue({ maxDepth: 1 }), index: fc.jsonValue({ maxDepth: 1 }), total: fc.jsonValue({ maxDepth: 1 }) },
                      { requiredKeys: [] },
                    ),
                    fc.jsonValue({ maxDepth: 2 }),
                  ),
                },
                { requiredKeys: [] },
              ),
            },
            { requiredKeys: [] },
          ),
        },
        { requiredKeys: [] },
      )
      .map((value) => JSON.stringify(value)),
  );
  const anyContentType = fc.constantFrom(
    'application/json',
    'application/json; charset=utf-8',
    'text/plain',
    'application/x-www-form-urlencoded',
    '',
  );
  const anyHeaderValue = fc.string({ maxLength: 200 }).map((value) => value.replace(/[^\x20-\x7e]/g, ''));

  it('never answers 5xx and never stores anything for a request without a valid signature', async () => {
    const before = await storedRows();
    await fc.assert(
      fc.asyncProperty(anyBody, anyContentType, anyHeaderValue, anyHeaderValue, async (body, contentType, timestamp, signature) => {
        const headers: Record<string, string> = { 'x-unifyport-timestamp': timestamp, 'x-unifyport-signature': signature };
        if (contentType) headers['content-type'] = contentType;
        const response = await post(app, body, headers);
        expect(response.statusCode).toBeLessThan(500);
        expect([401, 413, 415]).toContain(response.statusCode);
      }),
      { numRuns: 300 },
    );
    expect(await storedRows()).toBe(before);
  });

  it('never answers 5xx to a validly signed body, and a 202 always names a stored child', async () => {
    await fc.assert(
      fc.asyncProperty(anyBody, async (body) => {
        const response = await post(app, body, signedHeaders(body));
        expect(response.statusCode).toBeLessThan(500);
        expect([202, 400, 413]).toContain(response.statusCode);
        const answer = response.json<{ status?: string; childKey?: string }>();
        if (response.statusCode === 202 && answer.status === 'accepted') {
          const [workspace, provider, account, conversation, message] = answer.childKey!.split(':').map(decodeURIComponent);
          const rows = await messages.read(
            pool,
            { workspace, provider, accountId: account, conversationId: conversation, messageId: message },
            ['id'],
          );
          expect(rows).toHaveLength(1);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('replayed, re-addressed and altered requests', () => {
  it('refuses a captured request replayed once its timestamp is older than the tolerance, and stores nothing more', async () => {
    const tolerant = await appWith(config({ SIGNATURE_TOLERANCE_S: '1' }));
    try {
      const body = event();
      const headers = signedHeaders(body);
      const first = await post(tolerant, body, headers);
      expect(first.statusCode).toBe(202);
      const eventId = (JSON.parse(body) as { id: string }).id;

      const replayedAtOnce = await post(tolerant, body, headers);
      expect(replayedAtOnce.json()).toMatchObject({ status: 'accepted', duplicate: true });
      expect(await deliveryCount(eventId)).toBe(2);

      await new Promise((resolve) => setTimeout(resolve, 2_100 - (Date.now() % 1000)));
      const replayedLate = await post(tolerant, body, headers);
      expect(replayedLate.statusCode).toBe(401);
      expect(replayedLate.json()).toMatchObject({ error: { code: 'stale_timestamp' } });
      expect(await deliveryCount(eventId)).toBe(2);
    } finally {
      await tolerant.close();
    }
  });

  it('refuses a valid signature sent with another timestamp header', async () => {
    const body = event();
    const headers = signedHeaders(body, String(nowS() - 10));
    const response = await post(app, body, { ...headers, 'x-unifyport-timestamp': String(nowS()) });
    expect(response.json()).toMatchObject({ error: { code: 'invalid_signature' } });
  });

  it('refuses the body altered by any one byte, and stores nothing', async () => {
    const body = Buffer.from(event());
    const headers = signedHeaders(body);
    const before = await storedRows();
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: body.length - 1 }), fc.integer({ min: 1, max: 255 }), async (position, delta) => {
        const altered = Buffer.from(body);
        altered[position] = (altered[position]! + delta) % 256;
        const response = await post(app, altered, headers);
        expect(response.statusCode).toBe(401);
        expect(response.json()).toMatchObject({ error: { code: 'invalid_signature' } });
      }),
      { numRuns: 150 },
    );
    expect(await storedRows()).toBe(before);
  });

  describe('a signature header with a hundred v1= entries', () => {
    const filler = (count: number) => Array.from({ length: count }, (_, i) => `v1=${i.toString(16).padStart(64, 'f')}`);

    it('is refused, without storing, when the valid entry comes after the first few entries compared', async () => {
      const body = event();
      const valid = signedHeaders(body);
      const before = await storedRows();
      const response = await post(app, body, {
        ...valid,
        'x-unifyport-signature': [...filler(99), valid['x-unifyport-signature']].join(','),
      });
      expect(response.statusCode).toBe(401);
      expect(response.json()).toMatchObject({ error: { code: 'invalid_signature' } });
      expect(await storedRows()).toBe(before);
    });

    it(`is accepted when the valid entry is among the first ${maxSignatureEntries}`, async () => {
      const body = event();
      const valid = signedHeaders(body);
      const entries = [...filler(maxSignatureEntries - 1), valid['x-unifyport-signature'], ...filler(100 - maxSignatureEntries)];
      const response = await post(app, body, { ...valid, 'x-unifyport-signature': entries.join(', ') });
      expect(response.statusCode).toBe(202);
    });

    it('is refused when every entry is garbage or of another scheme', async () => {
      const body = event();
      const garbage = Array.from({ length: 100 }, (_, i) => (i % 2 ? `v2=${'a'.repeat(64)}` : `v1=${'zz'.repeat(i)}`)).join(' ');
      const response = await post(app, body, { ...signedHeaders(body), 'x-unifyport-signature': garbage });
      expect(response.json()).toMatchObject({ error: { code: 'invalid_signature' } });
    });
  });
});

describe('deep JSON nesting', () => {
  const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

  it.each([maxNestingDepth, 5_000, 20_000])('refuses a signed event nesting %i levels deep with 400 and quarantines it', async (depth) => {
    const account = unique('acc');
    const body = event({ account, extra: '__NESTED__' }).replace('"__NESTED__"', nested(depth));
    const response = await post(app, body, signedHeaders(body));
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ error: { code: 'invalid_event', message: `the event nests deeper than ${maxNestingDepth} levels` } });
    const rows = await quarantine.read(pool, { workspace: signed, reason: 'invalid_event' }, ['raw'], { descending: true, limit: 1 });
    expect(rows[0]!.raw.toString()).toBe(body);
    const stored = await messages.read(pool, { workspace: signed, accountId: account }, ['id']);
    expect(stored).toEqual([]);
  });

  it('refuses a body that is nothing but brackets up to MAX_BODY_BYTES', async () => {
    const body = nested(maxBodyBytes / 2);
    const response = await post(app, body, signedHeaders(body));
    expect(response.statusCode).toBe(400);
  });

  it('stores an event whose deepest value is within the limit', async () => {
    const body = event({ extra: '__NESTED__' }).replace('"__NESTED__"', nested(maxNestingDepth - 5));
    const response = await post(app, body, signedHeaders(body));
    expect(response.statusCode).toBe(202);
  });
});

describe('huge bodies over a real socket', () => {
  let server: App;
  let port: number;

  beforeAll(async () => {
    server = await appWith(appConfig);
    await server.listen({ port: 0, host: '127.0.0.1' });
    port = (server.server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await server.close();
  });

  /** Streams `totalBytes` of body; resolves with the status, however much of the body the server read. */
  function upload(totalBytes: number, chunked: boolean): Promise<number> {
    return new Promise((resolve, reject) => {
      const request = http.request({
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: `/webhooks/unifyport/${signed}`,
        headers: { 'content-type': 'application/json', ...(chunked ? {} : { 'content-length': totalBytes }) },
      });
      request.once('response', (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      });
      request.once('error', (err) => {
        if (!request.writableEnded || request.destroyed) reject(err);
      });
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      let sent = 0;
      const pump = () => {
        while (sent < totalBytes) {
          sent += chunk.length;
          if (!request.write(chunk)) return void request.once('drain', pump);
        }
        request.end();
      };
      pump();
    });
  }

  it.each([
    ['with a Content-Length of 200 MB', false],
    ['chunked, 200 MB', true],
  ])('answers 413 to a body %s and keeps serving', async (_name, chunked) => {
    const status = await upload(200 * 1024 * 1024, chunked);
    expect(status).toBe(413);
    const body = event();
    const after = await fetch(`http://127.0.0.1:${port}/webhooks/unifyport/${signed}`, {
      method: 'POST',
      headers: signedHeaders(body),
      body,
    });
    expect(after.status).toBe(202);
  });
});
