// Tenants managed at runtime (docs/operations.md, "Tenants"): the admin API, two app instances sharing one
// database (a change made through one is seen by the other), rotation, revocation, removal, and what a
// database dump, the logs and the answers hold of the secrets (nothing).
import crypto from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Client } from '@temporalio/client';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/common/config.js';
import { KeyRing, parseKeys } from '../../src/common/secret-key.js';
import { endpointSecretPlace } from '../../src/db/endpoints.js';
import type { Pool } from '../../src/db/pool.js';
import { sessionCookie } from '../../src/http/access/session.js';
import { createRegistry, withRegisteredBots, type TenantRegistry } from '../../src/tenants/registry.js';
import { buildApp, type App } from '../../src/process/app.js';
import { capturedLogger, freshDatabase, testClient, testConfig, testPool } from '../harness/env.js';
import { lineHeaders, telegramHeaders, unifyportEvent, unifyportHeaders } from '../harness/events.js';
import { unique } from '../harness/random.js';
import { runCli } from '../harness/cli.js';

const adminToken = unique('tenants-admin-token');
const envWorkspace = unique('env-ws');
const envSecret = unique('env-signing-secret');
const scopedToken = unique('tenants-scoped-token');
/** A workspace that only a token of API_TOKENS names (a customer the environment still serves a token to). */
const formerWorkspace = unique('former-ws');
const formerToken = unique('tenants-former-token');
const secretKey = crypto.randomBytes(32).toString('hex');

/** Every secret value this file hands albumflow: none may be in a dump, a log line or an answer (but the one that creates it). */
const secrets = new Set<string>([adminToken, envSecret, scopedToken, formerToken, secretKey]);
const keep = (value: string) => (secrets.add(value), value);

const { logger, lines: logLines } = capturedLogger('tenants-test');
/** Every answer of this file but those that hand a secret out: a new token (shown once), a session cookie. */
const answers: string[] = [];

let config: Config;
let databaseUrl: string;
let poolA: Pool;
let poolB: Pool;
let temporal: Client;
let appA: App;
let appB: App;
let registryB: TenantRegistry;

/**
 * Every row of every table of the database, as text (each row's JSON, bytea as hex), table by table: what a
 * data-only dump holds. pg_dump would do, where one of the server's version is installed; the tests' embedded
 * PostgreSQL ships none, and a pg_dump older than the server refuses to dump it.
 */
async function databaseDump(pool: Pool): Promise<string> {
  const { rows: tables } = await pool.query<{ name: string }>(
    `SELECT format('%I.%I', table_schema, table_name) AS name FROM information_schema.tables
      WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1`,
  );
  expect(tables.length).toBeGreaterThan(5);
  const parts: string[] = [];
  for (const { name } of tables) {
    const { rows } = await pool.query<{ row: string }>(`SELECT row_to_json(t)::text AS row FROM ${name} t`);
    parts.push(`-- ${name}`, ...rows.map((r) => r.row));
  }
  return parts.join('\n');
}

async function appOn(pool: Pool, tenants?: TenantRegistry): Promise<App> {
  return buildApp({ config, pool, temporal, wakeDispatcher: () => undefined, logger, ...(tenants ? { tenants } : {}) });
}

beforeAll(async () => {
  databaseUrl = await freshDatabase();
  config = testConfig({
    DATABASE_URL: databaseUrl,
    WORKSPACE_SECRETS: JSON.stringify({ [envWorkspace]: [envSecret] }),
    API_TOKENS: JSON.stringify({ [adminToken]: ['*'], [scopedToken]: [envWorkspace], [formerToken]: [formerWorkspace] }),
    ALBUMFLOW_SECRET_KEY: secretKey,
  });
  poolA = testPool(config);
  poolB = testPool(config);
  temporal = await testClient(config);
  appA = await appOn(poolA);
  // Instance B's registry is the test's, so that the test can watch it take a change in.
  registryB = createRegistry({ config, pool: poolB, logger, tokens: config.apiTokens!, tokenLabel: 'API_TOKENS', touchIntervalMs: 200 });
  await registryB.start();
  appB = await appOn(poolB, registryB);
});

afterAll(async () => {
  await appA?.close();
  await appB?.close();
  await registryB?.close();
  await temporal?.connection.close();
  await poolA?.end();
  await poolB?.end();
});

