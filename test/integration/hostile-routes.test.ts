import fc from 'fast-check';
import type { RouteOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../../src/process/app.js';
import { secretTokenHeader } from '../../src/platforms/telegram/account.js';
import { signatureHeader } from '../../src/common/signature.js';
import { lineSignature } from '../../src/platforms/line/signature.js';
import { albumWorkflowId } from '../../src/domain/keys.js';
import { eventually } from '../harness/albums.js';
import { testLogger } from '../harness/env.js';
import { albumEvent, recentMs, recentSeconds } from '../harness/events.js';
import { unique } from '../harness/random.js';
import { notifications } from '../harness/rows.js';
import { startStack, type Stack } from '../harness/stack.js';

// Every route of the app, walked with hostile values in each path segment, query parameter and body field
// (and each field of the webhooks' signed bodies): NUL, unpaired surrogates, control characters,
// over-long strings, numbers beyond PostgreSQL's bigint and integer. No answer is a 5xx, and a refused
// request changes no row of any table — but for the quarantine table, which keeps a verified webhook body
// that cannot become a child: it then holds exactly that body, under the code of the answer.

const adminToken = unique('hostile-routes-admin');
/**
 * The webhooks post to a workspace of their own: what they store (children whose workflows never start,
 * the dispatcher being stopped) is then never found by a request to the other routes, whose workspace
 * holds the one album they look at — an operator action on an album without a running workflow would
 * start one, which changes rows later.
 */
const ingressWorkspace = unique('hostile-ingress');
const ingressSecret = 'hostile-ingress-secret';
const bot = { name: 'shop', token: '424242:hostile-routes-bot', secretToken: 'hostile-routes-secret' };
const channel = { name: 'shop', channelSecret: 'abcdef0123456789abcdef0123456789', channelAccessToken: 'hostile-routes-line-token' };
const conversation = unique('conv');

let stack: Stack;
let app: App;
const routes: Array<{ method: string; url: string; schema: RouteOptions['schema'] }> = [];

beforeAll(async () => {
  stack = await startStack((workspace) => ({
    QUIET_PERIOD_MS: '300',
    MAX_WAIT_MS: '3000',
    LATE_WINDOW_MS: '3600000',
    API_TOKENS: JSON.stringify({ [adminToken]: ['*'] }),
    // The stack's own workspace keeps the secret the stack signs with.
    WORKSPACE_SECRETS: JSON.stringify({ [workspace]: ['stack-secret'], [ingressWorkspace]: [ingressSecret] }),
    TELEGRAM_BOTS: JSON.stringify({ [ingressWorkspace]: { [bot.name]: { token: bot.token, secretToken: bot.secretToken } } }),
    LINE_CHANNELS: JSON.stringify({ [ingressWorkspace]: { [channel.name]: channel } }),
  }));
  // One album the routes can find: decided on its quiet period, flagged for review (its index is no number),
  // its attachment without a URL (settled at once). Once its workflow waits for its late window, nothing
  // changes in PostgreSQL unless a request changes it.
  expect((await stack.post(albumEvent({ conversationId: conversation, albumId: 'alb', messageId: 'm0', index: 'first' }))).statusCode).toBe(
    202,
  );
  const workflowId = albumWorkflowId({
    workspace: stack.workspace,
    provider: 'whatsapp',
    accountId: 'acc_1',
    conversationId: conversation,
    albumId: 'alb',
  });
  await eventually(async () => {
    const types = (await notifications.read(stack.pool, { workflowId }, ['type'])).map((n) => n.type);
    expect(types).toEqual(expect.arrayContaining(['album.ready', 'album.media_settled']));
    const description = await stack.client.workflow.getHandle(workflowId).describe();
    expect(description.raw.pendingActivities ?? []).toEqual([]);
    const { rows } = await stack.pool.query(`SELECT 1 FROM outbox`);
    expect(rows).toEqual([]);
  });
  // Children stored from here on stay in the outbox: no workflow runs for them and changes rows later.
  await stack.dispatcher.stop();

  app = await buildApp({
    config: stack.config,
    pool: stack.pool,
    temporal: stack.client,
    wakeDispatcher: () => undefined,
    logger: testLogger(stack.config),
    onRoute: (route) => {
      for (const method of [route.method].flat()) routes.push({ method, url: route.url, schema: route.schema });
    },
  });
  await app.ready();
}, 120_000);

afterAll(async () => {
  await app?.close();
  await stack?.close();
});

/** Every row of every table but the quarantine, as a count and a digest per table. */
async function fingerprint(): Promise<Record<string, string>> {
  const { rows } = await stack.pool.query<{ name: string; print: string }>(
    `SELECT c.relname AS name,
            (xpath('/row/f/text()', query_to_xml(format(
              'SELECT count(*) || '':'' || coalesce(md5(string_agg(t::text, '','' ORDER BY t::text)), '''') AS f FROM %I.%I t',
              n.nspname, c.relname), false, true, '')))[1]::text AS print
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind IN ('r', 'p') AND n.nspname = current_schema()
        AND c.relname NOT IN ('quarantine', 'erasures', 'environment_token_uses')
      ORDER BY 1`,
  );
  // environment_token_uses records when each API_TOKENS token was last used (shown as its "last used"):
  // every request with a token touches it, whatever it asks; what a request could change is the data.
  // An erasure an earlier request started goes on in the background: its receipt's progress (state, counts)
  // changes by itself; what a request could change is which receipts there are.
  const erasures = await stack.pool.query<{ print: string }>(
    `SELECT count(*) || ':' || coalesce(md5(string_agg(id::text || subject::text || requested_by, ',' ORDER BY id)), '') AS print FROM erasures`,
  );
  return { ...Object.fromEntries(rows.map((row) => [row.name, row.print])), erasures: erasures.rows[0]!.print };
}

async function lastQuarantineId(): Promise<string> {
  const { rows } = await stack.pool.query<{ id: string }>(`SELECT coalesce(max(id), 0)::text AS id FROM quarantine`);
  return rows[0]!.id;
}

async function quarantinedSince(id: string): Promise<Array<{ workspace: string; reason: string; raw: Buffer }>> {
  const { rows } = await stack.pool.query<{ workspace: string; reason: string; raw: Buffer }>(
    `SELECT workspace, reason, raw FROM quarantine WHERE id > $1 ORDER BY id`,
    [id],
  );
  return rows;
}

/** A value as it travels in a URL: `text` is percent-encoded (a lone surrogate as its WTF-8 bytes), `raw` is sent as it is. */
type UrlValue = { text: string } | { raw: string };
/** A value of a JSON body: any JSON value, or `raw` JSON text (a number no JavaScript number holds). */
type BodyValue = { json: unknown } | { raw: string };

function percentEncode(text: string): string {
  let out = '';
  for (const char of text) {
    const code = char.codePointAt(0)!;
    if (code >= 0xd800 && code <= 0xdfff) {
      out += [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)]
        .map((b) => `%${b.toString(16).toUpperCase()}`)
        .join('');
    } else {
      out += encodeURIComponent(char);
    }
  }
  return out;
}

