// The admin API (docs/api.md, "Tenants"): workspaces, their signing secrets, API tokens, Telegram bots and
// LINE channels, changed while albumflow runs, by `*` tokens only. Every change is audited in the
// transaction that makes it (who, what, when; never a value) and is visible in this process when the
// answer is sent, in every other within the registry's reload (src/tenants/registry.ts).
import crypto from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import { botTokenPattern, channelAccessTokenPattern, channelSecretPattern, secretTokenPattern } from '../common/config.js';
import type { Pool, Queryable } from '../db/pool.js';
import { setWorkspaceRetention } from '../db/lifetime.js';
import {
  auditedChange,
  deleteBot,
  deleteChannel,
  deleteSecret,
  deleteToken,
  deleteWorkspace,
  insertBot,
  insertChannel,
  insertSecret,
  insertToken,
  insertWorkspace,
  isNameTaken,
  listAudit,
  sealedPlace,
} from '../db/tenants.js';
import type { TenantRegistry, TenantSnapshot } from '../tenants/registry.js';
import { digestHash, tokenDigest } from '../tenants/tokens.js';
import { HttpError } from '../common/http-error.js';
import { ErrorBodySchema as ErrorBody } from '../common/http-error.js';
import { IdentifierString } from '../common/text-schemas.js';

export interface AdminOptions {
  pool: Pool;
  tenants: TenantRegistry;
}

/** A workspace, bot or channel name: it is a segment of webhook URLs, so letters, digits, `.`, `_` and `-`. */
const namePattern = '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$';
const Name = (description: string) => IdentifierString({ pattern: namePattern, description });
const Source = Type.Union([Type.Literal('environment'), Type.Literal('database')], {
  description: '`environment`: declared by an environment variable at start, read-only here',
});
const CreatedAt = Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'null for an entry of the environment' });

const SecretInfo = Type.Object({ id: Type.String(), source: Source, createdAt: CreatedAt });
const BotInfo = Type.Object({
  name: Type.String(),
  botId: Type.String({ description: 'The number before `:` in the bot token: the account its children are stored under' }),
  source: Source,
  createdAt: CreatedAt,
});
const ChannelInfo = Type.Object({ name: Type.String(), source: Source, createdAt: CreatedAt });
const Workspace = Type.Object({
  name: Type.String(),
  source: Source,
  createdAt: CreatedAt,
  unifyport: Type.Boolean({
    description: 'Whether POST /webhooks/unifyport/<name> is served (a workspace of the API, or of WORKSPACE_SECRETS)',
  }),
  secrets: Type.Array(SecretInfo, { description: 'The signing secrets, never their values' }),
  telegramBots: Type.Array(BotInfo),
  lineChannels: Type.Array(ChannelInfo),
});
export type WorkspaceInfo = Static<typeof Workspace>;

const TokenInfo = Type.Object({
  id: Type.String(),
  name: Type.String(),
  tokenHash: Type.String({ description: 'The short hash albumflow logs for this token' }),
  workspaces: Type.Array(Type.String(), { description: '["*"] for every workspace' }),
  expiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  createdAt: CreatedAt,
  lastUsedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'Recorded every few seconds' }),
  source: Source,
});
export type TokenInfo = Static<typeof TokenInfo>;
const CreatedToken = Type.Intersect([TokenInfo, Type.Object({ token: Type.String({ description: 'The token: shown this once only' }) })]);

const AuditEntry = Type.Object({
  id: Type.String(),
  at: Type.String({ format: 'date-time' }),
  tokenName: Type.String({ description: 'The name of the token that made the change' }),
  tokenHash: Type.String(),
  action: Type.String(),
  subject: Type.String(),
});
export type AuditInfo = Static<typeof AuditEntry>;

