// The console's endpoint pages (docs/console.md): the outbound endpoints of the workspaces a token reaches
// (and, for a `*` token, the environment endpoint), and one endpoint's page — its state and why, its backlog,
// its failures with the receivers' answers (escaped like everything else), a "send again" form per delivery
// and the forms that turn it off and on. The forms post plain HTML to this origin (the access plugin refuses
// a cookie-signed post from anywhere else) and carry out the API's own changes, audited the same way.
import formbody from '@fastify/formbody';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { disabledReasonText } from '../domain/endpoint-state.js';
import { everyEndpoint, type EndpointManager, type EndpointScope } from '../delivery/manage.js';
import { callerOf, deliveryInfo, endpointInfo } from '../http/endpoints.js';
import { rowIdPattern } from '../http/params.js';
import { IdentifierString } from '../common/text-schemas.js';
import type { Access } from '../http/access/plugin.js';
import { html, pageErrors } from './pages.js';
import { consolePaths } from './paths.js';
import { renderPage, type DeliveryFilter } from './views.js';

export interface EndpointsPageOptions {
  endpoints: EndpointManager;
}

const pageSize = 50;

const Id = IdentifierString({ minLength: 1, maxLength: 64 });
const filters = ['', 'pending', 'failed', 'held', 'delivered'] as const satisfies readonly DeliveryFilter[];
const Filter = Type.Enum(filters, { default: '' });
const PageQuery = Type.Object({
  state: Filter,
  before: Type.Optional(Type.String({ pattern: rowIdPattern })),
  done: Type.Optional(IdentifierString({ maxLength: 300 })),
});

/** The endpoints a token sees: its workspaces' own, and every one (the environment's too) for a `*` token. */
function scopeOf(access: Access | null): EndpointScope {
  if (access === null) return () => false;
  const { workspaces } = access;
  return workspaces === '*' ? everyEndpoint : (owner) => owner !== null && workspaces.has(owner);
}

export const endpointsPage: FastifyPluginAsyncTypebox<EndpointsPageOptions> = async (app, { endpoints }) => {
  await app.register(formbody);
  app.setErrorHandler(pageErrors);
  // Any token may open them: each shows only what the token's workspaces hold (another's endpoint is a 404).
  app.addHook('onRoute', (route) => {
    route.config = { access: 'signed-in', ...route.config };
    route.schema = { hide: true, ...route.schema };
  });

  app.get(
    '',
    { schema: { querystring: Type.Object({ workspace: IdentifierString({ maxLength: 512, default: '' }) }) } },
    async (request, reply) => {
      const access = request.access!;
      const chosen = request.query.workspace;
      const reachable = access.workspaces === '*' ? 'all' : [...access.workspaces].sort();
      const all = await endpoints.list(reachable);
      const shown = chosen === '' ? all : all.filter((endpoint) => endpoint.workspace === chosen);
      const workspaces = [...new Set(all.flatMap((endpoint) => (endpoint.workspace === null ? [] : [endpoint.workspace])))].sort();
      return html(
        reply,
        renderPage(
          'endpoints',
          { title: 'Endpoints', signedIn: true },
          { endpoints: shown.map(endpointInfo), workspaces, workspace: chosen, disabledReasonText },
        ),
      );
    },
  );

  app.get('/:id', { schema: { params: Type.Object({ id: Id }), querystring: PageQuery } }, async (request, reply) => {
    const scope = scopeOf(request.access);
    const { id } = request.params;
    const { state, before, done } = request.query;
    const endpoint = await endpoints.get(scope, id);
    const [failed, listed] = await Promise.all([
      endpoint.failed > 0 ? endpoints.deliveries(scope, id, { state: 'failed', limit: pageSize }) : { deliveries: [], next: null },
      endpoints.deliveries(scope, id, { ...(state === '' ? {} : { state }), limit: pageSize, ...(before ? { before } : {}) }),
    ]);
    const olderUrl =
      listed.next === null
        ? null
        : `${consolePaths.endpoint(id)}?${new URLSearchParams({ ...(state === '' ? {} : { state }), before: listed.next }).toString()}`;
    return html(
      reply,
      renderPage(
        'endpoint',
        { title: `Endpoint ${id}`, signedIn: true },
        {
          endpoint: endpointInfo(endpoint),
          disabledBecause: endpoint.disabledReason === null ? null : disabledReasonText[endpoint.disabledReason],
          failed: failed.deliveries.map(deliveryInfo),
          deliveries: listed.deliveries.map(deliveryInfo),
          filter: state,
          olderUrl,
          message: done ?? null,
        },
      ),
    );
  });

  /** Back to the endpoint's page, on the list the form was posted from (its `state` field), saying what was done. */
  function back(request: FastifyRequest, reply: FastifyReply, id: string, message: string): FastifyReply {
    const posted = (request.body as { state?: unknown } | null | undefined)?.state;
    const state = filters.find((filter) => filter === posted) ?? '';
    const query = new URLSearchParams({ ...(state === '' ? {} : { state }), done: message });
    return reply.redirect(`${consolePaths.endpoint(id)}?${query.toString()}`, 303);
  }

  for (const to of ['enable', 'disable'] as const) {
    app.post(`/:id/${to}`, { schema: { params: Type.Object({ id: Id }) } }, async (request, reply) => {
      const { id } = request.params;
      await endpoints.change(callerOf(request), scopeOf(request.access), id, { enabled: to === 'enable' });
      return back(
        request,
        reply,
        id,
        to === 'enable' ? 'Endpoint enabled: its held deliveries go out in order.' : 'Endpoint disabled: its deliveries are held.',
      );
    });
  }

  app.post(
    '/:id/deliveries/:deliveryId/retry',
    { schema: { params: Type.Object({ id: Id, deliveryId: Type.String({ pattern: rowIdPattern }) }) } },
    async (request, reply) => {
      const { id, deliveryId } = request.params;
      const state = await endpoints.retry(callerOf(request), scopeOf(request.access), id, deliveryId);
      return back(
        request,
        reply,
        id,
        state === 'held'
          ? `Delivery ${deliveryId} is held until the endpoint is enabled.`
          : `Delivery ${deliveryId} is sent again now, after the earlier notifications of its album.`,
      );
    },
  );
};