const inUrl = (value: UrlValue) => ('raw' in value ? value.raw : percentEncode(value.text));

const anyCodeUnit = fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit));
const anyControl = fc.integer({ min: 0, max: 0x1f }).map((unit) => String.fromCharCode(unit));
const tooLong = fc.constantFrom(129, 513, 2001, 4097, 20_000).map((n) => 'x'.repeat(n));
const outOfRange = fc.oneof(
  fc.constantFrom(
    '9223372036854775808',
    '-9223372036854775809',
    '2147483648',
    '-1',
    '0',
    '1e400',
    'NaN',
    'Infinity',
    '1.5',
    '0x10',
    '1e19',
  ),
  fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n }).map(String),
);
const hostileText = fc.oneof(
  fc.constantFrom('\u0000', 'a\u0000b', '\ud800', 'x\udfffy', '\udc00\ud800', '\u0001\u001b[31m\u007f', '\r\n\t', '', ' ', '..', '/'),
  fc.string({ unit: anyCodeUnit, maxLength: 24 }),
  fc.string({ unit: anyControl, minLength: 1, maxLength: 8 }),
  tooLong,
  outOfRange,
);
const hostileUrlValue: fc.Arbitrary<UrlValue> = fc.oneof(
  { weight: 5, arbitrary: hostileText.map((text) => ({ text })) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('%', '%zz', '%C0%AF', '%ED%A0%80', '%00%00', '%uD800', '..%2F..', '%2e%2e').map((raw) => ({ raw })),
  },
);
const hostileBodyValue: fc.Arbitrary<BodyValue> = fc.oneof(
  { weight: 4, arbitrary: hostileText.map((json) => ({ json })) },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom<unknown>(null, true, -1, 2 ** 63, 2 ** 31, 1.5, Number.MAX_SAFE_INTEGER + 2, [], {}, ['\u0000'], { '\ud800': 1 })
      .map((json) => ({ json })),
  },
  { weight: 1, arbitrary: fc.constantFrom('1e400', '-1e400', '123456789012345678901234567890', '1e200000').map((raw) => ({ raw })) },
);