async function call(app: App, options: InjectOptions, { showsSecret = false } = {}): Promise<LightMyRequestResponse> {
  const response = await app.inject(options);
  if (!showsSecret) answers.push(`${JSON.stringify(response.headers)}\n${response.body}`);
  return response;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const admin = (app: App, method: InjectOptions['method'], url: string, payload?: unknown) =>
  call(app, {
    method,
    url,
    headers: bearer(adminToken),
    ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
  });

function errorCode(response: LightMyRequestResponse): string | undefined {
  return response.json<{ error?: { code?: string } }>().error?.code;
}

function signedEvent(app: App, workspace: string, secret: string) {
  const body = JSON.stringify(unifyportEvent({ message: { id: unique('msg'), text: 'hello' } }));
  return call(app, { method: 'POST', url: `/webhooks/unifyport/${workspace}`, headers: unifyportHeaders(secret, body), payload: body });
}

/** Waits until `check` holds, at most `withinMs`; answers how long it took. */
async function within(withinMs: number, check: () => boolean | Promise<boolean>): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > withinMs) throw new Error(`not within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return Date.now() - started;
}

async function addWorkspace(app: App): Promise<{ workspace: string; secret: string; secretId: string }> {
  const workspace = unique('ws');
  expect((await admin(app, 'POST', '/admin/workspaces', { name: workspace })).statusCode).toBe(201);
  const secret = keep(unique('signing-secret'));
  const added = await admin(app, 'POST', `/admin/workspaces/${workspace}/secrets`, { secret });
  expect(added.statusCode).toBe(201);
  return { workspace, secret, secretId: added.json<{ id: string }>().id };
}

async function createToken(app: App, body: Record<string, unknown>): Promise<{ id: string; token: string }> {
  const created = await call(
    app,
    { method: 'POST', url: '/admin/tokens', headers: bearer(adminToken), payload: body },
    { showsSecret: true },
  );
  expect(created.statusCode).toBe(201);
  const { id, token } = created.json<{ id: string; token: string }>();
  return { id, token: keep(token) };
}

describe('the admin API', () => {
  it('adds, lists and removes workspaces, secrets, tokens, bots and channels, 201/204/404/409, and audits each change', async () => {
    const workspace = unique('ws');
    const created = await admin(appA, 'POST', '/admin/workspaces', { name: workspace });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({ name: workspace, source: 'database', unifyport: true, secrets: [], telegramBots: [] });
    expect(errorCode(await admin(appA, 'POST', '/admin/workspaces', { name: workspace }))).toBe('name_taken');
    expect((await admin(appA, 'POST', '/admin/workspaces', { name: envWorkspace })).statusCode).toBe(409);

    const secret = keep(unique('signing-secret'));
    const addedSecret = await admin(appA, 'POST', `/admin/workspaces/${workspace}/secrets`, { secret });
    expect(addedSecret.statusCode).toBe(201);
    const secretId = addedSecret.json<{ id: string }>().id;
    const botToken = keep(`7000000123:${crypto.randomBytes(20).toString('base64url')}`);
    const secretToken = keep(unique('telegram-secret-token'));
    const bot = await admin(appA, 'POST', `/admin/workspaces/${workspace}/telegram-bots`, { name: 'shop', token: botToken, secretToken });
    expect([bot.statusCode, bot.json()]).toEqual([201, expect.objectContaining({ name: 'shop', botId: '7000000123', source: 'database' })]);
    expect(
      (await admin(appA, 'POST', `/admin/workspaces/${workspace}/telegram-bots`, { name: 'shop', token: botToken, secretToken }))
        .statusCode,
    ).toBe(409);
    const channelSecret = keep(crypto.randomBytes(16).toString('hex'));
    const channelAccessToken = keep(crypto.randomBytes(40).toString('base64url'));
    const channel = await admin(appA, 'POST', `/admin/workspaces/${workspace}/line-channels`, {
      name: 'store',
      channelSecret,
      channelAccessToken,
    });
    expect(channel.statusCode).toBe(201);
    expect(
      (await admin(appA, 'POST', `/admin/workspaces/nope-${workspace}/secrets`, { secret: unique('signing-secret') })).statusCode,
    ).toBe(404);

    const listed = await admin(appA, 'GET', '/admin/workspaces');
    const workspaces = listed.json<{ workspaces: Array<Record<string, unknown>> }>().workspaces;
    expect(workspaces.find((w) => w.name === workspace)).toMatchObject({
      source: 'database',
      secrets: [{ id: secretId, source: 'database' }],
      telegramBots: [{ name: 'shop', botId: '7000000123' }],
      lineChannels: [{ name: 'store', source: 'database' }],
    });
    expect(workspaces.find((w) => w.name === envWorkspace)).toMatchObject({ source: 'environment', secrets: [{ source: 'environment' }] });

    // The bot and the channel take webhooks on the other instance.
    const update = JSON.stringify({
      update_id: 1,
      message: { message_id: 1, date: Math.floor(Date.now() / 1000), chat: { id: 5, type: 'private' }, text: 'hi' },
    });
    const telegram = await call(appB, {
      method: 'POST',
      url: `/webhooks/telegram/${workspace}/shop`,
      headers: telegramHeaders(secretToken),
      payload: update,
    });
    expect(telegram.statusCode).toBe(200);
    const lineBody = JSON.stringify({ destination: 'U0', events: [] });
    const line = await call(appB, {
      method: 'POST',
      url: `/webhooks/line/${workspace}/store`,
      headers: lineHeaders(channelSecret, lineBody),
      payload: lineBody,
    });
    expect(line.statusCode).toBe(200);
    // The worker's downloads find the bot's and the channel's tokens in the registry, opened.
    const worker = withRegisteredBots(config, registryB);
    expect(worker.telegram.bots.get(workspace)?.get('shop')).toMatchObject({ id: '7000000123', token: botToken });
    expect([...(worker.telegram.bots.get(workspace)?.values() ?? [])].map((b) => b.name)).toEqual(['shop']);
    expect(worker.line.channels.get(workspace)?.get('store')?.channelAccessToken).toBe(channelAccessToken);

    expect(errorCode(await admin(appA, 'DELETE', `/admin/workspaces/${envWorkspace}`))).toBe('read_only');
    expect((await admin(appA, 'DELETE', `/admin/workspaces/${workspace}/telegram-bots/shop`)).statusCode).toBe(204);
    expect((await admin(appA, 'DELETE', `/admin/workspaces/${workspace}/telegram-bots/shop`)).statusCode).toBe(404);
    expect((await admin(appA, 'DELETE', `/admin/workspaces/${workspace}/line-channels/store`)).statusCode).toBe(204);
    expect((await admin(appA, 'DELETE', `/admin/workspaces/${workspace}/secrets/${secretId}`)).statusCode).toBe(204);
    expect((await admin(appA, 'DELETE', `/admin/workspaces/${workspace}/secrets/${secretId}`)).statusCode).toBe(404);
    expect((await admin(appA, 'DELETE', `/admin/workspaces/${workspace}`)).statusCode).toBe(204);
    expect((await admin(appA, 'DELETE', `/admin/workspaces/${workspace}`)).statusCode).toBe(404);

    const audit = (await admin(appA, 'GET', '/admin/audit?limit=500')).json<{
      entries: Array<{ subject: string; action: string; tokenName: string; tokenHash: string }>;
    }>().entries;
    const mine = audit.filter((entry) => entry.subject.includes(workspace)).reverse();
    expect(mine.map((entry) => entry.action)).toEqual([
      'workspace.add',
      'secret.add',
      'telegram-bot.add',
      'line-channel.add',
      'telegram-bot.remove',
      'line-channel.remove',
      'secret.retire',
      'workspace.remove',
    ]);
    expect(mine.every((entry) => entry.tokenName === 'API_TOKENS #1' && /^[0-9a-f]{12}$/.test(entry.tokenHash))).toBe(true);
  });

  it('creates tokens shown once, lists them without their values, and refuses the environment’s changes', async () => {
    const { workspace } = await addWorkspace(appA);
    const name = unique('ci token');
    const { id, token } = await createToken(appA, { name, workspaces: [workspace] });
    expect(errorCode(await admin(appA, 'POST', '/admin/tokens', { name, workspaces: [workspace] }))).toBe('name_taken');
    const listed = (await admin(appA, 'GET', '/admin/tokens')).json<{ tokens: Array<Record<string, unknown>> }>().tokens;
    expect(listed.find((entry) => entry.id === id)).toMatchObject({ name, workspaces: [workspace], source: 'database', expiresAt: null });
    expect(listed.find((entry) => entry.name === 'API_TOKENS #1')).toMatchObject({ workspaces: ['*'], source: 'environment' });
    expect(JSON.stringify(listed)).not.toContain(token);

    // It reaches its workspace only, and not the admin API.
    expect((await call(appB, { method: 'GET', url: `/workspaces/${workspace}/albums`, headers: bearer(token) })).statusCode).toBe(200);
    expect((await call(appB, { method: 'GET', url: `/workspaces/${envWorkspace}/albums`, headers: bearer(token) })).statusCode).toBe(403);
    expect((await call(appA, { method: 'GET', url: '/admin/workspaces', headers: bearer(token) })).statusCode).toBe(403);
    expect(
      (await call(appA, { method: 'POST', url: '/admin/workspaces', headers: bearer(scopedToken), payload: { name: 'x' } })).statusCode,
    ).toBe(403);

    const envId = listed.find((entry) => entry.name === 'API_TOKENS #1')!.id as string;
    expect(errorCode(await admin(appA, 'DELETE', `/admin/tokens/${envId}`))).toBe('read_only');
    expect((await admin(appA, 'DELETE', `/admin/tokens/${id}`)).statusCode).toBe(204);
    expect((await admin(appA, 'DELETE', `/admin/tokens/${id}`)).statusCode).toBe(404);
  });

  it('refuses names that are not storable text or not a URL segment, and a token scope mixing * with workspaces, with a 400', async () => {
    for (const name of ['a\u0000b', 'a/b', '', 'x'.repeat(65), '\ud800', 'a b']) {
      const refused = await admin(appA, 'POST', '/admin/workspaces', { name });
      expect([refused.statusCode, errorCode(refused)], JSON.stringify(name)).toEqual([400, 'invalid_request']);
    }
    for (const body of [
      { name: 'tab\u0007', workspaces: ['*'] },
      { name: unique('t'), workspaces: ['*', envWorkspace] },
      { name: unique('t'), workspaces: [] },
      { name: unique('t'), workspaces: ['*'], expiresAt: '2001-01-01T00:00:00Z' },
      { name: unique('t'), workspaces: ['*'], expiresAt: 'tomorrow' },
    ]) {
      expect((await admin(appA, 'POST', '/admin/tokens', body)).statusCode, JSON.stringify(body)).toBe(400);
    }
    const workspace = unique('ws');
    expect((await admin(appA, 'POST', '/admin/workspaces', { name: workspace })).statusCode).toBe(201);
    expect((await admin(appA, 'POST', `/admin/workspaces/${workspace}/secrets`, { secret: 'short' })).statusCode).toBe(400);
    expect(
      (await admin(appA, 'POST', `/admin/workspaces/${workspace}/telegram-bots`, { name: 'b', token: 'not-a-token', secretToken: 'x' }))
        .statusCode,
    ).toBe(400);
  });

  it('is in the OpenAPI document', async () => {
    const paths = Object.keys((await call(appA, { method: 'GET', url: '/docs/json' })).json<{ paths: object }>().paths);
    expect(paths).toEqual(
      expect.arrayContaining([
        '/admin/workspaces',
        '/admin/workspaces/{ws}',
        '/admin/workspaces/{ws}/secrets',
        '/admin/workspaces/{ws}/secrets/{id}',
        '/admin/tokens',
        '/admin/tokens/{id}',
        '/admin/workspaces/{ws}/telegram-bots',
        '/admin/workspaces/{ws}/telegram-bots/{name}',
        '/admin/workspaces/{ws}/line-channels',
        '/admin/workspaces/{ws}/line-channels/{name}',
        '/admin/audit',
      ]),
    );
  });
});

describe('a workspace name is an identity', () => {
  const albumsOf = (app: App, workspace: string, headers: Record<string, string>) =>
    call(app, { method: 'GET', url: `/workspaces/${workspace}/albums`, headers });

  it('removing a workspace takes it out of every token: a token left with none is revoked, with its sessions', async () => {
    const { workspace } = await addWorkspace(appA);
    const { workspace: other } = await addWorkspace(appA);
    const onlyName = unique('only');
    const only = await createToken(appA, { name: onlyName, workspaces: [workspace] });
    const both = await createToken(appA, { name: unique('both'), workspaces: [workspace, other] });
    const signedIn = await call(appB, { method: 'POST', url: '/ui/sign-in', payload: { token: only.token } }, { showsSecret: true });
    const session = { cookie: `${sessionCookie}=${keep(signedIn.cookies.find((c) => c.name === sessionCookie)!.value)}` };
    expect((await albumsOf(appB, workspace, session)).statusCode).toBe(200);

    expect((await admin(appA, 'DELETE', `/admin/workspaces/${workspace}`)).statusCode).toBe(204);
    for (const app of [appA, appB]) {
      await within(2_000, async () => (await albumsOf(app, workspace, bearer(only.token))).statusCode === 401);
      expect((await albumsOf(app, workspace, session)).statusCode).toBe(401);
      await within(2_000, async () => (await albumsOf(app, workspace, bearer(both.token))).statusCode === 403);
      expect((await albumsOf(app, other, bearer(both.token))).statusCode).toBe(200);
    }
    const listed = (await admin(appA, 'GET', '/admin/tokens')).json<{ tokens: Array<{ id: string; workspaces: string[] }> }>().tokens;
    expect(listed.find((t) => t.id === only.id)).toBeUndefined();
    expect(listed.find((t) => t.id === both.id)?.workspaces).toEqual([other]);
    const { rows } = await poolA.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM console_sessions WHERE token_digest = sha256(convert_to($1, 'UTF8'))`,
      [only.token],
    );
    expect(rows[0]!.n).toBe(0);
    const audit = (await admin(appA, 'GET', '/admin/audit?limit=500')).json<{ entries: Array<{ action: string; subject: string }> }>()
      .entries;
    // Newest first: the removal, and the revocation it made in its transaction (other tests change tenants meanwhile).
    const mine = audit.filter((entry) => entry.subject.includes(workspace));
    expect(mine.slice(0, 2).map((entry) => [entry.action, entry.subject])).toEqual([
      ['workspace.remove', `workspace ${workspace}`],
      ['token.revoke', `token ${onlyName} (its only workspace, ${workspace}, was removed)`],
    ]);
  });

  it('a removed name whose data remains is not added again; once its data is gone, the new workspace is reached by its own tokens only', async () => {
    const { workspace, secret } = await addWorkspace(appA);
    const old = await createToken(appA, { name: unique('old customer'), workspaces: [workspace] });
    expect((await signedEvent(appA, workspace, secret)).statusCode).toBe(202);
    expect((await admin(appA, 'DELETE', `/admin/workspaces/${workspace}`)).statusCode).toBe(204);

    const refused = await admin(appA, 'POST', '/admin/workspaces', { name: workspace });
    expect([refused.statusCode, errorCode(refused)]).toEqual([409, 'workspace_data_remains']);
    expect(refused.json<{ error: { message: string } }>().error.message).toBe(
      `"${workspace}" still holds data (messages, events): erase it with DELETE /admin/workspaces/${workspace}/data first`,
    );
    expect(registryB.workspace(workspace)).toBeUndefined();

    // What the workspace erasure removes (an erasure's receipt and the counters it keeps do not hold the name).
    await poolA.query(`DELETE FROM outbox WHERE message_pk IN (SELECT id FROM messages WHERE workspace = $1)`, [workspace]);
    await poolA.query(`DELETE FROM messages WHERE workspace = $1`, [workspace]);
    await poolA.query(`DELETE FROM events WHERE workspace = $1`, [workspace]);
    await poolA.query(
      `INSERT INTO erasures (workspace, scope, subject, requested_by, state) VALUES ($1, 'conversation', '{}', 'test', 'done')`,
      [workspace],
    );
    // While an erasure of the whole workspace runs, its last step removes every row of the name: not yet.
    const { rows: running } = await poolA.query<{ id: string }>(
      `INSERT INTO erasures (workspace, scope, subject, requested_by) VALUES ($1, 'workspace', '{}', 'test') RETURNING id`,
      [workspace],
    );
    const erasing = await admin(appA, 'POST', '/admin/workspaces', { name: workspace });
    expect([erasing.statusCode, errorCode(erasing)]).toEqual([409, 'workspace_being_erased']);
    expect(erasing.json<{ error: { message: string } }>().error.message).toBe(
      `"${workspace}" is being erased (erasure ${running[0]!.id}): add it again once that erasure is done`,
    );
    await poolA.query(`UPDATE erasures SET state = 'done' WHERE id = $1`, [running[0]!.id]);
    expect((await admin(appA, 'POST', '/admin/workspaces', { name: workspace })).statusCode).toBe(201);
    const fresh = await createToken(appA, { name: unique('new customer'), workspaces: [workspace] });
    for (const app of [appA, appB]) {
      expect((await albumsOf(app, workspace, bearer(old.token))).statusCode).toBe(401);
      expect((await albumsOf(app, workspace, bearer(fresh.token))).statusCode).toBe(200);
    }
  });

  it('a name a token of the environment names is not added; a token is created only for workspaces that exist', async () => {
    const named = await admin(appA, 'POST', '/admin/workspaces', { name: formerWorkspace });
    expect([named.statusCode, errorCode(named)]).toEqual([409, 'workspace_named_by_token']);
    expect(named.json<{ error: { message: string } }>().error.message).toContain('(API_TOKENS #3)');

    const { workspace } = await addWorkspace(appA);
    const missing = unique('missing');
    for (const workspaces of [[missing], [workspace, missing], [formerWorkspace]]) {
      const refused = await admin(appA, 'POST', '/admin/tokens', { name: unique('t'), workspaces });
      expect([refused.statusCode, errorCode(refused)], workspaces.join()).toEqual([404, 'workspace_not_found']);
      expect(refused.json<{ error: { message: string } }>().error.message).toBe(`there is no workspace "${workspaces.at(-1)}"`);
    }
    // Workspaces of the environment, and `*`, take tokens.
    await createToken(appA, { name: unique('env ws'), workspaces: [envWorkspace, workspace] });
    await createToken(appA, { name: unique('all'), workspaces: ['*'] });
  });

  it("lists the environment's tokens' last use beside the table's", async () => {
    const lastUse = async () =>
      (await admin(appB, 'GET', '/admin/tokens'))
        .json<{ tokens: Array<{ name: string; lastUsedAt: string | null }> }>()
        .tokens.find((t) => t.name === 'API_TOKENS #1')?.lastUsedAt ?? null;
    const before = Date.now();
    // Each call uses the admin token on instance B; its registry writes the use within 200 ms and reads it within the second.
    await within(3_000, async () => {
      const at = await lastUse();
      return at !== null && Date.parse(at) >= before - 1_000;
    });
  });
});

