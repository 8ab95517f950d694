import { isIP } from 'node:net';
import path from 'node:path';
import envSchema from 'env-schema';
import { Type, type Static } from 'typebox';
import { lateItemPolicies, type AlbumTimings } from '../domain/types.js';
import { bearerTokenPattern } from './bearer-token.js';
import { defaultDataDir } from './paths.js';
import { parseKeys } from './secret-key.js';

/** The cloud Bot API; a local Bot API server (or a fake one in tests) replaces it through TELEGRAM_API_ROOT. */
export const defaultTelegramApiRoot = 'https://api.telegram.org';
/** LINE's Messaging API (set-webhook) and its data API (message content); a fake one replaces both in tests. */
export const defaultLineApiRoot = 'https://api.line.me';
export const defaultLineDataApiRoot = 'https://api-data.line.me';

const Env = Type.Object({
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000 }),
  HOST: Type.String({ default: '127.0.0.1' }),
  TRUST_PROXY: Type.Optional(Type.String({ minLength: 1 })),
  DATABASE_URL: Type.Optional(Type.String({ minLength: 1 })),
  DATA_DIR: Type.String({ default: defaultDataDir }),
  TEMPORAL_ADDRESS: Type.Optional(Type.String({ minLength: 1 })),
  TEMPORAL_NAMESPACE: Type.String({ default: 'default' }),
  TEMPORAL_TASK_QUEUE: Type.String({ default: 'albums' }),
  TEMPORAL_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 7233 }),
  TEMPORAL_UI_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8233 }),
  TEMPORAL_UI_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
  WORKER_METRICS_PORT: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
  WORKER_METRICS_HOST: Type.String({ default: '127.0.0.1', minLength: 1 }),
  WORKER_MAX_CACHED_WORKFLOWS: Type.Integer({ minimum: 0, default: 150 }),
  WORKSPACE_SECRETS: Type.String({ default: '{}' }),
  API_TOKENS: Type.Optional(Type.String({ minLength: 1 })),
  SIGNATURE_TOLERANCE_S: Type.Integer({ minimum: 1, default: 300 }),
  // At most the 30 days an erased child's tombstone is kept (src/db/purge.ts): an older redelivery meets neither.
  REPLAY_HORIZON_S: Type.Integer({ minimum: 1, maximum: 2_592_000, default: 604_800 }),
  MAX_BODY_BYTES: Type.Integer({ minimum: 1, default: 1048576 }),
  HTTP_REQUEST_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 30000 }),
  HTTP_HEADERS_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 10000 }),
  HTTP_IDLE_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 60000 }),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 72000 }),
  QUIET_PERIOD_MS: Type.Integer({ minimum: 1, default: 2000 }),
  MAX_WAIT_MS: Type.Integer({ minimum: 1, default: 30000 }),
  LATE_WINDOW_MS: Type.Integer({ minimum: 0, default: 86400000 }),
  LATE_ITEM_POLICY: Type.Union(
    lateItemPolicies.map((p) => Type.Literal(p)),
    { default: 'refresh' },
  ),
  MEDIA_DIR: Type.Optional(Type.String({ minLength: 1 })),
  MEDIA_MAX_BYTES: Type.Integer({ minimum: 1, default: 52428800 }),
  MEDIA_ALLOW_PRIVATE_NETWORKS: Type.Boolean({ default: false }),
  MEDIA_STORE: Type.Optional(Type.String({ minLength: 1 })),
  MEDIA_URL_LIFETIME_S: Type.Integer({ minimum: 1, default: 86400 }),
  RETENTION_DAYS: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
  RETENTION_INTERVAL_S: Type.Integer({ minimum: 1, default: 3600 }),
  PUBLIC_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
  NOTIFY_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
  NOTIFY_SECRET: Type.Optional(Type.String({ minLength: 1 })),
  NOTIFY_ALLOW_PRIVATE_NETWORKS: Type.Boolean({ default: false }),
  DELIVERY_SCHEDULE: Type.Optional(Type.String({ minLength: 1 })),
  DELIVERY_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 64, default: 4 }),
  LOG_LEVEL: Type.String({ default: 'info' }),
  LOG_FORMAT: Type.Optional(Type.Union([Type.Literal('json'), Type.Literal('pretty')])),
  INGEST_BATCH_MAX_ROWS: Type.Integer({ minimum: 1, default: 128 }),
  INGEST_BATCH_MAX_WAIT_MS: Type.Integer({ minimum: 0, default: 2 }),
  INGEST_BATCH_CONCURRENCY: Type.Integer({ minimum: 1, default: 1 }),
  INGEST_MAX_PENDING: Type.Integer({ minimum: 1, default: 1024 }),
  TELEGRAM_BOTS: Type.String({ default: '{}' }),
  TELEGRAM_API_ROOT: Type.String({ default: defaultTelegramApiRoot, pattern: '^https?://' }),
  LINE_CHANNELS: Type.String({ default: '{}' }),
  ALBUMFLOW_SECRET_KEY: Type.Optional(Type.String({ minLength: 1 })),
  LINE_API_ROOT: Type.String({ default: defaultLineApiRoot, pattern: '^https?://' }),
  LINE_DATA_API_ROOT: Type.String({ default: defaultLineDataApiRoot, pattern: '^https?://' }),
});

