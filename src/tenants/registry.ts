// Every ingress (and worker) looks workspaces, signing secrets, API tokens, Telegram bots and LINE
// channels up here: an in-memory snapshot of the environment's entries and PostgreSQL's tenant tables,
// loaded at start and replaced whole on every change (LISTEN/NOTIFY), with a periodic reload as a
// backstop for a missed notification. A lookup never waits on the database.
import type { Config, LineChannel, TelegramBot } from '../common/config.js';
import type { Logger } from '../common/log.js';
import { tenantReloadsTotal } from '../common/metrics.js';
import { resolveSecretKey, type KeyRing } from '../common/secret-key.js';
import { listen, type Listener } from '../db/listen.js';
import { isUnavailable, type Pool } from '../db/pool.js';
import { loadTenants, sealedPlace, tenantsChannel, touchTokens, type StoredTenants } from '../db/tenants.js';
import { digestHash, environmentTokens, scopeOf, TokenTable, type TenantSource, type TokenEntry, type Tokens } from './tokens.js';

export interface SigningSecret {
  /** The admin API's id; `env-<n>` for one of WORKSPACE_SECRETS. */
  id: string;
  secret: string;
  source: TenantSource;
  createdAt: Date | undefined;
}

export interface WorkspaceEntry {
  name: string;
  source: TenantSource;
  createdAt: Date | undefined;
  secrets: readonly SigningSecret[];
  /**
   * Whether an unsigned UnifyPort webhook is accepted: only for a workspace that WORKSPACE_SECRETS lists
   * with no secret. A workspace of the admin API verifies every webhook, so one without a secret (yet, or
   * since its last was retired) refuses them all.
   */
  acceptsUnsigned: boolean;
}

/** An account a platform's webhooks are addressed to (a bot, a channel), as the registry holds it. */
export type Registered<Account> = Account & { workspace: string; source: TenantSource; createdAt: Date | undefined };
export type RegisteredBot = Registered<TelegramBot>;
export type RegisteredChannel = Registered<LineChannel>;
type Accounts<Account> = Map<string, Map<string, Registered<Account>>>;

/** The accounts an environment variable declares (TELEGRAM_BOTS, LINE_CHANNELS), by workspace and name. */
function environmentAccounts<Account>(declared: ReadonlyMap<string, ReadonlyMap<string, Account>>): Accounts<Account> {
  const accounts: Accounts<Account> = new Map();
  for (const [workspace, entries] of declared) {
    accounts.set(
      workspace,
      new Map([...entries].map(([name, account]) => [name, { ...account, workspace, source: 'environment', createdAt: undefined }])),
    );
  }
  return accounts;
}

/**
 * Adds an account of the tables unless the environment declares one of that name (the environment's stays),
 * or its sealed values do not open (`open` answers undefined).
 */
function addStoredAccount<Account>(
  accounts: Accounts<Account>,
  row: { workspace: string; name: string; createdAt: Date },
  open: () => Account | undefined,
): void {
  const entries = accounts.get(row.workspace) ?? new Map<string, Registered<Account>>();
  if (entries.get(row.name)?.source === 'environment') return;
  const account = open();
  if (account === undefined) return;
  entries.set(row.name, { ...account, workspace: row.workspace, source: 'database', createdAt: row.createdAt });
  accounts.set(row.workspace, entries);
}

export interface TenantSnapshot {
  workspaces: ReadonlyMap<string, WorkspaceEntry>;
  telegramBots: ReadonlyMap<string, ReadonlyMap<string, RegisteredBot>>;
  lineChannels: ReadonlyMap<string, ReadonlyMap<string, RegisteredChannel>>;
  tokens: TokenTable;
  /** The tokens' creation (the table's only) and last use, by id (the API lists them). */
  tokenTimes: ReadonlyMap<string, { createdAt: Date | undefined; lastUsedAt: Date | null }>;
}

/** What the environment declares at start (§5): read-only through the admin API. */
export interface EnvironmentTenants {
  workspaceSecrets: ReadonlyMap<string, readonly string[]>;
  telegramBots: ReadonlyMap<string, ReadonlyMap<string, TelegramBot>>;
  lineChannels: ReadonlyMap<string, ReadonlyMap<string, LineChannel>>;
  tokens: readonly TokenEntry[];
}