/** The value of each path parameter that names the stored album (or, for a webhook, the configured workspace and bot). */
function baselineParams(webhook: boolean): Record<string, string> {
  return {
    workspace: webhook ? ingressWorkspace : stack.workspace,
    provider: 'whatsapp',
    account: 'acc_1',
    conversation,
    album: 'alb',
    message: 'm0',
    sha256: '0'.repeat(64),
    bot: bot.name,
    channel: channel.name,
    '*': 'index.html',
  };
}

/** The fields of a webhook body a hostile value may take, as paths into its template. */
const unifyportFields = [
  ['id'],
  ['type'],
  ['provider'],
  ['account_id'],
  ['data'],
  ['data', 'conversation', 'id'],
  ['data', 'message', 'id'],
  ['data', 'message', 'text'],
  ['data', 'message', 'caption'],
  ['data', 'message', 'sent_at'],
  ['data', 'message', 'attachments'],
  ['data', 'message', 'attachments', 0, 'type'],
  ['data', 'message', 'attachments', 0, 'url'],
  ['data', 'message', 'attachments', 0, 'mime_type'],
  ['data', 'message', 'attachments', 0, 'size'],
  ['data', 'message', 'attachments', 0, 'file_name'],
  ['data', 'message', 'album', 'id'],
  ['data', 'message', 'album', 'index'],
  ['data', 'message', 'album', 'total'],
  ['extra'],
] as const;

const telegramFields = [
  ['update_id'],
  ['message', 'message_id'],
  ['message', 'chat', 'id'],
  ['message', 'date'],
  ['message', 'caption'],
  ['message', 'media_group_id'],
  ['message', 'business_connection_id'],
  ['message', 'photo'],
  ['message', 'photo', 0, 'file_id'],
  ['message', 'photo', 0, 'file_unique_id'],
  ['message', 'photo', 0, 'width'],
  ['message', 'photo', 0, 'height'],
  ['message', 'photo', 0, 'file_size'],
  ['message', 'live_photo'],
  ['message', 'paid_media'],
  ['edited_message'],
  ['deleted_business_messages'],
] as const;

const lineFields = [
  ['destination'],
  ['events'],
  ['events', 0, 'type'],
  ['events', 0, 'webhookEventId'],
  ['events', 0, 'timestamp'],
  ['events', 0, 'source', 'groupId'],
  ['events', 0, 'source', 'userId'],
  ['events', 0, 'message', 'id'],
  ['events', 0, 'message', 'type'],
  ['events', 0, 'message', 'contentProvider', 'type'],
  ['events', 0, 'message', 'contentProvider', 'originalContentUrl'],
  ['events', 0, 'message', 'imageSet', 'id'],
  ['events', 0, 'message', 'imageSet', 'index'],
  ['events', 0, 'message', 'imageSet', 'total'],
  ['events', 1, 'unsend', 'messageId'],
] as const;

function lineTemplate(): Record<string, unknown> {
  const source = { type: 'group', groupId: 'C-hostile', userId: 'U-hostile' };
  return {
    destination: 'U-hostile-bot',
    events: [
      {
        type: 'message',
        webhookEventId: unique('01J'),
        timestamp: recentMs(1_790_762_400_000),
        source,
        message: { type: 'image', id: unique('m'), contentProvider: { type: 'line' }, imageSet: { id: 'set-1', index: 1, total: 2 } },
      },
      {
        type: 'unsend',
        webhookEventId: unique('01J'),
        timestamp: recentMs(1_790_762_400_000),
        source,
        unsend: { messageId: 'never-stored' },
      },
    ],
  };
}

function unifyportTemplate(): Record<string, unknown> {
  return albumEvent({ conversationId: conversation, albumId: 'alb', messageId: unique('m'), index: 1, attachments: [{ type: 'image' }] });
}

function telegramTemplate(): Record<string, unknown> {
  const id = Math.floor(Math.random() * 1e9) + 1;
  return {
    update_id: id,
    message: {
      message_id: id,
      chat: { id: -1001 },
      date: recentSeconds(1_790_762_400),
      caption: 'photo',
      media_group_id: 'group-1',
      photo: [{ file_id: 'file', file_unique_id: 'unique', width: 90, height: 60, file_size: 1234 }],
    },
  };
}