/** Every environment variable albumflow itself reads (Temporal's own connection variables aside). */
export const configEnvNames: readonly string[] = Object.keys(Env.properties);

/** Group commit of the webhook ingress (src/db/ingest-batcher.ts). */
export interface IngestLimits {
  /** Deliveries written in one transaction at most. */
  batchMaxRows: number;
  /** How long a delivery waits for others to share its transaction; 0: a batch is written as soon as a writer is free. */
  batchMaxWaitMs: number;
  /** Transactions writing batches at once. */
  concurrentBatches: number;
  /** Deliveries waiting for their commit beyond which new ones are answered 503. */
  maxPending: number;
}

/** How long the HTTP server waits for a client; none can be switched off, so no connection is held forever. */
export interface HttpTimeouts {
  /** The whole request, headers and body, must have arrived by then (else 408 and the socket is closed). */
  requestTimeoutMs: number;
  /** The request's headers must have arrived by then (at most `requestTimeoutMs`). */
  headersTimeoutMs: number;
  /** A socket on which nothing is sent or received for this long is closed. */
  idleTimeoutMs: number;
  /** A kept-alive connection waits this long for its next request. */
  keepAliveTimeoutMs: number;
}

/** One bot of TELEGRAM_BOTS. */
export interface TelegramBot {
  /** Its name under the workspace: the `:bot` of its webhook path. */
  name: string;
  /** The number before `:` in the token: the account every child of this bot is stored under. */
  id: string;
  token: string;
  /** What setWebhook's `secret_token` was set to: Telegram sends it in X-Telegram-Bot-Api-Secret-Token. */
  secretToken: string;
}

export interface TelegramConfig {
  /** Without a trailing slash. */
  apiRoot: string;
  /** Workspace → bot name → bot. */
  bots: ReadonlyMap<string, ReadonlyMap<string, TelegramBot>>;
}

/** One channel of LINE_CHANNELS: a LINE Official Account's Messaging API channel. */
export interface LineChannel {
  /** Its name under the workspace: the `:channel` of its webhook path. */
  name: string;
  /** What LINE signs each webhook body with (x-line-signature). */
  channelSecret: string;
  /** What the content API and the webhook endpoint API are called with (a long-lived channel access token). */
  channelAccessToken: string;
}

export interface LineConfig {
  /** Without a trailing slash: the Messaging API (`PUT /v2/bot/channel/webhook/endpoint`). */
  apiRoot: string;
  /** Without a trailing slash: the data API (`GET /v2/bot/message/<id>/content`). */
  dataApiRoot: string;
  /** Workspace → channel name → channel. */
  channels: ReadonlyMap<string, ReadonlyMap<string, LineChannel>>;
}

/**
 * TRUST_PROXY, as Fastify's `trustProxy` takes it: `true` trusts every peer's `X-Forwarded-*` headers,
 * a list only those of the peers it names (addresses, CIDR ranges, or proxy-addr's `loopback`,
 * `linklocal` and `uniquelocal`); `false` none.
 */