export interface RegistryOptions {
  pool: Pool;
  /** The key ring, or how to get it when a stored secret is first opened or sealed (no file is made before). */
  keys: KeyRing | (() => KeyRing);
  environment: EnvironmentTenants;
  logger: Logger;
  /** The backstop: how often the tables are read again without a notification (default 1 s). */
  reloadIntervalMs?: number;
  /** How often the tokens' last use is written (default 5 s). */
  touchIntervalMs?: number;
}

/** Beyond this many rows per table the registry still loads them all, and says the snapshot grew large. */
const largeTable = 100_000;

/**
 * The least time between two reads that lookups which missed start: a flood of unknown workspaces, bad
 * signatures or bad tokens reads the tables at most four times a second, however many requests it sends.
 */
const missReloadSpacingMs = 250;

/** What asked for a read of the tables (albumflow_tenant_reloads_total's reason). */
export type ReloadReason = 'change' | 'backstop' | 'miss';

export class TenantRegistry implements Tokens {
  readonly #pool: Pool;
  #keys: KeyRing | (() => KeyRing);
  readonly #environment: EnvironmentTenants;
  readonly #log: Logger;
  readonly #reloadIntervalMs: number;
  readonly #touchIntervalMs: number;
  #snapshot: TenantSnapshot;
  /** Opened values of the last load, by their sealed bytes: a reload opens only what changed. */
  #opened = new Map<string, string>();
  /** The tokens used since the last write of their use: the table's by id, the environment's by digest (hex). */
  #used = new Set<string>();
  #usedFromEnvironment = new Set<string>();
  #inFlight: Promise<void> | undefined;
  #queued: Promise<void> | undefined;
  /** The read the misses of the moment share, and when the last one started. */
  #missReload: Promise<void> | undefined;
  #missReloadAt = 0;
  #listener: Listener | undefined;
  #timers: NodeJS.Timeout[] = [];
  #failing = false;
  #closed = false;
  /** When the query of the current snapshot started (ms since the epoch); 0: the tables were not read yet. */
  #loadStartedAt = 0;

  constructor(options: RegistryOptions) {
    this.#pool = options.pool;
    this.#keys = options.keys;
    this.#environment = options.environment;
    this.#log = options.logger.child({ component: 'tenants' });
    this.#reloadIntervalMs = options.reloadIntervalMs ?? 1_000;
    this.#touchIntervalMs = options.touchIntervalMs ?? 5_000;
    this.#snapshot = this.#merge(undefined);
  }

