import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import fc from 'fast-check';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { Config } from '../../src/common/config.js';
import { createPool, type Pool } from '../../src/db/pool.js';
import { adminTokenPath } from '../../src/http/access/admin-token.js';
import type { RouteAccessEntry } from '../../src/http/access/plugin.js';
import { ConsoleSessions, sessionCookie } from '../../src/http/access/session.js';
import { tokenHash } from '../../src/tenants/tokens.js';
import { buildApp, type App } from '../../src/process/app.js';
import { startService } from '../../src/process/start.js';
import { capturedLogger, testClient, testConfig, testPool } from '../harness/env.js';
import { unique } from '../harness/random.js';
import { unifyportHeaders } from '../harness/events.js';
import { consoleSessions } from '../harness/rows.js';

const workspaceA = unique('ws-a');
const workspaceB = unique('ws-b');
const tokenA = unique('token-for-workspace-a');
const tokenB = unique('token-for-workspace-b');
const adminToken = unique('token-for-every-workspace');
const allTokens = { [tokenA]: [workspaceA], [tokenB]: [workspaceB], [adminToken]: ['*'] };

/** Every log line the apps of this file write; searched for secrets at the end. */
const { logger, lines: logLines } = capturedLogger('access-test');
/** Every secret value a request of this file carried: none may reach the log. */
const secrets = new Set<string>(Object.keys(allTokens));

let config: Config;
let pool: Pool;
let temporal: Client;
let app: App;
let sessions: ConsoleSessions;

function appWith(
  tokens: Record<string, string[]>,
  settings: Partial<Config> = {},
  deps: { consoleSessions?: ConsoleSessions; pool?: Pool } = {},
): Promise<App> {
  return buildApp({
    config: { ...config, ...settings },
    pool: deps.pool ?? pool,
    temporal,
    wakeDispatcher: () => undefined,
    logger,
    tokens: new Map(Object.entries(tokens)),
    consoleSessions: deps.consoleSessions ?? new ConsoleSessions(deps.pool ?? pool),
  });
}

/** A new single-use code of a sign-in link, as `npm start` prints one. */
async function issueCode(token: string, issuer = sessions): Promise<string> {
  const code = await issuer.issueCode(token);
  secrets.add(code);
  return code;
}

beforeAll(async () => {
  config = testConfig({ WORKSPACE_SECRETS: JSON.stringify({ [workspaceA]: ['secret-a'], [workspaceB]: ['secret-b'] }) });
  pool = testPool(config);
  temporal = await testClient(config);
  sessions = new ConsoleSessions(pool);
  app = await appWith(allTokens, {}, { consoleSessions: sessions });
});

afterAll(async () => {
  await app.close();
  await temporal.connection.close();
  await pool.end();
});

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

function errorCode(response: LightMyRequestResponse): string | undefined {
  try {
    return response.json<{ error?: { code?: string } }>().error?.code;
  } catch {
    return undefined;
  }
}

/** The session cookie a response set, as a browser would send it back. */
function sessionOf(response: LightMyRequestResponse): string {
  const cookie = response.cookies.find((c) => c.name === sessionCookie);
  expect(cookie, 'a session cookie').toBeDefined();
  secrets.add(cookie!.value);
  return `${sessionCookie}=${cookie!.value}`;
}

/** Where every route that needs no token may live; anything else opened by mistake fails here. */
const openPrefixes = ['/docs', '/healthz', '/readyz', '/webhooks/', '/ui/sign-in', '/ui/sign-out'];