describe('a change made on one instance', () => {
  it('reaches the other within 2 s by its notification, and a request that comes first is not refused', async () => {
    const workspace = unique('ws');
    expect((await admin(appA, 'POST', '/admin/workspaces', { name: workspace })).statusCode).toBe(201);
    // By the notification alone: nothing on B looks the workspace up meanwhile.
    const took = await within(2_000, () => registryB.workspace(workspace) !== undefined);
    expect(took).toBeLessThan(2_000);

    // A secret added on A verifies on B at once, even before B's notification arrived.
    const secret = keep(unique('signing-secret'));
    expect((await admin(appA, 'POST', `/admin/workspaces/${workspace}/secrets`, { secret })).statusCode).toBe(201);
    expect((await signedEvent(appB, workspace, secret)).statusCode).toBe(202);
    expect((await signedEvent(appA, workspace, secret)).statusCode).toBe(202);
    // A workspace of the API without a secret takes no unsigned webhook.
    const bare = unique('ws');
    expect((await admin(appA, 'POST', '/admin/workspaces', { name: bare })).statusCode).toBe(201);
    const unsigned = await call(appA, {
      method: 'POST',
      url: `/webhooks/unifyport/${bare}`,
      headers: { 'content-type': 'application/json' },
      payload: '{}',
    });
    expect([unsigned.statusCode, errorCode(unsigned)]).toEqual([401, 'missing_signature']);
  });

  it('reaches the other within 2 s by the periodic reload when its notification is lost', async () => {
    const workspace = unique('ws');
    const client = await poolA.connect();
    try {
      // Triggers do not fire for a replica's session: this insert notifies nobody.
      await client.query(`SET session_replication_role = replica`);
      await client.query(`INSERT INTO workspaces (name) VALUES ($1)`, [workspace]);
      await client.query(`RESET session_replication_role`);
    } finally {
      client.release();
    }
    const took = await within(2_000, () => registryB.workspace(workspace) !== undefined);
    expect(took).toBeLessThan(2_000);
  });

  it('rotates a secret under load on both instances without refusing one request', async () => {
    const { workspace, secret: old, secretId: oldId } = await addWorkspace(appA);
    await within(2_000, () => registryB.workspace(workspace)?.secrets.length === 1);
    let current = old;
    let sending = true;
    const statuses: number[] = [];
    const sender = (async () => {
      for (let i = 0; sending; i++) statuses.push((await signedEvent(i % 2 ? appA : appB, workspace, current)).statusCode);
    })();
    await new Promise((resolve) => setTimeout(resolve, 200));
    const next = keep(unique('signing-secret'));
    expect((await admin(appA, 'POST', `/admin/workspaces/${workspace}/secrets`, { secret: next })).statusCode).toBe(201);
    // The sender switches at once, while B may not have been told yet.
    current = next;
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await admin(appA, 'DELETE', `/admin/workspaces/${workspace}/secrets/${oldId}`)).statusCode).toBe(204);
    await new Promise((resolve) => setTimeout(resolve, 200));
    sending = false;
    await sender;
    expect(statuses.length).toBeGreaterThan(20);
    expect(new Set(statuses)).toEqual(new Set([202]));

    // The retired secret verifies no more: on A at once, on B within 2 s.
    expect((await signedEvent(appA, workspace, old)).statusCode).toBe(401);
    await within(2_000, async () => (await signedEvent(appB, workspace, old)).statusCode === 401);
  });

  it('revokes a token on both instances within 2 s, with the console sessions it opened; an expired token is refused', async () => {
    const { workspace } = await addWorkspace(appA);
    const { id, token } = await createToken(appA, { name: unique('revoked'), workspaces: [workspace] });
    const url = `/workspaces/${workspace}/albums`;
    const signedIn = await call(appB, { method: 'POST', url: '/ui/sign-in', payload: { token } }, { showsSecret: true });
    expect(signedIn.statusCode).toBe(200);
    const cookie = signedIn.cookies.find((c) => c.name === sessionCookie)!.value;
    keep(cookie);
    const bySession = () => call(appB, { method: 'GET', url, headers: { cookie: `${sessionCookie}=${cookie}` } });
    expect((await bySession()).statusCode).toBe(200);
    expect((await call(appB, { method: 'GET', url, headers: bearer(token) })).statusCode).toBe(200);

    expect((await admin(appA, 'DELETE', `/admin/tokens/${id}`)).statusCode).toBe(204);
    expect((await call(appA, { method: 'GET', url, headers: bearer(token) })).statusCode).toBe(401);
    expect((await bySession()).statusCode).toBe(401);
    const took = await within(2_000, async () => (await call(appB, { method: 'GET', url, headers: bearer(token) })).statusCode === 401);
    expect(took).toBeLessThan(2_000);

    const expiring = await createToken(appA, {
      name: unique('expiring'),
      workspaces: [workspace],
      expiresAt: new Date(Date.now() + 1_500).toISOString(),
    });
    expect((await call(appB, { method: 'GET', url, headers: bearer(expiring.token) })).statusCode).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1_600));
    for (const app of [appA, appB]) expect((await call(app, { method: 'GET', url, headers: bearer(expiring.token) })).statusCode).toBe(401);
  });

  it('removes a workspace: its webhooks answer 404 on both instances, its stored children stay', async () => {
    const { workspace, secret } = await addWorkspace(appA);
    expect((await signedEvent(appB, workspace, secret)).statusCode).toBe(202);
    expect((await admin(appA, 'DELETE', `/admin/workspaces/${workspace}`)).statusCode).toBe(204);
    expect((await signedEvent(appA, workspace, secret)).statusCode).toBe(404);
    // Until instance B hears of the removal it still takes (and stores) what is signed for the workspace.
    let acceptedMeanwhile = 0;
    await within(2_000, async () => {
      const { statusCode } = await signedEvent(appB, workspace, secret);
      if (statusCode === 202) acceptedMeanwhile += 1;
      return statusCode === 404;
    });
    const { rows } = await poolA.query<{ n: number }>('SELECT count(*)::int AS n FROM messages WHERE workspace = $1', [workspace]);
    expect(rows[0]!.n).toBe(1 + acceptedMeanwhile);
  });
});