export type TrustProxy = boolean | string[];

/** MEDIA_STORE's bucket and the prefix of every key in it (without slashes at either end; '' for none). */
/** Outbound delivery's settings as the environment gives them (src/delivery/config.ts reads what they mean). */
export interface NotifyConfig {
  /** NOTIFY_URL: the endpoint of every workspace's notifications. */
  url: string | undefined;
  /** NOTIFY_SECRET: its `whsec_` secret, or two space-separated while rotating. */
  secret: string | undefined;
  /** Endpoints added through the API may be private, loopback or link-local addresses. */
  allowPrivateNetworks: boolean;
  /** DELIVERY_SCHEDULE: the delay before each attempt (`0s,5s,5m,…`); unset: the default schedule. */
  schedule: string | undefined;
  /** DELIVERY_CONCURRENCY: requests in flight at once per endpoint. */
  concurrency: number;
}

export interface MediaStoreLocation {
  bucket: string;
  prefix: string;
}

export interface MediaConfig {
  /** The directory store's (the default); with MEDIA_STORE, only this process's partial downloads (`.tmp/`). */
  dir: string;
  /** Unset: the directory store. */
  store: MediaStoreLocation | undefined;
  maxBytes: number;
  allowPrivateNetworks: boolean;
  /** How long a notification's `media_url` works, seconds. */
  urlLifetimeS: number;
}