describe('every route of the app', () => {
  let routes: RouteAccessEntry[];
  beforeAll(() => {
    routes = app.routeAccess();
  });

  it('is open only where it must be', () => {
    const open = routes.filter((route) => route.access === 'open');
    expect(open.map((route) => `${route.method} ${route.url}`)).toEqual(
      expect.arrayContaining([
        'POST /webhooks/unifyport/:workspace',
        'GET /healthz',
        'GET /readyz',
        'GET /docs',
        'GET /docs/json',
        'GET /docs/static/*',
        'GET /ui/sign-in',
        'POST /ui/sign-in',
        'POST /ui/sign-out',
      ]),
    );
    for (const route of open)
      expect(
        openPrefixes.some((prefix) => route.url.startsWith(prefix)),
        route.url,
      ).toBe(true);
  });

  it('needs a token that reaches its workspace, refuses without one and with another workspace’s', async () => {
    const guarded = routes.filter((route) => route.access !== 'open');
    expect(guarded.map((route) => `${route.method} ${route.url}`)).toEqual(
      expect.arrayContaining([
        'GET /workspaces/:workspace/albums/:provider/:account/:conversation/:album',
        'GET /workspaces/:workspace/messages/:provider/:account/:conversation/:message',
        'GET /workspaces/:workspace/albums',
        'POST /workspaces/:workspace/albums/:provider/:account/:conversation/:album/actions/retry-downloads',
        'POST /workspaces/:workspace/albums/:provider/:account/:conversation/:album/actions/resolve-review',
        'GET /metrics',
        'GET /',
        'POST /workspaces/:workspace/endpoints',
        'PATCH /workspaces/:workspace/endpoints/:id',
        'POST /workspaces/:workspace/endpoints/:id/deliveries/:deliveryId/retry',
        'GET /workspaces/:workspace/events',
        'GET /admin/endpoints',
        'PATCH /admin/endpoints/:id',
        'GET /ui/endpoints/:id',
      ]),
    );
    for (const route of guarded) {
      const url = route.url
        .replace(/:(\w+)/g, (_, name: string) => (name === 'workspace' ? workspaceA : `probe-${name}`))
        .replace(/\*$/, 'probe');
      const label = `${route.method} ${route.url} (${route.access})`;
      const send = (headers: Record<string, string> = {}) =>
        app.inject({ method: route.method, url, headers, ...(route.method === 'POST' ? { payload: {} } : {}) });

      const anonymous = await send();
      expect(anonymous.statusCode, label).toBe(401);
      expect(anonymous.headers['www-authenticate'], label).toBe('Bearer realm="albumflow"');
      if (route.method !== 'HEAD') expect(errorCode(anonymous), label).toBe('missing_token');

      const wrong = await send(bearer(unique('token-nobody-has')));
      expect(wrong.statusCode, label).toBe(401);
      if (route.method !== 'HEAD') expect(errorCode(wrong), label).toBe('invalid_token');

      const otherWorkspace = await send(bearer(tokenB));
      if (route.access === 'signed-in') {
        expect([401, 403], label).not.toContain(otherWorkspace.statusCode);
      } else {
        expect(otherWorkspace.statusCode, label).toBe(403);
        if (route.method !== 'HEAD') {
          expect(errorCode(otherWorkspace), label).toBe('workspace_not_allowed');
          expect(otherWorkspace.body, label).not.toMatch(new RegExp(`probe|${workspaceA}`));
        }
      }

      const right = await send(bearer(route.access === 'all-workspaces' ? adminToken : tokenA));
      expect([401, 403], label).not.toContain(right.statusCode);
      expect(right.statusCode, label).toBeLessThan(500);
      const admin = await send(bearer(adminToken));
      expect([401, 403], label).not.toContain(admin.statusCode);
    }
  });

  it('sends / to the console, once signed in', async () => {
    const root = await app.inject({ method: 'GET', url: '/', headers: { ...bearer(tokenB), accept: 'text/html' } });
    expect(root.statusCode).toBe(302);
    expect(root.headers.location).toBe('/ui');
    const anonymous = await app.inject({ method: 'GET', url: '/', headers: { accept: 'text/html' } });
    expect(anonymous.statusCode).toBe(303);
    expect(anonymous.headers.location).toBe('/ui/sign-in?next=%2F');
  });

  it('describes the bearer scheme on every protected operation of the OpenAPI document, and on no open one', async () => {
    const document = (await app.inject({ method: 'GET', url: '/docs/json' })).json<{
      components: { securitySchemes: Record<string, { type: string; scheme?: string }> };
      paths: Record<string, Record<string, { security?: unknown; responses: Record<string, unknown> }>>;
    }>();
    expect(document.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    let described = 0;
    for (const [openApiPath, operations] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const url = openApiPath.replace(/\{(\w+)\}/g, ':$1');
        const route = routes.find((r) => r.url === url && r.method === method.toUpperCase());
        expect(route, `${method} ${openApiPath}`).toBeDefined();
        if (route!.access === 'open') {
          expect(operation.security, openApiPath).toBeUndefined();
        } else {
          expect(operation.security, openApiPath).toEqual([{ bearer: [] }, { session: [] }]);
          expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['401', '403']));
          described++;
        }
      }
    }
    expect(described).toBeGreaterThanOrEqual(3);
    const ui = await app.inject({ method: 'GET', url: '/docs' });
    expect(ui.statusCode).toBe(200);
  });
});

