// The admin API (docs/api.md, "Tenants"): workspaces, their signing secrets, API tokens, Telegram bots and
// LINE channels, changed while albumflow runs, by `*` tokens only, through the tenant service
// (src/tenants/service.ts), whose refusals src/http/errors.ts answers with their status.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import {
  AddedSecret,
  AuditEntry,
  BotBody,
  BotInfo,
  ChannelBody,
  ChannelInfo,
  CreatedToken,
  SecretBody,
  TenantName,
  TokenBody,
  TokenInfo,
  Workspace,
  WorkspaceBody,
} from '../tenants/schemas.js';
import { auditInfos, tokenInfos, workspaceInfos, TenantService, type Caller, type TenantServiceOptions } from '../tenants/service.js';
import { ErrorBodySchema as ErrorBody } from '../common/http-error.js';
import { IdentifierString } from '../common/text-schemas.js';

export type AdminOptions = TenantServiceOptions;

const WorkspaceParams = Type.Object({ ws: TenantName('The workspace') });
const errors = { 400: ErrorBody, 404: ErrorBody, 409: ErrorBody, 503: ErrorBody };

export const callerOf = (request: FastifyRequest): Caller => ({ ...request.access!, log: request.log });

export const adminRoutes: FastifyPluginAsyncTypebox<AdminOptions> = async (app, options) => {
  const { pool, tenants } = options;
  const service = new TenantService(options);
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
          'Its UnifyPort webhooks are refused (401) until it has a signing secret (POST /admin/workspaces/<ws>/secrets). ' +
          '409 `name_taken`: a workspace has the name; `workspace_data_remains`: a removed workspace of that name left data ' +
          '(erase it with DELETE /admin/workspaces/<ws>/data first); `workspace_being_erased`: an erasure of the whole workspace ' +
          'still runs; `workspace_named_by_token`: a token of API_TOKENS names it.',
        tags: ['admin'],
        body: WorkspaceBody,
        response: { 201: Workspace, ...errors },
      },
    },
    async (request, reply) => reply.code(201).send(await service.addWorkspace(callerOf(request), request.body.name)),
  );

  app.delete(
    '/admin/workspaces/:ws',
    {
      config: { access },
      schema: {
        summary: 'Remove a workspace: its webhooks answer 404 from then on; its albums stay until erased',
        description:
          "It is taken out of every token's scope; a token left with no workspace is revoked, with the console sessions it opened.",
        tags: ['admin'],
        params: WorkspaceParams,
        response: { 204: Type.Null(), ...errors },
      },
    },
    async (request, reply) => {
      await service.removeWorkspace(callerOf(request), request.params.ws);
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
      await service.setRetention(callerOf(request), request.params.ws, days === 'forever' ? null : days);
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
      await service.setRetention(callerOf(request), request.params.ws, undefined);
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
        response: { 201: AddedSecret, ...errors },
      },
    },
    async (request, reply) => reply.code(201).send(await service.addSecret(callerOf(request), request.params.ws, request.body.secret)),
  );

  app.delete(
    '/admin/workspaces/:ws/secrets/:id',
    {
      config: { access },
      schema: {
        summary: 'Retire a signing secret: webhooks signed with it are refused from then on',
        tags: ['admin'],
        params: Type.Object({ ws: TenantName('The workspace'), id: IdentifierString({ maxLength: 64 }) }),
        response: { 204: Type.Null(), ...errors },
      },
    },
    async (request, reply) => {
      await service.retireSecret(callerOf(request), request.params.ws, request.params.id);
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
        description:
          'Each workspace it lists must exist (404 `workspace_not_found` naming the first that does not); `*` reaches every one.',
        tags: ['admin'],
        body: TokenBody,
        response: { 201: CreatedToken, ...errors },
      },
    },
    async (request, reply) => reply.code(201).send(await service.createToken(callerOf(request), request.body)),
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
      await service.revokeToken(callerOf(request), request.params.id);
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
    async (request, reply) => reply.code(201).send(await service.addBot(callerOf(request), request.params.ws, request.body)),
  );

  app.delete(
    '/admin/workspaces/:ws/telegram-bots/:name',
    {
      config: { access },
      schema: {
        summary: 'Remove a Telegram bot: its webhook answers 404 from then on',
        tags: ['admin'],
        params: Type.Object({ ws: TenantName('The workspace'), name: TenantName('The bot') }),
        response: { 204: Type.Null(), ...errors },
      },
    },
    async (request, reply) => {
      await service.removeBot(callerOf(request), request.params.ws, request.params.name);
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
    async (request, reply) => reply.code(201).send(await service.addChannel(callerOf(request), request.params.ws, request.body)),
  );

  app.delete(
    '/admin/workspaces/:ws/line-channels/:name',
    {
      config: { access },
      schema: {
        summary: 'Remove a LINE channel: its webhook answers 404 from then on',
        tags: ['admin'],
        params: Type.Object({ ws: TenantName('The workspace'), name: TenantName('The channel') }),
        response: { 204: Type.Null(), ...errors },
      },
    },
    async (request, reply) => {
      await service.removeChannel(callerOf(request), request.params.ws, request.params.name);
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