/** Where raw JSON text goes: the JSON of the placeholder string below. */
const rawMarker = JSON.stringify('\u0000raw-json\u0000');

/** The template with `value` at `path`, as JSON text. */
function withField(template: Record<string, unknown>, path: readonly (string | number)[], value: BodyValue): string {
  const copy = structuredClone(template);
  let at: Record<string | number, unknown> = copy;
  for (const key of path.slice(0, -1)) at = at[key] as Record<string | number, unknown>;
  at[path[path.length - 1]!] = 'raw' in value ? '\u0000raw-json\u0000' : value.json;
  const text = JSON.stringify(copy);
  return 'raw' in value ? text.replace(rawMarker, value.raw) : text;
}

type Target =
  | { route: string; method: string; url: string; where: 'params'; name: string }
  | { route: string; method: string; url: string; where: 'querystring'; name: string }
  | { route: string; method: string; url: string; where: 'body'; name: string; required: string[] }
  | { route: string; method: string; url: string; where: 'event'; field: readonly (string | number)[] };

function schemaProperties(schema: unknown): { names: string[]; required: string[] } {
  const object = schema as { properties?: Record<string, unknown>; required?: string[] } | undefined;
  return { names: Object.keys(object?.properties ?? {}), required: object?.required ?? [] };
}

function targetsOf(route: { method: string; url: string; schema: RouteOptions['schema'] }): Target[] {
  const base = { route: `${route.method} ${route.url}`, method: route.method, url: route.url };
  const params = [...route.url.matchAll(/:(\w+)|\*/g)].map((m) => m[1] ?? '*');
  const targets: Target[] = params.map((name) => ({ ...base, where: 'params', name }));
  for (const name of schemaProperties(route.schema?.querystring).names) targets.push({ ...base, where: 'querystring', name });
  const body = schemaProperties(route.schema?.body);
  for (const name of body.names) targets.push({ ...base, where: 'body', name, required: body.required });
  if (route.url === '/webhooks/unifyport/:workspace') for (const field of unifyportFields) targets.push({ ...base, where: 'event', field });
  if (route.url === '/webhooks/telegram/:workspace/:bot')
    for (const field of telegramFields) targets.push({ ...base, where: 'event', field });
  if (route.url === '/webhooks/line/:workspace/:channel') for (const field of lineFields) targets.push({ ...base, where: 'event', field });
  // A route without inputs is still called once, as it is.
  if (targets.length === 0) targets.push({ ...base, where: 'querystring', name: 'unexpected' });
  return targets;
}

interface Sent {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string;
  /** The verified body a webhook refused: what the quarantine may keep. */
  webhookBody?: string;
}

function requestOf(target: Target, url: UrlValue, body: BodyValue): Sent {
  const params = baselineParams(target.url.startsWith('/webhooks/'));
  let path = target.url.replace(/:(\w+)|\*/g, (_m, name: string | undefined) => {
    const key = name ?? '*';
    if (target.where === 'params' && target.name === key) return inUrl(url);
    return encodeURIComponent(params[key] ?? 'x');
  });
  if (target.where === 'querystring') path += `?${target.name}=${inUrl(url)}`;
  const headers: Record<string, string> = { authorization: `Bearer ${adminToken}` };
  const sent: Sent = { method: target.method, url: path, headers };

  if (target.url === '/webhooks/unifyport/:workspace') {
    const payload = target.where === 'event' ? withField(unifyportTemplate(), target.field, body) : JSON.stringify(unifyportTemplate());
    const timestamp = String(Math.floor(Date.now() / 1000));
    Object.assign(headers, {
      'content-type': 'application/json',
      'x-unifyport-timestamp': timestamp,
      'x-unifyport-signature': signatureHeader(ingressSecret, timestamp, payload),
    });
    return { ...sent, payload, webhookBody: payload };
  }
  if (target.url === '/webhooks/telegram/:workspace/:bot') {
    const payload = target.where === 'event' ? withField(telegramTemplate(), target.field, body) : JSON.stringify(telegramTemplate());
    Object.assign(headers, { 'content-type': 'application/json', [secretTokenHeader]: bot.secretToken });
    return { ...sent, payload, webhookBody: payload };
  }
  if (target.url === '/webhooks/line/:workspace/:channel') {
    const payload = target.where === 'event' ? withField(lineTemplate(), target.field, body) : JSON.stringify(lineTemplate());
    Object.assign(headers, { 'content-type': 'application/json', 'x-line-signature': lineSignature(channel.channelSecret, payload) });
    return { ...sent, payload, webhookBody: payload };
  }
  if (target.where === 'body') {
    const baseline: Record<string, unknown> = Object.fromEntries(
      target.required.map((name) => [name, name === 'token' ? adminToken : 'checked']),
    );
    if (target.url.endsWith('/actions/resolve-review')) baseline.note = 'checked';
    headers['content-type'] = 'application/json';
    return { ...sent, payload: withField(baseline, [target.name], body) };
  }
  if (target.method === 'POST' && target.url.endsWith('/actions/resolve-review')) {
    headers['content-type'] = 'application/json';
    return { ...sent, payload: JSON.stringify({ note: 'checked' }) };
  }
  return sent;
}

