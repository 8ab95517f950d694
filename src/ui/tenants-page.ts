// The console's tenants page (docs/console.md): what the admin API lists — workspaces, tokens (never their
// values), bots, channels and the audit — and HTML forms for the same changes, carried out by the tenant
// service that the admin API calls too (src/tenants/service.ts). `*` tokens only. The forms post to this
// origin only: the access plugin refuses a cookie-signed post from anywhere else (CSRF), and every value
// shown is escaped by Eta.
import formbody from '@fastify/formbody';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Pool } from '../db/pool.js';
import { callerOf } from '../http/admin.js';
import { handleError, tenantHttpError } from '../http/errors.js';
import { HttpError } from '../common/http-error.js';
import { IdentifierString } from '../common/text-schemas.js';
import type { TenantRegistry } from '../tenants/registry.js';
import { BotBody, ChannelBody, SecretBody, TokenBody, WorkspaceBody } from '../tenants/schemas.js';
import { auditInfos, TenantError, TenantService, tokenInfos, workspaceInfos } from '../tenants/service.js';
import { consolePaths } from './paths.js';
import { renderPage, type TenantsPage } from './views.js';

export interface TenantsPageOptions {
  pool: Pool;
  tenants: TenantRegistry;
}

const e = encodeURIComponent;
const base = consolePaths.tenants;
export const tenantsPagePaths = {
  addWorkspace: `${base}/workspaces`,
  removeWorkspace: (ws: string) => `${base}/workspaces/${e(ws)}/remove`,
  addSecret: (ws: string) => `${base}/workspaces/${e(ws)}/secrets`,
  retireSecret: (ws: string, id: string) => `${base}/workspaces/${e(ws)}/secrets/${e(id)}/retire`,
  addBot: (ws: string) => `${base}/workspaces/${e(ws)}/telegram-bots`,
  removeBot: (ws: string, name: string) => `${base}/workspaces/${e(ws)}/telegram-bots/${e(name)}/remove`,
  addChannel: (ws: string) => `${base}/workspaces/${e(ws)}/line-channels`,
  removeChannel: (ws: string, name: string) => `${base}/workspaces/${e(ws)}/line-channels/${e(name)}/remove`,
  createToken: `${base}/tokens`,
  revokeToken: (id: string) => `${base}/tokens/${e(id)}/revoke`,
};

const Ws = Type.Object({ ws: WorkspaceBody.properties.name });
const WsName = Type.Object({ ws: WorkspaceBody.properties.name, name: WorkspaceBody.properties.name });
const Id = IdentifierString({ maxLength: 64 });
const TokenForm = Type.Object({
  name: TokenBody.properties.name,
  workspaces: IdentifierString({ minLength: 1, maxLength: 65_000, description: 'Comma-separated; * for every workspace' }),
  expiresAt: Type.Optional(IdentifierString({ maxLength: 40 })),
});

/** A datetime-local field's value (no zone) is taken as UTC; an empty one is no expiry. */
function expiryOf(text: string | undefined): string | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  const value = /(Z|[+-]\d\d:\d\d)$/.test(text) ? text : `${text}${text.length === 16 ? ':00' : ''}Z`;
  if (Number.isNaN(Date.parse(value))) throw new HttpError(400, 'invalid_request', 'the expiry is not a date and time');
  return new Date(value).toISOString();
}