  get keys(): KeyRing {
    if (typeof this.#keys === 'function') this.#keys = this.#keys();
    return this.#keys;
  }

  /**
   * Loads the tables, then follows their changes. PostgreSQL unreachable: the environment's entries serve
   * until a reload succeeds (the tables' entries grant nothing before they are read); any other failure is the caller's.
   */
  async start(): Promise<void> {
    try {
      await this.reload();
    } catch (err) {
      if (!isUnavailable(err)) throw err;
    }
    this.#listener = listen({
      config: this.#pool.options,
      channel: tenantsChannel,
      onNotification: () => void this.reload().catch(() => undefined),
      onConnectionLost: (err) => this.#log.warn({ err }, 'tenants listener lost its connection; reconnecting'),
    });
    const every = (ms: number, work: () => Promise<void>) => {
      const timer = setInterval(() => void work().catch(() => undefined), ms);
      timer.unref();
      this.#timers.push(timer);
    };
    every(this.#reloadIntervalMs, () => this.reload('backstop'));
    every(this.#touchIntervalMs, () => this.#touch());
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const timer of this.#timers) clearInterval(timer);
    await this.#listener?.close();
    await this.#inFlight?.catch(() => undefined);
    await this.#touch().catch(() => undefined);
  }

  snapshot(): TenantSnapshot {
    return this.#snapshot;
  }

  current(): TokenTable {
    return this.#snapshot.tokens;
  }

  used(entry: TokenEntry): void {
    if (entry.source === 'database') this.#used.add(entry.id);
    else this.#usedFromEnvironment.add(entry.digest.toString('hex'));
  }

  workspace(name: string): WorkspaceEntry | undefined {
    return this.#snapshot.workspaces.get(name);
  }

  telegramBot(workspace: string, name: string): RegisteredBot | undefined {
    return this.#snapshot.telegramBots.get(workspace)?.get(name);
  }

  lineChannel(workspace: string, name: string): RegisteredChannel | undefined {
    return this.#snapshot.lineChannels.get(workspace)?.get(name);
  }

  /** Whether the environment declares a workspace of this name: WORKSPACE_SECRETS, TELEGRAM_BOTS or LINE_CHANNELS. */
  declares(workspace: string): boolean {
    const env = this.#environment;
    return env.workspaceSecrets.has(workspace) || env.telegramBots.has(workspace) || env.lineChannels.has(workspace);
  }

  /** The tokens of the environment (API_TOKENS) whose scope names this workspace (not by `*`). */
  environmentTokensNaming(workspace: string): TokenEntry[] {
    return this.#environment.tokens.filter((entry) => entry.workspaces !== '*' && entry.workspaces.has(workspace));
  }

  /** Whether a workspace of this name exists anywhere: WORKSPACE_SECRETS, a bot, a channel, or the table. */
  knows(workspace: string): boolean {
    const s = this.#snapshot;
    return s.workspaces.has(workspace) || s.telegramBots.has(workspace) || s.lineChannels.has(workspace);
  }

  /**
   * After a lookup missed (an unknown workspace, bot, channel or token, a signature no secret matches):
   * resolves once the snapshot was read by a query that started after `since` (ms since the epoch), so an
   * entry committed before then is found — in another process's registry too, before its notification
   * arrives. A hit never waits; misses share one read, started at most every 250 ms, and wait for it at
   * most `timeoutMs`.
   */
  async refreshed(since: number, timeoutMs = 1_000): Promise<void> {
    if (this.#loadStartedAt > since) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.#reloadForMisses().catch(() => undefined),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      }),
    ]);
    clearTimeout(timer);
  }

  /**
   * `look()` in the current snapshot; when it finds nothing, once more after `refreshed`: what a lookup
   * that may concern an entry just added elsewhere calls.
   */
  async find<T>(look: () => T | undefined): Promise<T | undefined> {
    const since = Date.now();
    const found = look();
    if (found !== undefined) return found;
    await this.refreshed(since);
    return look();
  }

