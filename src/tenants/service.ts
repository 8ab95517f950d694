// The tenant changes (docs/api.md, "Tenants"): workspaces, their signing secrets, API tokens, Telegram bots
// and LINE channels, changed while albumflow runs, one method of TenantService each, shared by the admin
// API and the console's tenants page. Every change is audited in the transaction that makes it (who, what,
// when; never a value) and is in this process's registry when the method returns, in every other within
// the registry's reload (src/tenants/registry.ts). A refused change throws a TenantError.
import crypto from 'node:crypto';
import { botTokenPattern } from '../common/config.js';
import type { Logger } from '../common/log.js';
import type { Pool, Queryable } from '../db/pool.js';
import { setWorkspaceRetention } from '../db/retention.js';
import {
  auditedChange,
  deleteBot,
  deleteChannel,
  deleteSecret,
  deleteToken,
  deleteWorkspace,
  insertBot,
  insertAudit,
  insertChannel,
  insertSecret,
  insertToken,
  insertWorkspace,
  isNameTaken,
  listAudit,
  lockWorkspaces,
  sealedPlace,
} from '../db/tenants.js';
import { runningWorkspaceErasure, workspaceDataLeft } from '../db/workspace-data.js';
import type { TenantRegistry, TenantSnapshot } from './registry.js';
import type { AddedSecret, AuditInfo, BotInfo, ChannelInfo, CreatedToken, TokenInfo, WorkspaceInfo } from './schemas.js';
import { digestHash, tokenDigest } from './tokens.js';

/** What the changes work on: the tenant tables, and this process's registry of them. */
export interface TenantServiceOptions {
  pool: Pool;
  tenants: TenantRegistry;
}

/** Who makes a change: what the audit records of the caller's token, and where the change is logged. */
export interface Caller {
  tokenName: string;
  tokenHash: string;
  log: Pick<Logger, 'info' | 'warn'>;
}

/**
 * Why a change was refused, for the caller to see: `not_found` (no such entry), `name_taken` (a name in use,
 * or one a workspace cannot take again yet), `read_only` (an entry of the environment) or `invalid` (a value
 * the change cannot take); `code` says which entry, or why.
 */
export type TenantErrorKind = 'not_found' | 'name_taken' | 'read_only' | 'invalid';

export class TenantError extends Error {
  constructor(
    readonly kind: TenantErrorKind,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'TenantError';
  }
}

const iso = (date: Date | null | undefined) => (date ? date.toISOString() : null);

/** Every workspace the registry knows, as the API lists it. */
export function workspaceInfos(snapshot: TenantSnapshot): WorkspaceInfo[] {
  const names = new Set([...snapshot.workspaces.keys(), ...snapshot.telegramBots.keys(), ...snapshot.lineChannels.keys()]);
  return [...names].sort().map((name) => {
    const workspace = snapshot.workspaces.get(name);
    const bots = [...(snapshot.telegramBots.get(name)?.values() ?? [])];
    const channels = [...(snapshot.lineChannels.get(name)?.values() ?? [])];
    return {
      name,
      source: workspace?.source ?? 'environment',
      createdAt: iso(workspace?.createdAt),
      unifyport: workspace !== undefined,
      secrets: (workspace?.secrets ?? []).map(({ id, source, createdAt }) => ({ id, source, createdAt: iso(createdAt) })),
      telegramBots: bots.map((bot) => ({ name: bot.name, botId: bot.id, source: bot.source, createdAt: iso(bot.createdAt) })),
      lineChannels: channels.map((channel) => ({ name: channel.name, source: channel.source, createdAt: iso(channel.createdAt) })),
    };
  });
}

/** Every token the registry knows (never a value), as the API lists it. */
export function tokenInfos(snapshot: TenantSnapshot): TokenInfo[] {
  return snapshot.tokens.entries().map((entry) => {
    const times = snapshot.tokenTimes.get(entry.id);
    return {
      id: entry.id,
      name: entry.name,
      tokenHash: entry.hash,
      workspaces: entry.workspaces === '*' ? ['*'] : [...entry.workspaces].sort(),
      expiresAt: entry.expiresAt === undefined ? null : new Date(entry.expiresAt).toISOString(),
      createdAt: iso(times?.createdAt),
      lastUsedAt: iso(times?.lastUsedAt),
      source: entry.source,
    };
  });
}