export interface Config {
  port: number;
  host: string;
  /**
   * Whose `X-Forwarded-For`, `-Proto` and `-Host` are believed: the client address in the logs and
   * whether a request came over TLS (the session cookie's `Secure`) follow them. Unset: nobody's.
   */
  trustProxy: TrustProxy;
  logLevel: string;
  /** Unset: readable lines when standard output is a terminal, JSON otherwise. */
  logFormat: 'json' | 'pretty' | undefined;
  /** Unset: the embedded PostgreSQL under `dataDir`; the database (`albumflow` when the URL names none) is created when missing. */
  databaseUrl: string | undefined;
  dataDir: string;
  temporal: {
    /** Unset: start an embedded dev server. */
    address: string | undefined;
    namespace: string;
    taskQueue: string;
    /** The embedded dev server's frontend and UI ports; 0: a free port. */
    port: number;
    uiPort: number;
    /** Where people open the Temporal UI (the console links each album's workflow there); unset without one. */
    uiUrl: string | undefined;
    /** Where a process with the worker role and no HTTP API serves its /metrics; a free port when unset. */
    workerMetricsPort: number | undefined;
    workerMetricsHost: string;
    maxCachedWorkflows: number;
  };
  workspaceSecrets: ReadonlyMap<string, readonly string[]>;
  /**
   * API_TOKENS: each bearer token and the workspaces it reaches (`["*"]`: all). Unset: the HTTP server
   * uses the admin token it generates in DATA_DIR.
   */
  apiTokens: ReadonlyMap<string, readonly string[]> | undefined;
  signatureToleranceS: number;
  /**
   * REPLAY_HORIZON_S: a LINE event or a Telegram message older than this (by its own time) is answered 200
   * and not stored, so that a captured body cannot be replayed into a conversation whose data is gone.
   */
  replayHorizonS: number;
  maxBodyBytes: number;
  http: HttpTimeouts;
  album: AlbumTimings;
  media: MediaConfig;
  /** PUBLIC_URL without a trailing slash: the base of the links albumflow hands out; unset: the listen address. */
  publicUrl: string | undefined;
  notify: NotifyConfig;
  ingest: IngestLimits;
  telegram: TelegramConfig;
  line: LineConfig;
  retention: {
    /** RETENTION_DAYS: how long a closed album is kept, unless its workspace says otherwise; unset: kept forever. */
    days: number | null;
    /** RETENTION_INTERVAL_S: how often the retention Schedule runs a purge. */
    intervalS: number;
  };
  /**
   * ALBUMFLOW_SECRET_KEY: the keys (the first encrypts, every one decrypts) that seal the secrets kept in
   * PostgreSQL. Unset: the keys of DATA_DIR/secret-key, generated at the first start.
   */
  secretKey: string | undefined;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  let raw: Static<typeof Env>;
  try {
    // An empty variable means unset, as in docker-compose's `${NOTIFY_URL:-}`.
    const data = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
    raw = envSchema<Static<typeof Env>>({ schema: Env, data, env: false, dotenv: false });
  } catch (err) {
    throw new ConfigError(`invalid configuration: ${(err as Error).message}`);
  }
  const dataDir = path.resolve(raw.DATA_DIR);
  return {
    port: raw.PORT,
    host: raw.HOST,
    trustProxy: raw.TRUST_PROXY === undefined ? false : parseTrustProxy(raw.TRUST_PROXY),
    logLevel: raw.LOG_LEVEL,
    logFormat: raw.LOG_FORMAT,
    databaseUrl: raw.DATABASE_URL,
    dataDir,
    temporal: {
      address: raw.TEMPORAL_ADDRESS,
      namespace: raw.TEMPORAL_NAMESPACE,
      taskQueue: raw.TEMPORAL_TASK_QUEUE,
      port: raw.TEMPORAL_PORT,
      uiPort: raw.TEMPORAL_UI_PORT,
      // The embedded dev server serves its UI on TEMPORAL_UI_PORT (known only once it runs when 0); any other server's UI is wherever it is.
      uiUrl:
        raw.TEMPORAL_UI_URL?.replace(/\/+$/, '') ??
        (raw.TEMPORAL_ADDRESS || raw.TEMPORAL_UI_PORT === 0 ? undefined : `http://127.0.0.1:${raw.TEMPORAL_UI_PORT}`),
      workerMetricsPort: raw.WORKER_METRICS_PORT,
      workerMetricsHost: raw.WORKER_METRICS_HOST,
      maxCachedWorkflows: raw.WORKER_MAX_CACHED_WORKFLOWS,
    },
    workspaceSecrets: parseWorkspaceSecrets(raw.WORKSPACE_SECRETS),
    apiTokens: raw.API_TOKENS === undefined ? undefined : parseApiTokens(raw.API_TOKENS),
    signatureToleranceS: raw.SIGNATURE_TOLERANCE_S,
    replayHorizonS: raw.REPLAY_HORIZON_S,
    maxBodyBytes: raw.MAX_BODY_BYTES,
    http: parseHttpTimeouts(raw),
    album: {
      quietPeriodMs: raw.QUIET_PERIOD_MS,
      maxWaitMs: raw.MAX_WAIT_MS,
      lateWindowMs: raw.LATE_WINDOW_MS,
      lateItemPolicy: raw.LATE_ITEM_POLICY,
    },
    media: {
      dir: path.resolve(raw.MEDIA_DIR ?? path.join(dataDir, 'media')),
      maxBytes: raw.MEDIA_MAX_BYTES,
      allowPrivateNetworks: raw.MEDIA_ALLOW_PRIVATE_NETWORKS,
      store: raw.MEDIA_STORE === undefined ? undefined : parseMediaStore(raw.MEDIA_STORE),
      urlLifetimeS: raw.MEDIA_URL_LIFETIME_S,
    },
    publicUrl: raw.PUBLIC_URL?.replace(/\/+$/, ''),
    notify: {
      url: raw.NOTIFY_URL,
      secret: raw.NOTIFY_SECRET,
      allowPrivateNetworks: raw.NOTIFY_ALLOW_PRIVATE_NETWORKS,
      schedule: raw.DELIVERY_SCHEDULE,
      concurrency: raw.DELIVERY_CONCURRENCY,
    },
    ingest: {
      batchMaxRows: raw.INGEST_BATCH_MAX_ROWS,
      batchMaxWaitMs: raw.INGEST_BATCH_MAX_WAIT_MS,
      concurrentBatches: raw.INGEST_BATCH_CONCURRENCY,
      maxPending: raw.INGEST_MAX_PENDING,
    },
    telegram: { apiRoot: parseApiRoot('TELEGRAM_API_ROOT', raw.TELEGRAM_API_ROOT), bots: parseTelegramBots(raw.TELEGRAM_BOTS) },
    line: {
      apiRoot: parseApiRoot('LINE_API_ROOT', raw.LINE_API_ROOT),
      dataApiRoot: parseApiRoot('LINE_DATA_API_ROOT', raw.LINE_DATA_API_ROOT),
      channels: parseLineChannels(raw.LINE_CHANNELS),
    },
    retention: { days: raw.RETENTION_DAYS ?? null, intervalS: raw.RETENTION_INTERVAL_S },
    secretKey: raw.ALBUMFLOW_SECRET_KEY === undefined ? undefined : checkSecretKey(raw.ALBUMFLOW_SECRET_KEY),
  };
}