describe('Authorization headers', () => {
  const url = () => `/workspaces/${workspaceA}/albums`;

  it('takes the scheme in any case, and refuses a browser without a token by sending it to sign in', async () => {
    expect((await app.inject({ method: 'GET', url: url(), headers: { authorization: `bEaReR ${tokenA}` } })).statusCode).toBe(200);
    const browser = await app.inject({ method: 'GET', url: url(), headers: { accept: 'text/html,application/xhtml+xml' } });
    expect(browser.statusCode).toBe(303);
    expect(browser.headers.location).toBe(`/ui/sign-in?next=${encodeURIComponent(url())}`);
  });

  it('never lets a malformed or foreign header through, and never answers 5xx (fast-check)', async () => {
    const notTheToken = (s: string) => s !== tokenA && s !== adminToken;
    const token = fc.constantFrom(tokenA, adminToken);
    const anyHeader = fc.oneof(
      fc.constantFrom('Bearer', 'Bearer ', 'Bearer  ', 'bearer', 'Bearer\t', 'Basic', '', ' '),
      fc
        .string()
        .filter(notTheToken)
        .map((s) => `Bearer ${s}`),
      fc
        .string({ unit: 'binary', maxLength: 64 })
        .filter(notTheToken)
        .map((s) => `Bearer ${s}`),
      fc
        .constantFrom('Basic', 'Token', 'Digest', 'Bearer:', 'Bearer=', 'Bearertoken')
        .chain((scheme) => token.map((t) => `${scheme} ${t}`)),
      token.map((t) => `${t}`),
      token.map((t) => `Bearer ${t} ${t}`),
      fc
        .tuple(token, fc.constantFrom('\u0000', '\u0007', '\u001b', '\u007f', '\r', '\n', '\t', '\u00a0', '\u2028', ',', ';', '"'))
        .map(([t, c]) => `Bearer ${t.slice(0, 8)}${c}${t.slice(8)}`),
      token.map((t) => `Bearer ${t.toUpperCase()}`),
      token.map((t) => `Bearer ${t.slice(0, -1)}`),
      token.map((t) => `Bearer ${t}${'x'.repeat(10_000)}`),
      fc.constant(`Bearer ${'A'.repeat(10 * 1024)}`),
    );
    const headerSets: fc.Arbitrary<Record<string, string | string[]>> = fc.oneof(
      anyHeader.map((value) => ({ authorization: value })),
      fc.tuple(anyHeader, anyHeader).map(([first, second]) => ({ authorization: [first, second] })),
      fc.tuple(token, anyHeader).map(([valid, other]) => ({ authorization: [`Bearer ${valid}`, other] })),
      fc.tuple(anyHeader, token).map(([other, valid]) => ({ authorization: [other, `Bearer ${valid}`] })),
    );
    await fc.assert(
      fc.asyncProperty(headerSets, async (headers) => {
        const response = await app.inject({ method: 'GET', url: url(), headers });
        expect(response.statusCode).toBe(401);
        expect(['missing_token', 'invalid_token']).toContain(errorCode(response));
      }),
      { numRuns: 400 },
    );
  });

  it('refuses the same over a real socket, where Node itself keeps only the first of two headers', async () => {
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as net.AddressInfo).port;
    const raw = (headerLines: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = net.connect(port, '127.0.0.1', () =>
          socket.write(`GET ${url()} HTTP/1.1\r\nHost: localhost\r\n${headerLines}Connection: close\r\n\r\n`),
        );
        let answer = '';
        socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
        socket.on('end', () => resolve(answer.split('\r\n')[0] ?? ''));
        socket.on('error', reject);
      });
    expect(await raw(`Authorization: Bearer ${tokenA}\r\n`)).toBe('HTTP/1.1 200 OK');
    expect(await raw(`Authorization: Bearer ${tokenA}\r\nAuthorization: Bearer nope-nope-nope-nope\r\n`)).toBe('HTTP/1.1 401 Unauthorized');
    expect(await raw(`Authorization: Bearer nope-nope-nope-nope\r\nAuthorization: Bearer ${tokenA}\r\n`)).toBe('HTTP/1.1 401 Unauthorized');
    expect(await raw(`Authorization: Bearer ${'A'.repeat(10 * 1024)}\r\n`)).toBe('HTTP/1.1 401 Unauthorized');
    expect(await raw(`Authorization: Bearer ${tokenA.slice(0, 5)}\u0001${tokenA.slice(5)}\r\n`)).toMatch(/^HTTP\/1\.1 4\d\d /);
    expect(await raw(`Authorization: Bearer ${'A'.repeat(20 * 1024)}\r\n`)).toMatch(/^HTTP\/1\.1 431 /);
  });
});