/** The admin changes, newest first. */
export async function auditInfos(db: Queryable, page: { limit: number; before?: string }): Promise<AuditInfo[]> {
  const entries = await listAudit(db, page);
  return entries.map((entry) => ({ ...entry, at: entry.at.toISOString() }));
}

const readOnly = (what: string) =>
  new TenantError('read_only', 'read_only', `${what} is declared in the environment at start; change it there and restart`);
const unknownWorkspace = (ws: string) => new TenantError('not_found', 'workspace_not_found', `there is no workspace "${ws}"`);
const invalid = (message: string) => new TenantError('invalid', 'invalid_request', message);

/**
 * The tenant changes, one method each: each answers only once the change is committed, audited and in this
 * process's registry, and throws a TenantError for a change it refuses.
 */
export class TenantService {
  readonly #pool: Pool;
  readonly #tenants: TenantRegistry;

  constructor({ pool, tenants }: TenantServiceOptions) {
    this.#pool = pool;
    this.#tenants = tenants;
  }

  /**
   * A workspace name is an identity: a name in use, one whose data a removed workspace left or whose
   * workspace erasure still runs, or one that a token of the environment names (it would reach the new
   * workspace) is refused.
   */
  async addWorkspace(caller: Caller, name: string): Promise<WorkspaceInfo> {
    if (this.#tenants.knows(name)) throw new TenantError('name_taken', 'name_taken', `there is a workspace "${name}" already`);
    const naming = this.#tenants.environmentTokensNaming(name).map((entry) => entry.name);
    if (naming.length > 0) {
      throw new TenantError(
        'name_taken',
        'workspace_named_by_token',
        `"${name}" is named by a token of the environment (${naming.join(', ')}), which would reach the new workspace: ` +
          'take it out of API_TOKENS and restart first',
      );
    }
    await this.#change(caller, 'workspace.add', `workspace ${name}`, async (db) => {
      const erasing = await runningWorkspaceErasure(db, name);
      if (erasing !== null) {
        throw new TenantError(
          'name_taken',
          'workspace_being_erased',
          `"${name}" is being erased (erasure ${erasing}): add it again once that erasure is done`,
        );
      }
      const left = await workspaceDataLeft(db, name);
      if (left.length > 0) {
        throw new TenantError(
          'name_taken',
          'workspace_data_remains',
          `"${name}" still holds data (${left.join(', ')}): erase it with DELETE /admin/workspaces/${encodeURIComponent(name)}/data first`,
        );
      }
      return insertWorkspace(db, name);
    });
    const info = workspaceInfos(this.#tenants.snapshot()).find((w) => w.name === name);
    return info ?? { name, source: 'database', createdAt: null, unifyport: true, secrets: [], telegramBots: [], lineChannels: [] };
  }