function checkSecretKey(text: string): string {
  try {
    parseKeys(text, 'ALBUMFLOW_SECRET_KEY');
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  return text;
}

/** MEDIA_STORE: `s3://<bucket>[/<prefix>]`, a bucket name as S3 allows it. */
export function parseMediaStore(text: string): MediaStoreLocation {
  const match = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(text.trim());
  if (!match) throw new ConfigError('MEDIA_STORE must be s3://<bucket>[/<prefix>] (a bucket name: 3-63 of a-z, 0-9, "." and "-")');
  const prefix = (match[2] ?? '').replace(/^\/+|\/+$/g, '');
  if (prefix.split('/').some((part) => part === '.' || part === '..') || /\/\//.test(prefix)) {
    throw new ConfigError('MEDIA_STORE\'s prefix must not hold empty, "." or ".." parts');
  }
  return { bucket: match[1]!, prefix };
}

function parseHttpTimeouts(raw: Static<typeof Env>): HttpTimeouts {
  // Node refuses to create a server whose headers may take longer than the whole request.
  if (raw.HTTP_HEADERS_TIMEOUT_MS > raw.HTTP_REQUEST_TIMEOUT_MS) {
    throw new ConfigError(
      `HTTP_HEADERS_TIMEOUT_MS (${raw.HTTP_HEADERS_TIMEOUT_MS}) must not exceed HTTP_REQUEST_TIMEOUT_MS (${raw.HTTP_REQUEST_TIMEOUT_MS})`,
    );
  }
  return {
    requestTimeoutMs: raw.HTTP_REQUEST_TIMEOUT_MS,
    headersTimeoutMs: raw.HTTP_HEADERS_TIMEOUT_MS,
    idleTimeoutMs: raw.HTTP_IDLE_TIMEOUT_MS,
    keepAliveTimeoutMs: raw.HTTP_KEEP_ALIVE_TIMEOUT_MS,
  };
}

function parseWorkspaceSecrets(text: string): Map<string, string[]> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ConfigError('WORKSPACE_SECRETS must be JSON: { "<workspace>": ["<secret>", …] }');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError('WORKSPACE_SECRETS must be a JSON object mapping workspace names to lists of secrets');
  }
  const secrets = new Map<string, string[]>();
  for (const [workspace, list] of Object.entries(parsed)) {
    if (!Array.isArray(list) || !list.every((s): s is string => typeof s === 'string' && s.length > 0)) {
      throw new ConfigError(`WORKSPACE_SECRETS["${workspace}"] must be a list of non-empty strings`);
    }
    secrets.set(workspace, list);
  }
  return secrets;
}

/** BotFather's form: the bot id, a colon, then the secret part. */
export const botTokenPattern = /^(\d{1,20}):[A-Za-z0-9_-]{1,200}$/;
/** What setWebhook accepts as secret_token. */
export const secretTokenPattern = /^[A-Za-z0-9_-]{1,256}$/;

/**
 * TELEGRAM_BOTS: `{ "<workspace>": { "<bot name>": { "token", "secretToken" } } }`. The messages name
 * the entry and the rule, never a value (they are printed at start).
 */