describe('the CLI', () => {
  let url: string;
  beforeAll(async () => {
    await appA.listen({ port: 0, host: '127.0.0.1' });
    url = `http://127.0.0.1:${(appA.server.address() as AddressInfo).port}`;
  });
  const albumflow = (args: string[], env: Record<string, string> = {}) =>
    runCli(args, { ALBUMFLOW_URL: url, ALBUMFLOW_TOKEN: adminToken, DATABASE_URL: '', ALBUMFLOW_SECRET_KEY: '', ...env });
  const ok = async (args: string[]) => {
    const run = await albumflow(args);
    expect([run.code, run.stderr], args.join(' ')).toEqual([0, '']);
    return run.stdout;
  };

  // Each CLI run is a process of its own, seconds apart on a busy machine.
  it(
    'adds a customer in three commands, whose webhooks the other instance takes, then revokes and removes it',
    { timeout: 240_000 },
    async () => {
      const workspace = unique('customer');
      await ok(['workspace', 'add', workspace]);
      const added = await ok(['secret', 'add', workspace]);
      const [, secretId, secret] = /^secret (\S+) added to \S+: (\S+)$/m.exec(added)!;
      keep(secret!);
      const created = await ok(['token', 'create', `${workspace} status`, workspace]);
      const token = keep(/: (\S+)$/m.exec(created)![1]!);

      expect((await signedEvent(appB, workspace, secret!)).statusCode).toBe(202);
      expect((await call(appB, { method: 'GET', url: `/workspaces/${workspace}/albums`, headers: bearer(token) })).statusCode).toBe(200);
      const listed = await ok(['token', 'list']);
      expect(listed).toContain(`${workspace} status`);
      expect(listed).not.toContain(token);
      expect(await ok(['workspace', 'list'])).toContain(secretId);

      const botToken = keep(`7000000999:${crypto.randomBytes(20).toString('base64url')}`);
      expect(await ok(['telegram', 'add-bot', workspace, 'shop', '--token', botToken])).toContain('id 7000000999');
      await ok(['telegram', 'remove-bot', workspace, 'shop']);
      const channelSecret = keep(crypto.randomBytes(16).toString('hex'));
      const channelAccessToken = keep(crypto.randomBytes(40).toString('base64url'));
      await ok([
        'line',
        'add-channel',
        workspace,
        'store',
        '--channel-secret',
        channelSecret,
        '--channel-access-token',
        channelAccessToken,
      ]);
      await ok(['line', 'remove-channel', workspace, 'store']);

      const tokenId = /^token (\S+) /m.exec(created)![1]!;
      await ok(['token', 'revoke', tokenId]);
      expect((await call(appA, { method: 'GET', url: `/workspaces/${workspace}/albums`, headers: bearer(token) })).statusCode).toBe(401);
      await ok(['secret', 'retire', workspace, secretId!]);
      await ok(['workspace', 'remove', workspace]);
      const audit = await ok(['audit']);
      for (const action of ['workspace.add', 'secret.add', 'token.create', 'telegram-bot.add', 'line-channel.remove', 'workspace.remove'])
        expect(audit).toContain(action);

      const again = await albumflow(['workspace', 'remove', workspace]);
      expect([again.code, again.stderr]).toEqual([1, expect.stringMatching(/^albumflow: 404 workspace_not_found/)]);
      const scoped = await albumflow(['workspace', 'list'], { ALBUMFLOW_TOKEN: scopedToken });
      expect([scoped.code, scoped.stderr]).toEqual([1, expect.stringMatching(/^albumflow: 403 workspace_not_allowed/)]);
    },
  );
});