  /** A workspace's retention (days; null keeps everything; undefined: RETENTION_DAYS again), for any workspace albumflow knows. */
  async setRetention(caller: Caller, ws: string, days: number | null | undefined): Promise<void> {
    if (!this.#tenants.knows(ws)) throw unknownWorkspace(ws);
    const what = days === undefined ? 'RETENTION_DAYS' : days === null ? 'forever' : `${days} days`;
    await this.#change(caller, 'workspace.retention', `retention of workspace ${ws}: ${what}`, async (db) => {
      await setWorkspaceRetention(db, ws, days);
      return true;
    });
  }

  /** Takes the workspace out of every token's scope too: a token left with no workspace is revoked, audited as such. */
  async removeWorkspace(caller: Caller, ws: string): Promise<void> {
    this.#ownWorkspace(ws);
    await this.#remove(
      caller,
      'workspace.remove',
      `workspace ${ws}`,
      async (db) => {
        const removed = await deleteWorkspace(db, ws);
        for (const name of removed?.revokedTokens ?? []) {
          const subject = `token ${name} (its only workspace, ${ws}, was removed)`;
          await insertAudit(db, { tokenName: caller.tokenName, tokenHash: caller.tokenHash, action: 'token.revoke', subject });
        }
        return removed !== undefined;
      },
      unknownWorkspace(ws),
    );
  }

  async addSecret(caller: Caller, ws: string, secret: string): Promise<AddedSecret> {
    this.#ownWorkspace(ws);
    const keys = this.#tenants.keys;
    const stored = await this.#change(caller, 'secret.add', `signing secret of workspace ${ws}`, (db) =>
      insertSecret(db, ws, (id) => keys.seal(secret, sealedPlace('workspace_secrets', 'secret', [id]))),
    );
    if (!stored) throw unknownWorkspace(ws);
    return { id: stored.id, createdAt: stored.createdAt.toISOString() };
  }

  async retireSecret(caller: Caller, ws: string, id: string): Promise<void> {
    this.#ownWorkspace(ws);
    await this.#remove(
      caller,
      'secret.retire',
      `signing secret ${id} of workspace ${ws}`,
      (db) => deleteSecret(db, ws, id),
      new TenantError('not_found', 'secret_not_found', `workspace "${ws}" has no secret ${id}`),
    );
  }

  async createToken(
    caller: Caller,
    { name, workspaces, expiresAt }: { name: string; workspaces: string[]; expiresAt?: string | undefined },
  ): Promise<CreatedToken> {
    if (workspaces.length === 0) throw invalid('body/workspaces must list a workspace, or "*"');
    if (workspaces.includes('*') && workspaces.length > 1) {
      throw invalid('body/workspaces lists "*" beside other workspaces; "*" alone reaches every one');
    }
    const expiry = expiresAt === undefined ? null : new Date(expiresAt);
    if (expiry && !(expiry.getTime() > Date.now())) throw invalid('body/expiresAt must be in the future');
    if (
      this.#tenants
        .current()
        .entries()
        .some((entry) => entry.name === name)
    ) {
      throw new TenantError('name_taken', 'name_taken', `there is a token named "${name}" already`);
    }
    const token = crypto.randomBytes(32).toString('base64url');
    const stored = (await this.#change(caller, 'token.create', `token ${name}`, async (db) => {
      // The table's workspaces stay locked until the token is stored: a removal waits, then takes it out of its scope.
      const named = workspaces.filter((ws) => ws !== '*');
      const inTable = await lockWorkspaces(db, named);
      const missing = named.find((ws) => !inTable.has(ws) && !this.#tenants.declares(ws));
      if (missing !== undefined) throw unknownWorkspace(missing);
      return insertToken(db, { name, digest: tokenDigest(token), workspaces, expiresAt: expiry });
    }))!;
    const info = tokenInfos(this.#tenants.snapshot()).find((entry) => entry.id === stored.id) ?? {
      id: stored.id,
      name,
      tokenHash: digestHash(stored.digest),
      workspaces,
      expiresAt: iso(expiry),
      createdAt: iso(stored.createdAt),
      lastUsedAt: null,
      source: 'database' as const,
    };
    return { ...info, token };
  }

  async revokeToken(caller: Caller, id: string): Promise<void> {
    const entry = this.#tenants
      .current()
      .entries()
      .find((candidate) => candidate.id === id);
    if (entry?.source === 'environment') throw readOnly(`token "${entry.name}"`);
    if (!(await this.#change(caller, 'token.revoke', `token ${entry?.name ?? id}`, (db) => deleteToken(db, id))))
      throw new TenantError('not_found', 'token_not_found', `there is no token ${id}`);
  }

  async addBot(
    caller: Caller,
    ws: string,
    { name, token, secretToken }: { name: string; token: string; secretToken: string },
  ): Promise<BotInfo> {
    this.#ownWorkspace(ws);
    const botId = botTokenPattern.exec(token)?.[1];
    if (botId === undefined) throw invalid('body/token must be a bot token as BotFather gives it');
    const keys = this.#tenants.keys;
    const place = [ws, name];
    const stored = await this.#change(caller, 'telegram-bot.add', `Telegram bot ${name} of workspace ${ws}`, (db) =>
      insertBot(db, {
        workspace: ws,
        name,
        botId,
        sealedToken: keys.seal(token, sealedPlace('telegram_bots', 'token', place)),
        sealedSecretToken: keys.seal(secretToken, sealedPlace('telegram_bots', 'secret_token', place)),
      }),
    );
    if (!stored) throw unknownWorkspace(ws);
    return { name, botId, source: 'database' as const, createdAt: stored.createdAt.toISOString() };
  }

  async removeBot(caller: Caller, ws: string, name: string): Promise<void> {
    this.#ownWorkspace(ws);
    await this.#remove(
      caller,
      'telegram-bot.remove',
      `Telegram bot ${name} of workspace ${ws}`,
      (db) => deleteBot(db, ws, name),
      new TenantError('not_found', 'bot_not_found', `workspace "${ws}" has no Telegram bot "${name}"`),
    );
  }

  async addChannel(
    caller: Caller,
    ws: string,
    { name, channelSecret, channelAccessToken }: { name: string; channelSecret: string; channelAccessToken: string },
  ): Promise<ChannelInfo> {
    this.#ownWorkspace(ws);
    const keys = this.#tenants.keys;
    const place = [ws, name];
    const stored = await this.#change(caller, 'line-channel.add', `LINE channel ${name} of workspace ${ws}`, (db) =>
      insertChannel(db, {
        workspace: ws,
        name,
        sealedChannelSecret: keys.seal(channelSecret, sealedPlace('line_channels', 'channel_secret', place)),
        sealedChannelAccessToken: keys.seal(channelAccessToken, sealedPlace('line_channels', 'channel_access_token', place)),
      }),
    );
    if (!stored) throw unknownWorkspace(ws);
    return { name, source: 'database' as const, createdAt: stored.createdAt.toISOString() };
  }

  async removeChannel(caller: Caller, ws: string, name: string): Promise<void> {
    this.#ownWorkspace(ws);
    await this.#remove(
      caller,
      'line-channel.remove',
      `LINE channel ${name} of workspace ${ws}`,
      (db) => deleteChannel(db, ws, name),
      new TenantError('not_found', 'channel_not_found', `workspace "${ws}" has no LINE channel "${name}"`),
    );
  }

  /** Runs the change, audited under the caller's token, then reloads the registry so this process sees it at once. */
  async #change<T>(caller: Caller, action: string, subject: string, work: (db: Queryable) => Promise<T | undefined>) {
    let result: T | undefined;
    try {
      result = await auditedChange(this.#pool, { tokenName: caller.tokenName, tokenHash: caller.tokenHash, action, subject }, work);
    } catch (err) {
      if (isNameTaken(err)) throw new TenantError('name_taken', 'name_taken', `${subject}: the name is taken`);
      throw err;
    }
    if (result !== undefined) {
      caller.log.info({ action, subject }, 'tenants changed');
      await this.#tenants
        .reload()
        .catch((err: unknown) => caller.log.warn({ err }, 'tenants not reloaded after a change; the backstop will'));
    }
    return result;
  }

  /** A removal, audited and reloaded like any change when `remove` found the entry; `missing` when it did not. */
  async #remove(caller: Caller, action: string, subject: string, remove: (db: Queryable) => Promise<boolean>, missing: TenantError) {
    if (!(await this.#change(caller, action, subject, async (db) => ((await remove(db)) ? true : undefined)))) throw missing;
  }

  /** The workspace of the table that `ws` names: not found for none, read-only for one of the environment. */
  #ownWorkspace(ws: string) {
    const workspace = this.#tenants.snapshot().workspaces.get(ws);
    if (workspace?.source === 'database') return workspace;
    if (this.#tenants.knows(ws)) throw readOnly(`workspace "${ws}"`);
    throw unknownWorkspace(ws);
  }
}