  /** A read for lookups that missed: the one they share, which starts no sooner than 250 ms after the last. */
  #reloadForMisses(): Promise<void> {
    if (!this.#missReload) {
      const waitMs = Math.max(0, this.#missReloadAt + missReloadSpacingMs - Date.now());
      this.#missReload = new Promise((resolve) => setTimeout(resolve, waitMs)).then(() => {
        this.#missReload = undefined;
        this.#missReloadAt = Date.now();
        return this.reload('miss');
      });
    }
    return this.#missReload;
  }

  /**
   * Reads the tables again and swaps in the new snapshot. A call made while a load runs gets the load
   * after it (which sees every change committed before the call); calls made meanwhile share that one.
   */
  reload(reason: ReloadReason = 'change'): Promise<void> {
    if (this.#closed) return Promise.resolve();
    if (this.#queued) return this.#queued;
    if (!this.#inFlight) {
      tenantReloadsTotal.inc({ reason });
      this.#inFlight = this.#load().finally(() => (this.#inFlight = undefined));
      return this.#inFlight;
    }
    this.#queued = this.#inFlight
      .catch(() => undefined)
      .then(() => {
        this.#queued = undefined;
        return this.reload(reason);
      });
    return this.#queued;
  }

  async #load(): Promise<void> {
    let stored: StoredTenants;
    const startedAt = Date.now();
    try {
      stored = await loadTenants(this.#pool);
    } catch (err) {
      if (!this.#failing) this.#log.warn({ err }, 'cannot read the tenant tables; serving the last snapshot');
      this.#failing = true;
      throw err;
    }
    if (this.#failing) this.#log.info('the tenant tables are readable again');
    this.#failing = false;
    for (const [table, rows] of Object.entries(stored) as Array<[string, unknown[]]>) {
      if (rows.length > largeTable) this.#log.warn(`${table}: ${rows.length} rows held in memory by every process`);
    }
    this.#snapshot = this.#merge(stored);
    this.#loadStartedAt = startedAt;
  }

  /** Opens a sealed value (once per distinct value); undefined, logged with its place, when it does not open. */
  #open(sealed: Buffer, place: string, next: Map<string, string>): string | undefined {
    const cacheKey = `${place}\u0000${sealed.toString('base64')}`;
    let plain = this.#opened.get(cacheKey);
    if (plain === undefined) {
      try {
        plain = this.keys.open(sealed, place);
      } catch (err) {
        this.#log.error({ err: { message: (err as Error).message } }, 'a stored secret does not open: its entry is left out');
        return undefined;
      }
    }
    next.set(cacheKey, plain);
    return plain;
  }

  #merge(stored: StoredTenants | undefined): TenantSnapshot {
    const env = this.#environment;
    const opened = new Map<string, string>();
    const workspaces = new Map<string, WorkspaceEntry>();
    for (const [name, secrets] of env.workspaceSecrets) {
      workspaces.set(name, {
        name,
        source: 'environment',
        createdAt: undefined,
        secrets: secrets.map((secret, index) => ({ id: `env-${index + 1}`, secret, source: 'environment', createdAt: undefined })),
        acceptsUnsigned: secrets.length === 0,
      });
    }
    const telegramBots = environmentAccounts(env.telegramBots);
    const lineChannels = environmentAccounts(env.lineChannels);
    const tokenEntries: TokenEntry[] = [...env.tokens];
    const tokenTimes = new Map<string, { createdAt: Date | undefined; lastUsedAt: Date | null }>();

    if (stored) {
      // A name the environment declares stays the environment's: the table's entry of that name is left out.
      for (const w of stored.workspaces) {
        if (!workspaces.has(w.name))
          workspaces.set(w.name, { name: w.name, source: 'database', createdAt: w.createdAt, secrets: [], acceptsUnsigned: false });
      }
      for (const s of stored.secrets) {
        const workspace = workspaces.get(s.workspace);
        if (workspace?.source !== 'database') continue;
        const secret = this.#open(s.sealed, sealedPlace('workspace_secrets', 'secret', [s.id]), opened);
        if (secret !== undefined)
          workspaces.set(s.workspace, {
            ...workspace,
            secrets: [...workspace.secrets, { id: s.id, secret, source: 'database', createdAt: s.createdAt }],
          });
      }
      for (const b of stored.bots) {
        addStoredAccount(telegramBots, b, () => {
          const key = [b.workspace, b.name];
          const token = this.#open(b.sealedToken, sealedPlace('telegram_bots', 'token', key), opened);
          const secretToken = this.#open(b.sealedSecretToken, sealedPlace('telegram_bots', 'secret_token', key), opened);
          return token === undefined || secretToken === undefined ? undefined : { name: b.name, id: b.botId, token, secretToken };
        });
      }
      for (const c of stored.channels) {
        addStoredAccount(lineChannels, c, () => {
          const key = [c.workspace, c.name];
          const channelSecret = this.#open(c.sealedChannelSecret, sealedPlace('line_channels', 'channel_secret', key), opened);
          const channelAccessToken = this.#open(
            c.sealedChannelAccessToken,
            sealedPlace('line_channels', 'channel_access_token', key),
            opened,
          );
          return channelSecret === undefined || channelAccessToken === undefined
            ? undefined
            : { name: c.name, channelSecret, channelAccessToken };
        });
      }
      for (const t of stored.tokens) {
        tokenEntries.push({
          id: t.id,
          name: t.name,
          hash: digestHash(t.digest),
          digest: t.digest,
          workspaces: scopeOf(t.workspaces),
          expiresAt: t.expiresAt?.getTime(),
          source: 'database',
        });
        tokenTimes.set(t.id, { createdAt: t.createdAt, lastUsedAt: t.lastUsedAt });
      }
      const environmentUses = new Map(stored.environmentTokenUses.map((use) => [use.digest.toString('hex'), use.lastUsedAt]));
      for (const entry of env.tokens) {
        const lastUsedAt = environmentUses.get(entry.digest.toString('hex'));
        if (lastUsedAt) tokenTimes.set(entry.id, { createdAt: undefined, lastUsedAt });
      }
      this.#opened = opened;
    }
    const tokens = new TokenTable(tokenEntries, (entry) =>
      this.#log.error({ tokenHash: entry.hash }, `the token "${entry.name}" shares its short hash with another and is refused`),
    );
    return { workspaces, telegramBots, lineChannels, tokens, tokenTimes };
  }

  async #touch(): Promise<void> {
    if (this.#used.size === 0 && this.#usedFromEnvironment.size === 0) return;
    const ids = [...this.#used];
    const environmentDigests = [...this.#usedFromEnvironment].map((hex) => Buffer.from(hex, 'hex'));
    this.#used.clear();
    this.#usedFromEnvironment.clear();
    try {
      await touchTokens(this.#pool, { ids, environmentDigests });
    } catch (err) {
      this.#log.debug({ err }, "could not record the tokens' last use");
    }
  }
}

/** A map that reads through to the registry's current snapshot: what the worker's downloads look bots and channels up in. */
export class LiveMap<V> implements ReadonlyMap<string, V> {
  readonly #read: () => ReadonlyMap<string, V>;
  constructor(read: () => ReadonlyMap<string, V>) {
    this.#read = read;
  }
  get size() {
    return this.#read().size;
  }
  get(key: string) {
    return this.#read().get(key);
  }
  has(key: string) {
    return this.#read().has(key);
  }
  forEach(callback: (value: V, key: string, map: ReadonlyMap<string, V>) => void) {
    this.#read().forEach((value, key) => callback(value, key, this));
  }
  entries() {
    return this.#read().entries();
  }
  keys() {
    return this.#read().keys();
  }
  values() {
    return this.#read().values();
  }
  [Symbol.iterator]() {
    return this.#read()[Symbol.iterator]();
  }
}

export interface RegistryFromConfig {
  config: Pick<Config, 'workspaceSecrets' | 'telegram' | 'line' | 'secretKey' | 'dataDir'>;
  pool: Pool;
  logger: Logger;
  /** The bearer tokens of the environment and what the audit calls them (`API_TOKENS #<n>`, or `admin token`). */
  tokens: ReadonlyMap<string, readonly string[]>;
  tokenLabel: string;
  /** Default: ALBUMFLOW_SECRET_KEY's, or DATA_DIR/secret-key's, read when first needed. */
  keys?: KeyRing;
  reloadIntervalMs?: number;
  touchIntervalMs?: number;
}

/** The registry of a process: the environment's entries of `config`, the tables of `pool`, sealed under ALBUMFLOW_SECRET_KEY or DATA_DIR/secret-key. */
export function createRegistry({
  config,
  pool,
  logger,
  tokens,
  tokenLabel,
  keys,
  reloadIntervalMs,
  touchIntervalMs,
}: RegistryFromConfig): TenantRegistry {
  return new TenantRegistry({
    pool,
    logger,
    keys: keys ?? (() => resolveSecretKey({ secretKey: config.secretKey, dataDir: config.dataDir }).ring),
    environment: {
      workspaceSecrets: config.workspaceSecrets,
      telegramBots: config.telegram.bots,
      lineChannels: config.line.channels,
      tokens: environmentTokens(tokens, tokenLabel),
    },
    ...(reloadIntervalMs === undefined ? {} : { reloadIntervalMs }),
    ...(touchIntervalMs === undefined ? {} : { touchIntervalMs }),
  });
}

/** `config` whose bots and channels are the registry's current ones: the worker's downloads find a bot added at runtime. */
export function withRegisteredBots(config: Config, registry: TenantRegistry): Config {
  return {
    ...config,
    telegram: { ...config.telegram, bots: new LiveMap(() => registry.snapshot().telegramBots) },
    line: { ...config.line, channels: new LiveMap(() => registry.snapshot().lineChannels) },
  };
}