export const tenantsPage: FastifyPluginAsyncTypebox<TenantsPageOptions> = async (app, options) => {
  await app.register(formbody);
  const { pool, tenants } = options;
  const service = new TenantService(options);
  app.addHook('onRoute', (route) => {
    route.config = { access: 'all-workspaces', ...route.config };
    route.schema = { hide: true, ...route.schema };
  });

  async function render(reply: FastifyReply, status: number, extra: Partial<Pick<TenantsPage, 'message' | 'error' | 'createdToken'>>) {
    const snapshot = tenants.snapshot();
    const page: TenantsPage = {
      workspaces: workspaceInfos(snapshot),
      tokens: tokenInfos(snapshot),
      audit: await auditInfos(pool, { limit: 100 }),
      paths: tenantsPagePaths,
      message: extra.message ?? null,
      error: extra.error ?? null,
      createdToken: extra.createdToken ?? null,
    };
    return reply
      .code(status)
      .type('text/html; charset=utf-8')
      .header('cache-control', 'no-store')
      .send(renderPage('tenants', { title: 'Tenants', signedIn: true }, page));
  }

  // A refused change (a taken name, a form field out of bounds) is said on the page, with its status; a
  // refused caller (no token, not a `*` one) gets the access plugin's answer and sees nothing of the page.
  app.setErrorHandler(async (refusal: FastifyError | HttpError | TenantError, request: FastifyRequest, reply: FastifyReply) => {
    if (request.access?.workspaces !== '*') return handleError(refusal, request, reply);
    const error = refusal instanceof TenantError ? tenantHttpError(refusal) : refusal;
    const status =
      error instanceof HttpError || (error.statusCode !== undefined && error.statusCode < 500) ? (error.statusCode ?? 400) : 500;
    if (status >= 500) {
      request.log.error({ err: error }, 'tenants page failed');
      return render(reply, 500, { error: 'Something went wrong on the server; its log says what.' });
    }
    return render(reply, status, { error: error.message });
  });

  const done = (reply: FastifyReply, message: string) => reply.redirect(`${base}?done=${e(message)}`, 303);

  app.get('', { schema: { querystring: Type.Object({ done: Type.Optional(IdentifierString({ maxLength: 300 })) }) } }, (request, reply) =>
    render(reply, 200, request.query.done ? { message: request.query.done } : {}),
  );

  app.post(tenantsPagePaths.addWorkspace.slice(base.length), { schema: { body: WorkspaceBody } }, async (request, reply) => {
    await service.addWorkspace(callerOf(request), request.body.name);
    return done(reply, `Workspace ${request.body.name} added; give it a signing secret.`);
  });
  app.post('/workspaces/:ws/remove', { schema: { params: Ws } }, async (request, reply) => {
    await service.removeWorkspace(callerOf(request), request.params.ws);
    return done(reply, `Workspace ${request.params.ws} removed.`);
  });
  app.post('/workspaces/:ws/secrets', { schema: { params: Ws, body: SecretBody } }, async (request, reply) => {
    const { id } = await service.addSecret(callerOf(request), request.params.ws, request.body.secret);
    return done(reply, `Secret ${id} added to ${request.params.ws}.`);
  });
  app.post(
    '/workspaces/:ws/secrets/:id/retire',
    { schema: { params: Type.Object({ ws: WorkspaceBody.properties.name, id: Id }) } },
    async (request, reply) => {
      await service.retireSecret(callerOf(request), request.params.ws, request.params.id);
      return done(reply, `Secret ${request.params.id} of ${request.params.ws} retired.`);
    },
  );
  app.post('/workspaces/:ws/telegram-bots', { schema: { params: Ws, body: BotBody } }, async (request, reply) => {
    await service.addBot(callerOf(request), request.params.ws, request.body);
    return done(reply, `Telegram bot ${request.body.name} added to ${request.params.ws}.`);
  });
  app.post('/workspaces/:ws/telegram-bots/:name/remove', { schema: { params: WsName } }, async (request, reply) => {
    await service.removeBot(callerOf(request), request.params.ws, request.params.name);
    return done(reply, `Telegram bot ${request.params.name} removed from ${request.params.ws}.`);
  });
  app.post('/workspaces/:ws/line-channels', { schema: { params: Ws, body: ChannelBody } }, async (request, reply) => {
    await service.addChannel(callerOf(request), request.params.ws, request.body);
    return done(reply, `LINE channel ${request.body.name} added to ${request.params.ws}.`);
  });
  app.post('/workspaces/:ws/line-channels/:name/remove', { schema: { params: WsName } }, async (request, reply) => {
    await service.removeChannel(callerOf(request), request.params.ws, request.params.name);
    return done(reply, `LINE channel ${request.params.name} removed from ${request.params.ws}.`);
  });
  app.post('/tokens', { schema: { body: TokenForm } }, async (request, reply) => {
    const workspaces = request.body.workspaces
      .split(',')
      .map((w) => w.trim())
      .filter((w) => w !== '');
    const expiresAt = expiryOf(request.body.expiresAt);
    const created = await service.createToken(callerOf(request), { name: request.body.name, workspaces, expiresAt });
    // Shown on the answer itself, never in a URL: it is the only time the token is shown.
    return render(reply, 201, { createdToken: { name: created.name, token: created.token } });
  });
  app.post('/tokens/:id/revoke', { schema: { params: Type.Object({ id: Id }) } }, async (request, reply) => {
    await service.revokeToken(callerOf(request), request.params.id);
    return done(reply, 'Token revoked, with the console sessions it opened.');
  });
};