/** The webhooks' refusals of a verified body that keep it in the quarantine table. */
const quarantining = new Set([
  'invalid_json',
  'invalid_event',
  'unstorable_event',
  'missing_identity',
  'invalid_identity',
  'invalid_update',
  'unstorable_update',
  'invalid_webhook',
  'unstorable_webhook',
]);

/** Sends the request and checks what it answered and what it changed. */
async function check(target: Target, url: UrlValue, body: BodyValue): Promise<void> {
  const sent = requestOf(target, url, body);
  const before = await fingerprint();
  const quarantineMark = await lastQuarantineId();
  const response = await app.inject({
    method: sent.method as 'GET',
    url: sent.url,
    headers: sent.headers,
    ...(sent.payload === undefined ? {} : { payload: sent.payload }),
  });
  const context = `${sent.method} ${sent.url.slice(0, 300)} ${sent.payload?.slice(0, 300) ?? ''} → ${response.statusCode} ${response.body.slice(0, 300)}`;
  expect(response.statusCode, context).toBeLessThan(500);
  if (response.statusCode < 400) return;

  expect(await fingerprint(), context).toEqual(before);
  const kept = await quarantinedSince(quarantineMark);
  const json = String(response.headers['content-type']).startsWith('application/json') && response.body !== '';
  const code = json ? response.json<{ error?: { code?: string } }>().error?.code : undefined;
  if (sent.webhookBody !== undefined && code !== undefined && quarantining.has(code)) {
    expect(
      kept.map((row) => ({ workspace: row.workspace, reason: row.reason, raw: row.raw.toString('utf8') })),
      context,
    ).toEqual([{ workspace: ingressWorkspace, reason: code, raw: sent.webhookBody }]);
  } else {
    expect(kept, context).toEqual([]);
  }
}

describe('every route, with hostile input in every field', () => {
  it('walks the routes the app registers, the webhooks and the API among them', () => {
    const names = routes.map((route) => `${route.method} ${route.url}`);
    expect(names).toEqual(
      expect.arrayContaining([
        'POST /webhooks/unifyport/:workspace',
        'POST /webhooks/telegram/:workspace/:bot',
        'POST /webhooks/line/:workspace/:channel',
        'GET /workspaces/:workspace/albums/:provider/:account/:conversation/:album',
        'GET /workspaces/:workspace/messages/:provider/:account/:conversation/:message',
        'GET /workspaces/:workspace/albums',
        'POST /workspaces/:workspace/albums/:provider/:account/:conversation/:album/actions/resolve-review',
        'GET /ui',
        'GET /workspaces/:workspace/media/:sha256',
      ]),
    );
  });

  it('answers no 5xx and changes nothing for each field holding each kind of hostile value', { timeout: 240_000 }, async () => {
    const kinds: Array<[UrlValue, BodyValue]> = [
      [{ text: 'x\u0000' }, { json: 'x\u0000' }],
      [{ text: 'x\ud800' }, { json: 'x\ud800' }],
      [{ text: '\u0001\u001b[2J' }, { json: '\u0001\u001b[2J' }],
      [{ text: 'x'.repeat(4097) }, { json: 'x'.repeat(4097) }],
      [{ text: '9223372036854775808' }, { raw: '9223372036854775808' }],
      [{ raw: '%ED%A0%80' }, { raw: '1e400' }],
    ];
    const targets = routes.flatMap(targetsOf);
    for (const target of targets) for (const [url, body] of kinds) await check(target, url, body);
  });

  it('answers no 5xx and changes nothing for random hostile values (fast-check)', { timeout: 240_000 }, async () => {
    const targets = routes.flatMap(targetsOf);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...targets), hostileUrlValue, hostileBodyValue, (target, url, body) => check(target, url, body)),
      { numRuns: 300 },
    );
  });
});