export function parseTelegramBots(text: string): Map<string, Map<string, TelegramBot>> {
  return parseWorkspaceEntries(
    text,
    {
      variable: 'TELEGRAM_BOTS',
      noun: 'bot',
      fields: '{ "token", "secretToken" }',
      entryShape: '{ "token": "<bot token>", "secretToken": "<secret token>" }',
    },
    ({ token, secretToken }, { where, workspace, name, siblings }) => {
      const id = typeof token === 'string' ? botTokenPattern.exec(token)?.[1] : undefined;
      if (typeof token !== 'string' || id === undefined) {
        throw new ConfigError(`${where}.token must be a bot token as BotFather gives it: "<bot id>:<secret>"`);
      }
      if (typeof secretToken !== 'string' || !secretTokenPattern.test(secretToken)) {
        throw new ConfigError(`${where}.secretToken must be 1-256 characters of A-Z, a-z, 0-9, _ and - (what setWebhook accepts)`);
      }
      const twin = [...siblings.values()].find((bot) => bot.id === id);
      if (twin !== undefined)
        throw new ConfigError(`${where} and TELEGRAM_BOTS["${workspace}"]["${twin.name}"] are the same bot (id ${id})`);
      return { name, id, token, secretToken };
    },
  );
}

/**
 * A setting of the form `{ "<workspace>": { "<name>": { …entry } } }` (TELEGRAM_BOTS, LINE_CHANNELS): the
 * JSON and both levels are checked here, each entry by `parseEntry`, which is told where the entry is (and
 * the entries of its workspace read so far) and throws a ConfigError that names the place, never a value.
 */
function parseWorkspaceEntries<T>(
  text: string,
  words: { variable: string; noun: string; fields: string; entryShape: string },
  parseEntry: (
    entry: Record<string, unknown>,
    place: { where: string; workspace: string; name: string; siblings: ReadonlyMap<string, T> },
  ) => T,
): Map<string, Map<string, T>> {
  const { variable, noun, fields, entryShape } = words;
  const shape = `${variable} must be JSON: { "<workspace>": { "<${noun} name>": ${entryShape} } }`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ConfigError(shape);
  }
  if (!isPlainObject(parsed)) throw new ConfigError(shape);
  const workspaces = new Map<string, Map<string, T>>();
  for (const [workspace, entries] of Object.entries(parsed)) {
    if (!isPlainObject(entries)) throw new ConfigError(`${variable}["${workspace}"] must be an object mapping ${noun} names to ${fields}`);
    const parsedEntries = new Map<string, T>();
    for (const [name, entry] of Object.entries(entries)) {
      const where = `${variable}["${workspace}"]["${name}"]`;
      if (name === '') throw new ConfigError(`${variable}["${workspace}"] has a ${noun} with an empty name`);
      if (!isPlainObject(entry)) throw new ConfigError(`${where} must be ${entryShape}`);
      parsedEntries.set(name, parseEntry(entry, { where, workspace, name, siblings: parsedEntries }));
    }
    workspaces.set(workspace, parsedEntries);
  }
  return workspaces;
}

/** The names proxy-addr (Fastify's `trustProxy`) reads as address ranges. */
const proxyRangeNames = new Set(['loopback', 'linklocal', 'uniquelocal']);