describe('console sessions', () => {
  it('open from a sign-in link only when its page’s button is pressed: a HEAD or a GET leaves the code usable', async () => {
    const code = await issueCode(adminToken);
    const link = `/ui/sign-in?code=${code}&next=/metrics`;
    // A link preview, a mail scanner, a prefetch: none of them signs in or uses the code up.
    for (const [method, accept] of [
      ['HEAD', 'text/html'],
      ['GET', '*/*'],
      ['HEAD', '*/*'],
      ['GET', 'text/html'],
    ] as const) {
      const opened = await app.inject({ method, url: link, headers: { accept } });
      expect(opened.statusCode, `${method} ${accept}`).toBe(200);
      expect(opened.cookies, `${method} ${accept}`).toEqual([]);
      expect(opened.headers['referrer-policy']).toBe('no-referrer');
    }
    const page = await app.inject({ method: 'GET', url: link, headers: { accept: 'text/html' } });
    expect(page.headers['content-security-policy']).toContain("default-src 'none'");
    expect(page.body).not.toContain('<script');
    const forms = page.body.match(/<form [^>]*>/g);
    expect(forms).toEqual(['<form method="post" action="/ui/sign-in">']);
    expect(page.body).toContain(`<input type="hidden" name="code" value="${code}">`);
    expect(page.body).toContain('<input type="hidden" name="next" value="/metrics">');
    expect(page.body.match(/<button /g)).toHaveLength(1);

    const press = (headers: Record<string, string>) =>
      app.inject({
        method: 'POST',
        url: '/ui/sign-in',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        payload: new URLSearchParams({ code, next: '/metrics' }).toString(),
      });
    for (const crossSite of [
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site' },
      { origin: 'http://evil.example' },
    ] as Array<Record<string, string>>) {
      const refused = await press(crossSite);
      expect(refused.statusCode, JSON.stringify(crossSite)).toBe(403);
      expect(refused.cookies).toEqual([]);
    }

    const pressed = await press({ 'sec-fetch-site': 'same-origin' });
    expect(pressed.statusCode).toBe(303);
    expect(pressed.headers.location).toBe('/metrics');
    const cookie = pressed.cookies.find((c) => c.name === sessionCookie);
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/', maxAge: 43_200 });
    expect(cookie?.secure).toBeUndefined();
    const session = sessionOf(pressed);
    expect((await app.inject({ method: 'GET', url: '/metrics', headers: { cookie: session } })).statusCode).toBe(200);

    const again = await press({ 'sec-fetch-site': 'same-origin' });
    expect(again.statusCode).toBe(401);
    expect(again.body).toContain('already used or has expired');
    expect(again.cookies).toEqual([]);
    const reopened = await app.inject({ method: 'GET', url: link, headers: { accept: 'text/html' } });
    expect(reopened.statusCode).toBe(401);
    expect(reopened.body).toContain('already used or has expired');
    expect(reopened.body).not.toContain(code);
    const json = await app.inject({ method: 'POST', url: '/ui/sign-in', payload: { code } });
    expect(json.statusCode).toBe(401);
    expect(errorCode(json)).toBe('invalid_sign_in_code');
  });

  it('open from a code once, also when two requests race for it, and on any replica that shares PostgreSQL', async () => {
    const replica = await appWith(allTokens);
    try {
      const code = await issueCode(tokenA);
      // The replica shows the page of a code another process issued.
      expect((await replica.inject({ method: 'GET', url: `/ui/sign-in?code=${code}`, headers: { accept: 'text/html' } })).statusCode).toBe(
        200,
      );
      const answers = await Promise.all(
        [app, replica, app, replica].map((target) => target.inject({ method: 'POST', url: '/ui/sign-in', payload: { code } })),
      );
      expect(answers.map((answer) => answer.statusCode).sort()).toEqual([200, 401, 401, 401]);
      const won = answers.find((answer) => answer.statusCode === 200)!;
      expect(won.json()).toMatchObject({ status: 'signed_in', tokenHash: tokenHash(tokenA), workspaces: [workspaceA] });
      const session = sessionOf(won);
      for (const target of [app, replica]) {
        const albums = await target.inject({ method: 'GET', url: `/workspaces/${workspaceA}/albums`, headers: { cookie: session } });
        expect(albums.statusCode).toBe(200);
      }
    } finally {
      await replica.close();
    }
  });

  it('refuse a code that expired, whose token was removed, or that is not one, and a body with neither or both', async () => {
    const shortLived = new ConsoleSessions(pool, { codeLifetimeMs: 0 });
    const expired = await issueCode(adminToken, shortLived);
    const removed = await issueCode(unique('token-no-longer-configured'));
    for (const code of [expired, removed, 'A'.repeat(24), 'not a code', '']) {
      const page = await app.inject({
        method: 'GET',
        url: `/ui/sign-in?${new URLSearchParams({ code }).toString()}`,
        headers: { accept: 'text/html' },
      });
      expect(page.statusCode, code).toBe(401);
      const posted = await app.inject({ method: 'POST', url: '/ui/sign-in', payload: { code } });
      expect(posted.statusCode, code).toBe(401);
      expect(errorCode(posted)).toBe('invalid_sign_in_code');
      expect(posted.cookies).toEqual([]);
    }
    for (const payload of [{}, { token: tokenA, code: expired }, { next: '/ui' }]) {
      const refused = await app.inject({ method: 'POST', url: '/ui/sign-in', payload });
      expect(refused.statusCode, JSON.stringify(payload)).toBe(400);
      expect(refused.json<{ error: { message: string } }>().error.message).toMatch(/token.*code/);
      expect(refused.cookies).toEqual([]);
    }
    const tooLong = await app.inject({ method: 'GET', url: `/ui/sign-in?code=${'A'.repeat(129)}`, headers: { accept: 'text/html' } });
    expect(tooLong.statusCode).toBe(400);
    expect(tooLong.body).toContain('code');
  });

  it('start from the sign-in form or JSON, keep the token’s scope, and go only to local paths', async () => {
    const form = await app.inject({
      method: 'POST',
      url: '/ui/sign-in',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'http://localhost:80' },
      payload: new URLSearchParams({ token: tokenA, next: '//evil.example/x' }).toString(),
    });
    expect(form.statusCode).toBe(303);
    expect(form.headers.location).toBe('/ui');
    const session = sessionOf(form);
    expect((await app.inject({ method: 'GET', url: `/workspaces/${workspaceA}/albums`, headers: { cookie: session } })).statusCode).toBe(
      200,
    );
    const elsewhere = await app.inject({ method: 'GET', url: `/workspaces/${workspaceB}/albums`, headers: { cookie: session } });
    expect(elsewhere.statusCode).toBe(403);
    expect((await app.inject({ method: 'GET', url: '/metrics', headers: { cookie: session } })).statusCode).toBe(403);

    const json = await app.inject({ method: 'POST', url: '/ui/sign-in', payload: { token: tokenB } });
    expect(json.statusCode).toBe(200);
    expect(json.json()).toMatchObject({ status: 'signed_in', tokenHash: tokenHash(tokenB), workspaces: [workspaceB] });
    sessionOf(json);

    const refused = await app.inject({ method: 'POST', url: '/ui/sign-in', payload: { token: unique('token-nobody-has') } });
    expect(refused.statusCode).toBe(401);
    expect(refused.cookies).toEqual([]);
    const crossSite = await app.inject({
      method: 'POST',
      url: '/ui/sign-in',
      headers: { 'sec-fetch-site': 'cross-site' },
      payload: { token: tokenA },
    });
    expect(crossSite.statusCode).toBe(403);
    expect(crossSite.cookies).toEqual([]);
  });

  it('verify on every replica that has the token, and stop when the token is removed or the admin token rotated', async () => {
    const session = sessionOf(await app.inject({ method: 'POST', url: '/ui/sign-in', payload: { token: tokenA } }));
    const adminSession = sessionOf(await app.inject({ method: 'POST', url: '/ui/sign-in', payload: { token: adminToken } }));
    const replica = await appWith(allTokens);
    const withoutA = await appWith({ [tokenB]: [workspaceB], [adminToken]: ['*'] });
    const rotated = await appWith({ [tokenA]: [workspaceA], [unique('token-rotated-admin')]: ['*'] });
    try {
      expect((await replica.inject({ method: 'GET', url: '/metrics', headers: { cookie: adminSession } })).statusCode).toBe(200);
      const rotatedOut = await rotated.inject({ method: 'GET', url: '/metrics', headers: { cookie: adminSession } });
      expect(rotatedOut.statusCode).toBe(401);
      expect(errorCode(rotatedOut)).toBe('invalid_token');
      expect(
        (await replica.inject({ method: 'GET', url: `/workspaces/${workspaceA}/albums`, headers: { cookie: session } })).statusCode,
      ).toBe(200);
      const revoked = await withoutA.inject({ method: 'GET', url: `/workspaces/${workspaceA}/albums`, headers: { cookie: session } });
      expect(revoked.statusCode).toBe(401);
      expect(errorCode(revoked)).toBe('invalid_token');
      expect(revoked.cookies.find((c) => c.name === sessionCookie)?.maxAge).toBe(0);
      const browser = await withoutA.inject({
        method: 'GET',
        url: `/workspaces/${workspaceA}/albums`,
        headers: { cookie: session, accept: 'text/html' },
      });
      expect(browser.statusCode).toBe(303);
    } finally {
      await replica.close();
      await withoutA.close();
      await rotated.close();
    }
  });

  it('take state-changing requests only from the same origin; bearer tokens need no such proof', async () => {
    const withAction = await appWith(allTokens);
    withAction.post('/workspaces/:workspace/test-action', async () => ({ done: true }));
    try {
      const session = sessionOf(await withAction.inject({ method: 'POST', url: '/ui/sign-in', payload: { token: tokenA } }));
      const post = (headers: Record<string, string>) =>
        withAction.inject({
          method: 'POST',
          url: `/workspaces/${workspaceA}/test-action`,
          headers: { cookie: session, ...headers },
          payload: {},
        });
      expect((await post({ 'sec-fetch-site': 'same-origin' })).statusCode).toBe(200);
      expect((await post({ origin: 'http://localhost:80' })).statusCode).toBe(200);
      const crossOrigin: Array<Record<string, string>> = [
        {},
        { 'sec-fetch-site': 'same-site' },
        { 'sec-fetch-site': 'cross-site' },
        { 'sec-fetch-site': 'none' },
        { origin: 'http://evil.example' },
        { origin: 'null' },
      ];
      for (const headers of crossOrigin) {
        const refused = await post(headers);
        expect(refused.statusCode, JSON.stringify(headers)).toBe(403);
        expect(errorCode(refused)).toBe('cross_origin_request');
      }
      const scripted = await withAction.inject({
        method: 'POST',
        url: `/workspaces/${workspaceA}/test-action`,
        headers: bearer(tokenA),
        payload: {},
      });
      expect(scripted.statusCode).toBe(200);
    } finally {
      await withAction.close();
    }
  });

  it('are Secure behind the TLS-terminating proxy TRUST_PROXY names, and nobody else’s X-Forwarded-* is believed', async () => {
    const proxy = '10.1.2.3';
    const behindProxy = await appWith(allTokens, { trustProxy: [proxy] });
    const trustingAll = await appWith(allTokens, { trustProxy: true });
    try {
      /** Signs in from `peer` with `headers`; the session cookie and the client address the request's log line shows. */
      const signIn = async (target: App, peer: string, headers: Record<string, string>) => {
        const probe = unique('probe');
        const response = await target.inject({
          method: 'POST',
          url: `/ui/sign-in?probe=${probe}`,
          remoteAddress: peer,
          headers,
          payload: { token: tokenA },
        });
        expect(response.statusCode).toBe(200);
        const cookie = response.cookies.find((c) => c.name === sessionCookie);
        secrets.add(cookie!.value);
        const line = logLines.find((l) => l.includes(probe) && l.includes('"incoming request"'));
        const logged = (JSON.parse(line!) as { req: { remoteAddress: string } }).req.remoteAddress;
        return { secure: cookie?.secure === true, remoteAddress: logged };
      };
      const forwarded = { 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.9' };

      // Unset: a client's forged headers change neither the cookie nor the address logged.
      expect(await signIn(app, '198.51.100.7', forwarded)).toEqual({ secure: false, remoteAddress: '198.51.100.7' });
      // Set: the proxy's headers are believed; those of a peer that is not the proxy are not.
      expect(await signIn(behindProxy, proxy, forwarded)).toEqual({ secure: true, remoteAddress: '203.0.113.9' });
      expect(await signIn(behindProxy, proxy, { 'x-forwarded-proto': 'http' })).toEqual({ secure: false, remoteAddress: proxy });
      expect(await signIn(behindProxy, '198.51.100.7', forwarded)).toEqual({ secure: false, remoteAddress: '198.51.100.7' });
      expect(await signIn(trustingAll, '198.51.100.7', forwarded)).toEqual({ secure: true, remoteAddress: '203.0.113.9' });
    } finally {
      await behindProxy.close();
      await trustingAll.close();
    }
  });

  it('end with sign-out at once, for every copy of the cookie and on every replica', async () => {
    const session = sessionOf(await app.inject({ method: 'POST', url: '/ui/sign-in', payload: { token: tokenA } }));
    const other = sessionOf(await app.inject({ method: 'POST', url: '/ui/sign-in', payload: { token: tokenA } }));
    const albums = (target: App, cookie: string) =>
      target.inject({ method: 'GET', url: `/workspaces/${workspaceA}/albums`, headers: { cookie } });
    const replica = await appWith(allTokens);
    try {
      expect((await albums(replica, session)).statusCode).toBe(200);
      const crossSite = await app.inject({
        method: 'POST',
        url: '/ui/sign-out',
        headers: { cookie: session, 'sec-fetch-site': 'cross-site' },
      });
      expect(crossSite.statusCode).toBe(403);
      expect((await albums(app, session)).statusCode).toBe(200);

      const signOut = await app.inject({
        method: 'POST',
        url: '/ui/sign-out',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin', cookie: session },
        payload: '',
      });
      expect(signOut.statusCode).toBe(303);
      expect(signOut.headers.location).toBe('/ui/sign-in');
      expect(signOut.cookies.find((c) => c.name === sessionCookie)?.maxAge).toBe(0);
      for (const target of [app, replica]) {
        const copy = await albums(target, session);
        expect(copy.statusCode).toBe(401);
        expect(errorCode(copy)).toBe('invalid_token');
      }
      // Another session of the same token is another browser's: it stays.
      expect((await albums(replica, other)).statusCode).toBe(200);
      const json = await app.inject({ method: 'POST', url: '/ui/sign-out', headers: { cookie: other } });
      expect(json.statusCode).toBe(204);
      expect((await albums(replica, other)).statusCode).toBe(401);
      expect((await app.inject({ method: 'POST', url: '/ui/sign-out' })).statusCode).toBe(204);
    } finally {
      await replica.close();
    }
  });

  it('are kept in PostgreSQL by the digest of their id alone, and refused when altered, made up or expired', async () => {
    const signedIn = await app.inject({ method: 'POST', url: '/ui/sign-in', payload: { token: tokenB } });
    const value = signedIn.cookies.find((c) => c.name === sessionCookie)!.value;
    sessionOf(signedIn);
    expect(value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const rows = await consoleSessions.read(pool, { idDigest: crypto.createHash('sha256').update(value).digest() }, [
      'id_digest',
      'token_digest',
      'expires_at',
      'created_at',
    ]);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.token_digest.toString('hex').slice(0, 12)).toBe(tokenHash(tokenB));
    expect(rows[0]!.expires_at.getTime() - rows[0]!.created_at.getTime()).toBe(43_200_000);
    const everything = JSON.stringify(await consoleSessions.read(pool, {}));
    expect(everything).not.toContain(value);

    const albums = (cookie: string) => app.inject({ method: 'GET', url: `/workspaces/${workspaceB}/albums`, headers: { cookie } });
    expect((await albums(`${sessionCookie}=${value}`)).statusCode).toBe(200);
    const stateless = `${tokenHash(tokenB)}.${Math.floor(Date.now() / 1000) + 3600}.c2lnbmF0dXJl`;
    const flipped = `${value.slice(0, -1)}${value.endsWith('A') ? 'B' : 'A'}`;
    for (const forged of [
      flipped,
      value.slice(1),
      `${value}A`,
      stateless,
      crypto.randomBytes(32).toString('base64url'),
      'x'.repeat(5000),
    ]) {
      const refused = await albums(`${sessionCookie}=${forged}`);
      expect(refused.statusCode, forged).toBe(401);
      expect(errorCode(refused)).toBe('invalid_token');
    }

    const shortLived = new ConsoleSessions(pool, { sessionLifetimeS: 0 });
    const brief = await appWith(allTokens, {}, { consoleSessions: shortLived });
    try {
      const expired = sessionOf(await brief.inject({ method: 'POST', url: '/ui/sign-in', payload: { token: tokenB } }));
      expect((await albums(expired)).statusCode).toBe(401);
      // The next sign-in deletes the rows of expired sessions.
      const digestOf = (cookie: string) =>
        crypto
          .createHash('sha256')
          .update(cookie.slice(`${sessionCookie}=`.length))
          .digest();
      const stored = () => consoleSessions.count(pool, { idDigest: digestOf(expired) });
      expect(await stored()).toBe(1);
      sessionOf(await app.inject({ method: 'POST', url: '/ui/sign-in', payload: { token: tokenB } }));
      expect(await stored()).toBe(0);
    } finally {
      await brief.close();
    }
  });

  it('answer 503 naming the database, never a 500, when PostgreSQL is unreachable', async () => {
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const unreachable = createPool({ host: '127.0.0.1', port, user: 'nobody', database: 'nothing' }, { max: 1 });
    const down = await appWith(allTokens, {}, { pool: unreachable });
    try {
      const session = sessionOf(await app.inject({ method: 'POST', url: '/ui/sign-in', payload: { token: adminToken } }));
      const code = await issueCode(adminToken);
      const sameOrigin = { 'sec-fetch-site': 'same-origin' };
      const form = { ...sameOrigin, 'content-type': 'application/x-www-form-urlencoded' };
      const requests: Array<[string, InjectOptions]> = [
        ['an API request with the cookie', { method: 'GET', url: `/workspaces/${workspaceA}/albums`, headers: { cookie: session } }],
        ['a console page with the cookie', { method: 'GET', url: '/ui', headers: { cookie: session, accept: 'text/html' } }],
        ['the page of a sign-in link', { method: 'GET', url: `/ui/sign-in?code=${code}`, headers: { accept: 'text/html' } }],
        ['a token posted by the form', { method: 'POST', url: '/ui/sign-in', headers: form, payload: `token=${adminToken}` }],
        ['a code posted as JSON', { method: 'POST', url: '/ui/sign-in', payload: { code } }],
        ['a sign-out', { method: 'POST', url: '/ui/sign-out', headers: { ...sameOrigin, cookie: session } }],
      ];
      for (const [what, request] of requests) {
        const answer = await down.inject(request);
        expect(answer.statusCode, what).toBe(503);
        expect(answer.headers['retry-after'], what).toBe('5');
        expect(answer.cookies, what).toEqual([]);
        if (String(answer.headers['content-type']).startsWith('application/json'))
          expect(errorCode(answer), what).toBe('database_unavailable');
        else expect(answer.body, what).toMatch(/database/);
      }
      // Nothing was used up or ended meanwhile.
      expect((await app.inject({ method: 'GET', url: `/workspaces/${workspaceA}/albums`, headers: { cookie: session } })).statusCode).toBe(
        200,
      );
      expect((await app.inject({ method: 'POST', url: '/ui/sign-in', payload: { code } })).statusCode).toBe(200);
      // A bearer token needs no session lookup.
      expect((await down.inject({ method: 'GET', url: '/metrics', headers: bearer(adminToken) })).statusCode).toBe(200);
    } finally {
      await down.close();
      await unreachable.end();
    }
  });

  it('go after sign-in only to a same-site path of this server, else to /ui, and never answer 5xx (fast-check)', async () => {
    const isSafe = (location: unknown) =>
      typeof location === 'string' &&
      /^\/[\x21-\x7e]*$/.test(location) &&
      !location.includes('//') &&
      !location.includes('\\') &&
      new URL(location, 'http://albumflow.example').origin === 'http://albumflow.example';
    const hostile = fc.oneof(
      fc.constantFrom(
        '/a\u0001b',
        '/\u00e9t\u00e9',
        '/\u4e2d',
        '//evil.example',
        '/\\evil.example',
        '/%zz',
        '/ui%2',
        'https://evil.example',
        '/ui\r\nx: y',
      ),
      fc.string({ unit: 'binary', maxLength: 40 }),
      fc.string({ unit: 'binary', maxLength: 40 }).map((s) => `/${s}`),
      fc.webPath(),
      fc
        .array(fc.constantFrom('/', '\\', '%', '2f', 'e', '.', ':', '@', '?', '#', '\u0000', '\u0085', '\u00ff', '\u2028'), {
          maxLength: 10,
        })
        .map((p) => p.join('')),
    );
    await fc.assert(
      fc.asyncProperty(hostile, async (next) => {
        const query = new URLSearchParams({ next }).toString();
        const signInPage = await app.inject({ method: 'GET', url: `/ui/sign-in?${query}`, headers: { accept: 'text/html' } });
        expect(signInPage.statusCode).toBe(200);
        const kept = /name="next" value="([^"]*)"/.exec(signInPage.body)?.[1]?.replaceAll('&amp;', '&').replaceAll('&#39;', "'");
        expect(isSafe(kept)).toBe(true);

        const form = await app.inject({
          method: 'POST',
          url: '/ui/sign-in',
          headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
          payload: new URLSearchParams({ token: tokenA, next }).toString(),
        });
        expect(form.statusCode).toBe(303);
        expect(isSafe(form.headers.location)).toBe(true);
        expect([next, '/ui']).toContain(form.headers.location);
        secrets.add(form.cookies.find((c) => c.name === sessionCookie)!.value);
      }),
      { numRuns: 150 },
    );
    // The raw query strings of the report: undecodable or non-Latin-1 values, control characters.
    for (const raw of ['next=/a%01b', 'next=%2F%E4%B8%AD', 'next=%2F%FF', 'next=/%zz', 'next=%2F%2Fevil.example', 'next=/a%0d%0ab']) {
      const answer = await app.inject({ method: 'GET', url: `/ui/sign-in?${raw}`, headers: { accept: 'text/html' } });
      expect(answer.statusCode, raw).toBe(200);
      expect(isSafe(/name="next" value="([^"]*)"/.exec(answer.body)?.[1]), raw).toBe(true);
    }
  });
});