/** The bodies of the admin API's changes (the console's forms post the same fields). */
export const WorkspaceBody = Type.Object(
  { name: Name('The workspace: the last segment of its webhook URL') },
  { additionalProperties: false },
);
export const SecretBody = Type.Object(
  { secret: IdentifierString({ minLength: 16, maxLength: 1024, description: 'The HMAC-SHA256 key the sender signs with' }) },
  { additionalProperties: false },
);
export const TokenBody = Type.Object(
  {
    name: IdentifierString({ minLength: 1, maxLength: 200, description: 'What the audit and the console call it' }),
    workspaces: Type.Array(Type.Union([Name('A workspace'), Type.Literal('*')]), {
      minItems: 1,
      maxItems: 1000,
      uniqueItems: true,
      description: 'The workspaces it reaches; ["*"] for every one (and the admin API)',
    }),
    expiresAt: Type.Optional(Type.String({ format: 'date-time', description: 'From then on it is refused' })),
  },
  { additionalProperties: false },
);
export const BotBody = Type.Object(
  {
    name: Name('The bot’s name in its webhook URL'),
    token: Type.String({ pattern: botTokenPattern.source, description: 'The bot token as BotFather gives it' }),
    secretToken: Type.String({ pattern: secretTokenPattern.source, description: 'The secret_token given to setWebhook' }),
  },
  { additionalProperties: false },
);
export const ChannelBody = Type.Object(
  {
    name: Name('The channel’s name in its webhook URL'),
    channelSecret: Type.String({ pattern: channelSecretPattern.source, description: 'The channel secret (32 hex digits)' }),
    channelAccessToken: Type.String({
      pattern: channelAccessTokenPattern.source,
      description: 'A long-lived channel access token',
    }),
  },
  { additionalProperties: false },
);

const WorkspaceParams = Type.Object({ ws: Name('The workspace') });
const errors = { 400: ErrorBody, 404: ErrorBody, 409: ErrorBody, 503: ErrorBody };
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
  new HttpError(409, 'read_only', `${what} is declared in the environment at start; change it there and restart`);
const unknownWorkspace = (ws: string) => new HttpError(404, 'workspace_not_found', `there is no workspace "${ws}"`);

/** Who makes a change: what the audit records of the caller's token, and where the change is logged. */
export interface Caller {
  tokenName: string;
  tokenHash: string;
  log: FastifyBaseLogger;
}

export const callerOf = (request: FastifyRequest): Caller => ({ ...request.access!, log: request.log });

/**
 * The admin changes, one function each, shared by the admin API and the console's tenants page: each throws
 * an HttpError a client may see (404, 409), and answers only once the change is committed, audited and in
 * this process's registry.
 */