function isAddressOrRange(entry: string): boolean {
  if (proxyRangeNames.has(entry)) return true;
  const [address = '', prefix, ...rest] = entry.split('/');
  const version = isIP(address);
  if (version === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  const bits = /^\d{1,3}$/.test(prefix) ? Number(prefix) : 0;
  return bits >= 1 && bits <= (version === 4 ? 32 : 128);
}

/**
 * TRUST_PROXY: `true`, `false`, or a comma-separated list of the proxies' addresses and ranges. A hop
 * count is refused: Fastify does not believe X-Forwarded-* for one, as it cannot tell the proxy from a client.
 */
export function parseTrustProxy(text: string): TrustProxy {
  const value = text.trim();
  if (value === 'true') return true;
  if (value === 'false') return false;
  if (/^\d+$/.test(value)) {
    throw new ConfigError(
      "TRUST_PROXY takes no hop count (Fastify cannot tell a proxy from a client by it): name the proxy's addresses, such as 10.0.0.0/8, or true",
    );
  }
  const entries = value.split(',').map((entry) => entry.trim());
  const invalid = entries.filter((entry) => !isAddressOrRange(entry));
  if (invalid.length > 0) {
    throw new ConfigError(
      `TRUST_PROXY must be true, false, or a comma-separated list of IP addresses, CIDR ranges, loopback, linklocal or uniquelocal; ${JSON.stringify(invalid.join(','))} is not`,
    );
  }
  return entries;
}

const apiRootExamples: Record<string, string> = {
  TELEGRAM_API_ROOT: defaultTelegramApiRoot,
  LINE_API_ROOT: defaultLineApiRoot,
  LINE_DATA_API_ROOT: defaultLineDataApiRoot,
};

function parseApiRoot(name: keyof typeof apiRootExamples, text: string): string {
  try {
    new URL(text);
  } catch {
    throw new ConfigError(`${name} must be an http(s) URL such as ${apiRootExamples[name]}`);
  }
  return text.replace(/\/+$/, '');
}

/** A channel secret as the LINE Developers console shows it: 32 hex digits. */
export const channelSecretPattern = /^[0-9a-f]{32}$/i;
/** A channel access token goes into an Authorization header: no space, no control character. */
export const channelAccessTokenPattern = /^[A-Za-z0-9+/=._~-]{16,1024}$/;

/**
 * LINE_CHANNELS: `{ "<workspace>": { "<channel name>": { "channelSecret", "channelAccessToken" } } }`.
 * The messages name the entry and the rule, never a value.
 */
export function parseLineChannels(text: string): Map<string, Map<string, LineChannel>> {
  return parseWorkspaceEntries(
    text,
    {
      variable: 'LINE_CHANNELS',
      noun: 'channel',
      fields: '{ "channelSecret", "channelAccessToken" }',
      entryShape: '{ "channelSecret": "<channel secret>", "channelAccessToken": "<channel access token>" }',
    },
    ({ channelSecret, channelAccessToken }, { where, name }) => {
      if (typeof channelSecret !== 'string' || !channelSecretPattern.test(channelSecret)) {
        throw new ConfigError(`${where}.channelSecret must be the channel secret as the LINE Developers console shows it (32 hex digits)`);
      }
      if (typeof channelAccessToken !== 'string' || !channelAccessTokenPattern.test(channelAccessToken)) {
        throw new ConfigError(
          `${where}.channelAccessToken must be a channel access token (16-1024 characters of A-Z a-z 0-9 + / = . _ ~ -)`,
        );
      }
      return { name, channelSecret, channelAccessToken };
    },
  );
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const minTokenLength = 16;
const maxTokenLength = 1024;

/** The tokens are never quoted in an error: they are named by their place in the object. */
function parseApiTokens(text: string): Map<string, string[]> {
  const shape =
    'API_TOKENS must be a JSON object mapping each token to the workspaces it reaches: { "<token>": ["<workspace>", …] }, ["*"] for all';
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ConfigError(`${shape}; it is not JSON`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new ConfigError(shape);
  const tokens = new Map<string, string[]>();
  for (const [position, [token, workspaces]] of Object.entries(parsed).entries()) {
    const which = `API_TOKENS: token #${position + 1}`;
    if (token.length < minTokenLength || token.length > maxTokenLength || !bearerTokenPattern.test(token)) {
      throw new ConfigError(
        `${which} must be ${minTokenLength} to ${maxTokenLength} characters of A-Z a-z 0-9 - . _ ~ + / (then = padding), ` +
          'such as the output of `openssl rand -hex 32`',
      );
    }
    if (
      !Array.isArray(workspaces) ||
      workspaces.length === 0 ||
      !workspaces.every((w): w is string => typeof w === 'string' && w.length > 0)
    ) {
      throw new ConfigError(`${which} must map to a non-empty list of workspace names, or ["*"] for all`);
    }
    if (workspaces.includes('*') && workspaces.length > 1) {
      throw new ConfigError(`${which} lists "*" beside other workspaces; "*" alone reaches every workspace`);
    }
    tokens.set(token, workspaces);
  }
  return tokens;
}