describe('npm start without API_TOKENS', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-access-'));
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('generates an admin token once, keeps it across restarts, and prints a sign-in link that works once', async () => {
    const serviceConfig = { ...config, port: 0, dataDir, apiTokens: undefined, secretKey: undefined };
    const start = () => startService(serviceConfig, { http: true, dispatcher: false, worker: false }, logger);
    const statusUrl = (http: string) => `${http}/workspaces/${workspaceA}/albums`;
    const tokens: string[] = [];
    const keys: string[] = [];
    const generatedWorkspace = unique('generated');
    const generatedSecret = unique('generated-signing-secret');
    secrets.add(generatedSecret);
    // startService reads the Temporal connection the way the Temporal tools do: from the environment.
    const temporalAddress = process.env.TEMPORAL_ADDRESS;
    process.env.TEMPORAL_ADDRESS = config.temporal.address;
    onTestFinished(() => {
      if (temporalAddress === undefined) delete process.env.TEMPORAL_ADDRESS;
      else process.env.TEMPORAL_ADDRESS = temporalAddress;
    });
    for (const run of [1, 2]) {
      const service = await start();
      try {
        const file = adminTokenPath(dataDir);
        expect(fs.statSync(file).mode & 0o777).toBe(0o600);
        const token = fs.readFileSync(file, 'utf8').trim();
        tokens.push(token);
        secrets.add(token);
        const http = service.urls.http!;
        expect((await fetch(statusUrl(http))).status).toBe(401);
        expect((await fetch(statusUrl(http), { headers: bearer(token) })).status).toBe(200);

        // The admin token manages the tenants; what it stores is sealed under DATA_DIR/secret-key, kept across restarts.
        const keyFile = path.join(dataDir, 'secret-key');
        expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);
        keys.push(fs.readFileSync(keyFile, 'utf8'));
        secrets.add(keys[0]!.trim());
        if (run === 1) {
          const added = await fetch(`${http}/admin/workspaces`, {
            method: 'POST',
            headers: { ...bearer(token), 'content-type': 'application/json' },
            body: JSON.stringify({ name: generatedWorkspace }),
          });
          expect(added.status).toBe(201);
          const secret = await fetch(`${http}/admin/workspaces/${generatedWorkspace}/secrets`, {
            method: 'POST',
            headers: { ...bearer(token), 'content-type': 'application/json' },
            body: JSON.stringify({ secret: generatedSecret }),
          });
          expect(secret.status).toBe(201);
        }
        const body = JSON.stringify({ id: unique('evt'), type: 'other.event' });
        const webhook = await fetch(`${http}/webhooks/unifyport/${generatedWorkspace}`, {
          method: 'POST',
          headers: unifyportHeaders(generatedSecret, body),
          body,
        });
        expect(webhook.status, `start ${run}`).toBe(202);

        const link = service.urls.console!;
        expect(link).toMatch(new RegExp(`^${http}/ui/sign-in\\?code=[\\w-]{24}$`));
        expect(link).not.toContain(token);
        const opened = await fetch(link, { headers: { accept: 'text/html' } });
        expect(opened.status, `start ${run}`).toBe(200);
        const code = new URL(link).searchParams.get('code')!;
        secrets.add(code);
        const press = () =>
          fetch(`${http}/ui/sign-in`, {
            method: 'POST',
            redirect: 'manual',
            headers: { 'content-type': 'application/x-www-form-urlencoded', origin: http },
            body: new URLSearchParams({ code, next: '/ui' }),
          });
        const signIn = await press();
        expect(signIn.status, `start ${run}`).toBe(303);
        const session = signIn.headers.getSetCookie()[0]!.split(';')[0]!;
        secrets.add(session.slice(`${sessionCookie}=`.length));
        expect((await fetch(statusUrl(http), { headers: { cookie: session } })).status).toBe(200);
        expect((await press()).status).toBe(401);
        expect((await fetch(link)).status).toBe(401);
      } finally {
        await service.close();
      }
    }
    expect(tokens[1]).toBe(tokens[0]);
    expect(keys[1]).toBe(keys[0]);
  });
});

describe('the logs', () => {
  it('hold short hashes of tokens, never a token, a session cookie or a sign-in code', () => {
    const text = logLines.join('');
    expect(text).toContain('"msg":"incoming request"');
    expect(text).toContain(`"tokenHash":"${tokenHash(tokenA)}"`);
    expect(text).toContain('/ui/sign-in?code=[redacted]');
    expect(secrets.size).toBeGreaterThanOrEqual(10);
    for (const secret of secrets) expect(text, 'a secret was logged').not.toContain(secret);
  });
});