export function tenantAdmin({ pool, tenants }: AdminOptions) {
  /** Runs the change, audited under the caller's token, then reloads the registry so this process sees it at once. */
  async function change<T>(caller: Caller, action: string, subject: string, work: (db: Queryable) => Promise<T | undefined>) {
    let result: T | undefined;
    try {
      result = await auditedChange(pool, { tokenName: caller.tokenName, tokenHash: caller.tokenHash, action, subject }, work);
    } catch (err) {
      if (isNameTaken(err)) throw new HttpError(409, 'name_taken', `${subject}: the name is taken`);
      throw err;
    }
    if (result !== undefined) {
      caller.log.info({ action, subject }, 'tenants changed');
      await tenants.reload().catch((err: unknown) => caller.log.warn({ err }, 'tenants not reloaded after a change; the backstop will'));
    }
    return result;
  }

  /** The workspace of the table that `ws` names: 404 for none, 409 for one of the environment. */
  function ownWorkspace(ws: string) {
    const workspace = tenants.snapshot().workspaces.get(ws);
    if (workspace?.source === 'database') return workspace;
    if (tenants.knows(ws)) throw readOnly(`workspace "${ws}"`);
    throw unknownWorkspace(ws);
  }

  const removed = (done: boolean) => (done ? true : undefined);

  return {
    async addWorkspace(caller: Caller, name: string): Promise<WorkspaceInfo> {
      if (tenants.knows(name)) throw new HttpError(409, 'name_taken', `there is a workspace "${name}" already`);
      await change(caller, 'workspace.add', `workspace ${name}`, (db) => insertWorkspace(db, name));
      const info = workspaceInfos(tenants.snapshot()).find((w) => w.name === name);
      return info ?? { name, source: 'database', createdAt: null, unifyport: true, secrets: [], telegramBots: [], lineChannels: [] };
    },

    /** A workspace's retention (days; null keeps everything; undefined: RETENTION_DAYS again), for any workspace albumflow knows. */
    async setRetention(caller: Caller, ws: string, days: number | null | undefined): Promise<void> {
      if (!tenants.knows(ws)) throw unknownWorkspace(ws);
      const what = days === undefined ? 'RETENTION_DAYS' : days === null ? 'forever' : `${days} days`;
      await change(caller, 'workspace.retention', `retention of workspace ${ws}: ${what}`, async (db) => {
        await setWorkspaceRetention(db, ws, days);
        return true;
      });
    },

    async removeWorkspace(caller: Caller, ws: string): Promise<void> {
      ownWorkspace(ws);
      if (!(await change(caller, 'workspace.remove', `workspace ${ws}`, async (db) => removed(await deleteWorkspace(db, ws)))))
        throw unknownWorkspace(ws);
    },

    async addSecret(caller: Caller, ws: string, secret: string): Promise<{ id: string; createdAt: string }> {
      ownWorkspace(ws);
      const keys = tenants.keys;
      const stored = await change(caller, 'secret.add', `signing secret of workspace ${ws}`, (db) =>
        insertSecret(db, ws, (id) => keys.seal(secret, sealedPlace('workspace_secrets', 'secret', [id]))),
      );
      if (!stored) throw unknownWorkspace(ws);
      return { id: stored.id, createdAt: stored.createdAt.toISOString() };
    },

    async retireSecret(caller: Caller, ws: string, id: string): Promise<void> {
      ownWorkspace(ws);
      if (
        !(await change(caller, 'secret.retire', `signing secret ${id} of workspace ${ws}`, async (db) =>
          removed(await deleteSecret(db, ws, id)),
        ))
      )
        throw new HttpError(404, 'secret_not_found', `workspace "${ws}" has no secret ${id}`);
    },

    async createToken(
      caller: Caller,
      { name, workspaces, expiresAt }: { name: string; workspaces: string[]; expiresAt?: string | undefined },
    ): Promise<TokenInfo & { token: string }> {
      if (workspaces.length === 0) throw new HttpError(400, 'invalid_request', 'body/workspaces must list a workspace, or "*"');
      if (workspaces.includes('*') && workspaces.length > 1) {
        throw new HttpError(400, 'invalid_request', 'body/workspaces lists "*" beside other workspaces; "*" alone reaches every one');
      }
      const expiry = expiresAt === undefined ? null : new Date(expiresAt);
      if (expiry && !(expiry.getTime() > Date.now())) throw new HttpError(400, 'invalid_request', 'body/expiresAt must be in the future');
      if (
        tenants
          .current()
          .entries()
          .some((entry) => entry.name === name)
      ) {
        throw new HttpError(409, 'name_taken', `there is a token named "${name}" already`);
      }
      const token = crypto.randomBytes(32).toString('base64url');
      const stored = (await change(caller, 'token.create', `token ${name}`, (db) =>
        insertToken(db, { name, digest: tokenDigest(token), workspaces, expiresAt: expiry }),
      ))!;
      const info = tokenInfos(tenants.snapshot()).find((entry) => entry.id === stored.id) ?? {
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
    },

    async revokeToken(caller: Caller, id: string): Promise<void> {
      const entry = tenants
        .current()
        .entries()
        .find((candidate) => candidate.id === id);
      if (entry?.source === 'environment') throw readOnly(`token "${entry.name}"`);
      if (!(await change(caller, 'token.revoke', `token ${entry?.name ?? id}`, (db) => deleteToken(db, id))))
        throw new HttpError(404, 'token_not_found', `there is no token ${id}`);
    },

    async addBot(caller: Caller, ws: string, { name, token, secretToken }: { name: string; token: string; secretToken: string }) {
      ownWorkspace(ws);
      const botId = botTokenPattern.exec(token)?.[1];
      if (botId === undefined) throw new HttpError(400, 'invalid_request', 'body/token must be a bot token as BotFather gives it');
      const keys = tenants.keys;
      const place = [ws, name];
      const stored = await change(caller, 'telegram-bot.add', `Telegram bot ${name} of workspace ${ws}`, (db) =>
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
    },

    async removeBot(caller: Caller, ws: string, name: string): Promise<void> {
      ownWorkspace(ws);
      if (
        !(await change(caller, 'telegram-bot.remove', `Telegram bot ${name} of workspace ${ws}`, async (db) =>
          removed(await deleteBot(db, ws, name)),
        ))
      )
        throw new HttpError(404, 'bot_not_found', `workspace "${ws}" has no Telegram bot "${name}"`);
    },

    async addChannel(
      caller: Caller,
      ws: string,
      { name, channelSecret, channelAccessToken }: { name: string; channelSecret: string; channelAccessToken: string },
    ) {
      ownWorkspace(ws);
      const keys = tenants.keys;
      const place = [ws, name];
      const stored = await change(caller, 'line-channel.add', `LINE channel ${name} of workspace ${ws}`, (db) =>
        insertChannel(db, {
          workspace: ws,
          name,
          sealedChannelSecret: keys.seal(channelSecret, sealedPlace('line_channels', 'channel_secret', place)),
          sealedChannelAccessToken: keys.seal(channelAccessToken, sealedPlace('line_channels', 'channel_access_token', place)),
        }),
      );
      if (!stored) throw unknownWorkspace(ws);
      return { name, source: 'database' as const, createdAt: stored.createdAt.toISOString() };
    },

    async removeChannel(caller: Caller, ws: string, name: string): Promise<void> {
      ownWorkspace(ws);
      if (
        !(await change(caller, 'line-channel.remove', `LINE channel ${name} of workspace ${ws}`, async (db) =>
          removed(await deleteChannel(db, ws, name)),
        ))
      )
        throw new HttpError(404, 'channel_not_found', `workspace "${ws}" has no LINE channel "${name}"`);
    },
  };
}

export const adminRoutes: FastifyPluginAsyncTypebox<AdminOptions> = async (app, options) => {
  const { pool, tenants } = options;
  const admin = tenantAdmin(options);
  const access = 'all-workspaces' as const;

  app.get(
    '/admin/workspaces',
    {
      config: { access },
      schema: {
        summary: 'List the workspaces, with their secrets (never their values), bots and channels',
        tags: ['admin'],
        response: { 200: Type.Object({ workspaces: Type.Array(Workspace) }) },
      },
    },
    async () => ({ workspaces: workspaceInfos(tenants.snapshot()) }),
  );

  app.post(
    '/admin/workspaces',
    {
      config: { access },
      schema: {
        summary: 'Add a workspace',
        description:
          'Its UnifyPort webhooks are refused (401) until it has a signing secret (POST /admin/workspaces/<ws>/secrets). 409: the name is taken.',
        tags: ['admin'],
        body: WorkspaceBody,
        response: { 201: Workspace, ...errors },
      },
    },
    async (request, reply) => reply.code(201).send(await admin.addWorkspace(callerOf(request), request.body.name)),
  );

  app.delete(
    '/admin/workspaces/:ws',
    {
      config: { access },
      schema: {
        summary: 'Remove a workspace: its webhooks answer 404 from then on; its albums stay until erased',
        tags: ['admin'],
        params: WorkspaceParams,
        response: { 204: Type.Null(), ...errors },
      },
    },
    async (request, reply) => {
      await admin.removeWorkspace(callerOf(request), request.params.ws);
      return reply.code(204).send(null);
    },
  );

  app.put(
    '/admin/workspaces/:ws/retention',
    {
      config: { access },
      schema: {
        summary: "Set a workspace's retention",
        description:
          'How long its albums are kept once closed, in days (fractions allowed), or "forever"; overrides ' +
          'RETENTION_DAYS for this workspace. Retention purges on its Schedule (RETENTION_INTERVAL_S).',
        tags: ['admin'],
        params: WorkspaceParams,
        body: Type.Object(
          { days: Type.Union([Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000 }), Type.Literal('forever')]) },
          { additionalProperties: false },
        ),
        response: { 204: Type.Null(), ...errors },
      },
    },
    async (request, reply) => {
      const { days } = request.body;
      await admin.setRetention(callerOf(request), request.params.ws, days === 'forever' ? null : days);
      return reply.code(204).send(null);
    },
  );

  app.delete(
    '/admin/workspaces/:ws/retention',
    {
      config: { access },
      schema: {
        summary: 'Give a workspace the retention of RETENTION_DAYS again',
        tags: ['admin'],
        params: WorkspaceParams,
        response: { 204: Type.Null(), ...errors },
      },
    },
    async (request, reply) => {
      await admin.setRetention(callerOf(request), request.params.ws, undefined);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/admin/workspaces/:ws/secrets',
    {
      config: { access },
      schema: {
        summary: 'Add a signing secret to a workspace (any of its secrets verifies a webhook)',
        tags: ['admin'],
        params: WorkspaceParams,
        body: SecretBody,
        response: { 201: Type.Object({ id: Type.String(), createdAt: Type.String({ format: 'date-time' }) }), ...errors },
      },
    },
    async (request, reply) => reply.code(201).send(await admin.addSecret(callerOf(request), request.params.ws, request.body.secret)),
  );

  app.delete(
    '/admin/workspaces/:ws/secrets/:id',
    {
      config: { access },
      schema: {
        summary: 'Retire a signing secret: webhooks signed with it are refused from then on',
        tags: ['admin'],
        params: Type.Object({ ws: Name('The workspace'), id: IdentifierString({ maxLength: 64 }) }),
        response: { 204: Type.Null(), ...errors },
      },
    },
    async (request, reply) => {
      await admin.retireSecret(callerOf(request), request.params.ws, request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/admin/tokens',
    {
      config: { access },
      schema: {
        summary: 'List the API tokens (never their values)',
        tags: ['admin'],
        response: { 200: Type.Object({ tokens: Type.Array(TokenInfo) }) },
      },
    },
    async () => ({ tokens: tokenInfos(tenants.snapshot()) }),
  );

  app.post(
    '/admin/tokens',
    {
      config: { access },
      schema: {
        summary: 'Create an API token: the answer holds the token, the only time it is shown',
        tags: ['admin'],
        body: TokenBody,
        response: { 201: CreatedToken, ...errors },
      },
    },
    async (request, reply) => reply.code(201).send(await admin.createToken(callerOf(request), request.body)),
  );

  app.delete(
    '/admin/tokens/:id',
    {
      config: { access },
      schema: {
        summary: 'Revoke an API token: it is refused from then on, and so is every console session it opened',
        tags: ['admin'],
        params: Type.Object({ id: IdentifierString({ maxLength: 64 }) }),
        response: { 204: Type.Null(), ...errors },
      },
    },
    async (request, reply) => {
      await admin.revokeToken(callerOf(request), request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/admin/workspaces/:ws/telegram-bots',
    {
      config: { access },
      schema: {
        summary: 'Add a Telegram bot to a workspace: its webhook is POST /webhooks/telegram/<ws>/<name>',
        tags: ['admin'],
        params: WorkspaceParams,
        body: BotBody,
        response: { 201: BotInfo, ...errors },
      },
    },
    async (request, reply) => reply.code(201).send(await admin.addBot(callerOf(request), request.params.ws, request.body)),
  );

  app.delete(
    '/admin/workspaces/:ws/telegram-bots/:name',
    {
      config: { access },
      schema: {
        summary: 'Remove a Telegram bot: its webhook answers 404 from then on',
        tags: ['admin'],
        params: Type.Object({ ws: Name('The workspace'), name: Name('The bot') }),
        response: { 204: Type.Null(), ...errors },
      },
    },
    async (request, reply) => {
      await admin.removeBot(callerOf(request), request.params.ws, request.params.name);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/admin/workspaces/:ws/line-channels',
    {
      config: { access },
      schema: {
        summary: 'Add a LINE channel to a workspace: its webhook is POST /webhooks/line/<ws>/<name>',
        tags: ['admin'],
        params: WorkspaceParams,
        body: ChannelBody,
        response: { 201: ChannelInfo, ...errors },
      },
    },
    async (request, reply) => reply.code(201).send(await admin.addChannel(callerOf(request), request.params.ws, request.body)),
  );

  app.delete(
    '/admin/workspaces/:ws/line-channels/:name',
    {
      config: { access },
      schema: {
        summary: 'Remove a LINE channel: its webhook answers 404 from then on',
        tags: ['admin'],
        params: Type.Object({ ws: Name('The workspace'), name: Name('The channel') }),
        response: { 204: Type.Null(), ...errors },
      },
    },
    async (request, reply) => {
      await admin.removeChannel(callerOf(request), request.params.ws, request.params.name);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/admin/audit',
    {
      config: { access },
      schema: {
        summary: 'The admin changes, newest first: which token (by name), what, when; never a value',
        tags: ['admin'],
        querystring: Type.Object({
          limit: Type.Integer({ minimum: 1, maximum: 500, default: 100 }),
          before: Type.Optional(Type.String({ pattern: '^[0-9]{1,18}$', description: 'The id of the last entry of the previous page' })),
        }),
        response: { 200: Type.Object({ entries: Type.Array(AuditEntry) }), ...errors },
      },
    },
    async (request) => {
      const { limit, before } = request.query;
      return { entries: await auditInfos(pool, before === undefined ? { limit } : { limit, before }) };
    },
  );
};