describe('the console’s tenants page', () => {
  it('lists workspaces, tokens (never their values) and changes, escaped, and takes its forms from its own pages only', async () => {
    const { workspace, secret } = await addWorkspace(appA);
    const hostileName = `<script>alert(1)</script> ${unique('t')}`;
    await createToken(appA, { name: hostileName, workspaces: [workspace] });
    const signedIn = await call(appA, { method: 'POST', url: '/ui/sign-in', payload: { token: adminToken } }, { showsSecret: true });
    const cookie = `${sessionCookie}=${keep(signedIn.cookies.find((c) => c.name === sessionCookie)!.value)}`;
    const page = await call(appA, { method: 'GET', url: '/ui/tenants', headers: { cookie, accept: 'text/html' } });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(workspace);
    expect(page.body).toContain(envWorkspace);
    expect(page.body).toContain('from the environment');
    expect(page.body).toContain('token.create');
    expect(page.body).not.toContain('<script>alert(1)</script>');
    expect(page.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(page.body).not.toContain(secret);

    const form = (url: string, payload: string, site: string) =>
      call(
        appA,
        { method: 'POST', url, payload, headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': site } },
        { showsSecret: url.endsWith('/tokens') },
      );
    const added = unique('ws');
    expect((await form('/ui/tenants/workspaces', `name=${added}`, 'cross-site')).statusCode).toBe(403);
    expect(registryB.workspace(added)).toBeUndefined();
    const ok = await form('/ui/tenants/workspaces', `name=${added}`, 'same-origin');
    expect([ok.statusCode, ok.headers.location]).toEqual([303, expect.stringMatching(/^\/ui\/tenants\?done=/)]);
    expect((await form('/ui/tenants/workspaces', `name=${added}`, 'same-origin')).statusCode).toBe(409);
    // Each kind of refused change is said on the page, with the status the admin API answers it with.
    for (const [url, payload, status, message] of [
      [`/ui/tenants/workspaces/${unique('none')}/remove`, '', 404, 'there is no workspace'],
      [`/ui/tenants/workspaces/${envWorkspace}/remove`, '', 409, 'is declared in the environment at start'],
      ['/ui/tenants/tokens', `name=${unique('mixed')}&workspaces=*,${added}`, 400, 'beside other workspaces'],
    ] as const) {
      const refused = await form(url, payload, 'same-origin');
      expect([refused.statusCode, refused.body], url).toEqual([status, expect.stringContaining(message)]);
    }
    const created = await form('/ui/tenants/tokens', `name=${unique('console')}&workspaces=${added}`, 'same-origin');
    expect(created.statusCode).toBe(201);
    const token = keep(/<code>([A-Za-z0-9_-]{43})<\/code>/.exec(created.body)![1]!);
    expect((await call(appB, { method: 'GET', url: `/workspaces/${added}/albums`, headers: bearer(token) })).statusCode).toBe(200);
    // Nobody but a `*` token sees anything of it, not even on a refusal.
    for (const headers of [bearer(scopedToken), {}, { cookie: `${sessionCookie}=${'x'.repeat(43)}` }]) {
      for (const [method, url] of [
        ['GET', '/ui/tenants'],
        ['POST', '/ui/tenants/workspaces'],
      ] as const) {
        const refused = await call(appA, { method, url, headers, ...(method === 'POST' ? { payload: { name: 'x' } } : {}) });
        expect([401, 403], `${method} ${url}`).toContain(refused.statusCode);
        expect(refused.body).not.toContain(workspace);
      }
    }
  });
});

describe('what albumflow keeps and says of the secrets', () => {
  it('leaves none in a database dump, the logs, the answers or /metrics', async () => {
    const metrics = await admin(appA, 'GET', '/metrics');
    expect(metrics.statusCode).toBe(200);
    const dump = await databaseDump(poolA);
    // The dump holds the tenants (so it is the right one), sealed.
    expect(dump).toContain('-- public.workspace_secrets');
    expect(dump).toContain('workspace.add');
    const logs = logLines.join('');
    expect(logs).toContain('tenants changed');
    for (const value of secrets) {
      const forms = [value, Buffer.from(value).toString('hex'), Buffer.from(value).toString('base64')];
      for (const form of forms) {
        expect(dump.includes(form), 'the dump holds a secret').toBe(false);
        expect(logs.includes(form), 'a log line holds a secret').toBe(false);
        expect(
          answers.some((answer) => answer.includes(form)),
          'an answer holds a secret',
        ).toBe(false);
      }
    }
    expect(secrets.size).toBeGreaterThan(15);
  });
});

describe('secrets rekey', () => {
  it('seals every stored secret under the new key: an instance that has only the new key opens them all', async () => {
    const { workspace, secret } = await addWorkspace(appA);
    // An endpoint's whsec_ secret is a stored secret too.
    const endpoint = await appA.inject({
      method: 'POST',
      url: `/workspaces/${workspace}/endpoints`,
      headers: bearer(adminToken),
      payload: { url: 'https://1.1.1.1/hooks' },
    });
    expect(endpoint.statusCode).toBe(201);
    keep(endpoint.json<{ secret: string }>().secret);
    const fresh = keep(crypto.randomBytes(32).toString('hex'));
    const run = await runCli(['secrets', 'rekey'], { DATABASE_URL: databaseUrl, ALBUMFLOW_SECRET_KEY: `${fresh},${secretKey}` });
    expect([run.code, run.stderr]).toEqual([0, '']);
    expect(run.stdout).toMatch(/^\d+ stored secrets sealed again under key [0-9a-f]{16}; /);
    expect(Number(/^(\d+)/.exec(run.stdout)![1])).toBeGreaterThan(0);
    const again = await runCli(['secrets', 'rekey'], { DATABASE_URL: databaseUrl, ALBUMFLOW_SECRET_KEY: fresh });
    expect(again.stdout).toMatch(/^0 stored secrets sealed again/);

    const pool = testPool(config);
    const app = await buildApp({ config: { ...config, secretKey: fresh }, pool, temporal, wakeDispatcher: () => undefined, logger });
    try {
      expect((await signedEvent(app, workspace, secret)).statusCode).toBe(202);
      const freshOnly = new KeyRing(parseKeys(fresh, 'the new key'));
      const { rows } = await pool.query<{ endpoint_id: string; id: string; secret: Buffer }>(
        `SELECT endpoint_id, id, secret FROM endpoint_secrets`,
      );
      expect(rows.length).toBeGreaterThan(0);
      for (const row of rows) expect(freshOnly.open(row.secret, endpointSecretPlace(row.endpoint_id, row.id))).toMatch(/^whsec_/);
    } finally {
      await app.close();
      await pool.end();
    }
  });
});
