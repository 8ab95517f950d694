// Outbound delivery's routes (docs/api.md, "Endpoints"): a workspace's endpoints, managed by
// any token that reaches the workspace, their deliveries with every attempt, a retry and a replay; and the
// operator's view of every endpoint by id under /admin/endpoints (a `*` token), which is also where the
// environment endpoint (NOTIFY_URL) is seen, turned off and on again.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type, type Static, type TSchema } from 'typebox';
import { ErrorBodySchema as ErrorBody, HttpError } from '../common/http-error.js';
import type { DeliveryView } from '../db/deliveries.js';
import { maxDescriptionLength, maxRateLimit, maxUrlLength } from '../delivery/endpoints.js';
import {
  everyEndpoint,
  workspaceScope,
  type Caller,
  type EndpointManager,
  type EndpointScope,
  type EndpointState,
} from '../delivery/manage.js';
import { webhookId } from '../delivery/wire.js';
import { notificationTypes } from '../domain/types.js';
import { rowIdPattern, Segment } from './params.js';
import { IdentifierString, ProseString } from '../common/text-schemas.js';

export interface EndpointRouteOptions {
  endpoints: EndpointManager;
}

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const Iso = Type.String({ format: 'date-time' });

export const NotificationTypeSchema = Type.Enum(notificationTypes);
const Types = Type.Array(NotificationTypeSchema, {
  minItems: 1,
  maxItems: 32,
  description: `The types it receives, of ${notificationTypes.join(', ')}; absent: every type (also types added later)`,
});
const Url = IdentifierString({
  minLength: 1,
  maxLength: maxUrlLength,
  description:
    'Where notifications are POSTed (http or https). Private, loopback and link-local addresses are refused unless ' +
    'NOTIFY_ALLOW_PRIVATE_NETWORKS=true; redirects are not followed',
});
const Description = ProseString({ maxLength: maxDescriptionLength, description: 'What the endpoint is, for people' });
const RateLimit = Type.Integer({ minimum: 1, maximum: maxRateLimit, description: 'Requests a second at most (default 10)' });

const EndpointBody = Type.Object(
  { url: Url, types: Type.Optional(Types), description: Type.Optional(Description), rateLimit: Type.Optional(RateLimit) },
  { additionalProperties: false },
);
const EndpointPatchBody = Type.Object(
  {
    url: Type.Optional(Url),
    types: Type.Optional(Nullable(Types)),
    description: Type.Optional(Description),
    rateLimit: Type.Optional(RateLimit),
    enabled: Type.Optional(
      Type.Boolean({ description: 'false holds its deliveries; true sends the held ones, in order, each on a new schedule' }),
    ),
  },
  { additionalProperties: false, description: 'Only what it names changes. The environment endpoint takes `enabled` alone' },
);
const ReplayBody = Type.Object(
  { since: Type.String({ format: 'date-time', description: 'Every notification recorded since then is sent again' }) },
  { additionalProperties: false },
);

const EndpointInfoSchema = Type.Object({
  id: Type.String(),
  workspace: Nullable(Type.String({ description: 'null for the environment endpoint (NOTIFY_URL), which gets every workspace’s' })),
  source: Type.Union([Type.Literal('environment'), Type.Literal('database')]),
  url: Type.String(),
  description: Type.String(),
  types: Nullable(Type.Array(NotificationTypeSchema, { description: 'null: every type' })),
  rateLimit: Type.Integer(),
  enabled: Type.Boolean(),
  disabledReason: Nullable(
    Type.Union([Type.Literal('gone'), Type.Literal('failing'), Type.Literal('operator')], {
      description: '`gone`: it answered 410; `failing`: every attempt failed for 5 days; `operator`: turned off',
    }),
  ),
  disabledAt: Nullable(Iso),
  failingSince: Nullable(Type.String({ format: 'date-time', description: 'The first failed attempt since its last success' })),
  lastSuccessAt: Nullable(Iso),
  createdAt: Iso,
  updatedAt: Iso,
  backlog: Type.Integer({ description: 'Deliveries pending or held' }),
  oldestUndeliveredAt: Nullable(Type.String({ format: 'date-time', description: 'When the oldest of them was recorded' })),
  failed: Type.Integer({ description: 'Deliveries whose attempts are exhausted (retry or replay sends them again)' }),
});
export type EndpointInfo = Static<typeof EndpointInfoSchema>;

const CreatedEndpoint = Type.Intersect([
  EndpointInfoSchema,
  Type.Object({ secret: Type.String({ description: 'The `whsec_` signing secret: shown this once only' }) }),
]);

const AttemptSchema = Type.Object({
  at: Iso,
  statusCode: Nullable(Type.Integer({ description: 'null when no answer came (see error)' })),
  durationMs: Type.Integer(),
  error: Nullable(Type.String()),
  response: Nullable(Type.String({ description: 'At most 1 KB of what the receiver answered' })),
});
const DeliveryStateSchema = Type.Union([Type.Literal('pending'), Type.Literal('failed'), Type.Literal('held'), Type.Literal('delivered')]);
const DeliveryInfoSchema = Type.Object({
  id: Type.String({ description: 'The delivery id (POST …/deliveries/:deliveryId/retry)' }),
  notificationId: Type.String(),
  webhookId: Type.String({ description: 'Its `webhook-id` header: the same at every endpoint, retry and replay' }),
  workspace: Type.String(),
  type: NotificationTypeSchema,
  state: DeliveryStateSchema,
  attempts: Type.Integer({ description: 'Attempts of its current schedule' }),
  nextAttemptAt: Nullable(Iso),
  deliveredAt: Nullable(Iso),
  createdAt: Iso,
  history: Type.Array(AttemptSchema, { description: 'Every attempt, oldest first' }),
});
export type DeliveryInfo = Static<typeof DeliveryInfoSchema>;
const DeliveryPageSchema = Type.Object({
  deliveries: Type.Array(DeliveryInfoSchema),
  next: Nullable(Type.String({ description: 'Pass as `before` for the next (older) page' })),
});
export type DeliveryPageInfo = Static<typeof DeliveryPageSchema>;

const EndpointId = IdentifierString({ minLength: 1, maxLength: 64, description: 'The endpoint id (`ep_…`)' });
const DeliveryId = Type.String({ pattern: rowIdPattern, description: 'A delivery id' });
const WorkspaceParams = Type.Object({ workspace: Segment });
const WorkspaceEndpointParams = Type.Object({ workspace: Segment, id: EndpointId });
const AdminEndpointParams = Type.Object({ id: EndpointId });
const DeliveriesQuery = Type.Object({
  state: Type.Optional(DeliveryStateSchema),
  limit: Type.Integer({ minimum: 1, maximum: 200, default: 50 }),
  before: Type.Optional(Type.String({ pattern: rowIdPattern, description: '`next` of the page before' })),
});

const iso = (date: Date | null) => (date ? date.toISOString() : null);

export function endpointInfo(endpoint: EndpointState): EndpointInfo {
  return {
    id: endpoint.id,
    workspace: endpoint.workspace,
    source: endpoint.source,
    url: endpoint.url,
    description: endpoint.description,
    types: endpoint.types,
    rateLimit: endpoint.rateLimit,
    enabled: endpoint.enabled,
    disabledReason: endpoint.disabledReason,
    disabledAt: iso(endpoint.disabledAt),
    failingSince: iso(endpoint.failingSince),
    lastSuccessAt: iso(endpoint.lastSuccessAt),
    createdAt: endpoint.createdAt.toISOString(),
    updatedAt: endpoint.updatedAt.toISOString(),
    backlog: endpoint.backlog,
    oldestUndeliveredAt: iso(endpoint.oldestUndeliveredAt),
    failed: endpoint.failed,
  };
}

export function deliveryInfo(delivery: DeliveryView): DeliveryInfo {
  return {
    id: delivery.id,
    notificationId: delivery.notificationId,
    webhookId: webhookId(delivery.notificationId),
    workspace: delivery.workspace,
    type: delivery.type,
    state: delivery.state,
    attempts: delivery.attempts,
    nextAttemptAt: iso(delivery.nextAttemptAt),
    deliveredAt: iso(delivery.deliveredAt),
    createdAt: delivery.createdAt.toISOString(),
    history: delivery.history.map((attempt) => ({ ...attempt, at: attempt.at.toISOString() })),
  };
}

/** The caller of a route behind the access plugin: what its changes are audited under. */
export function callerOf(request: FastifyRequest): Caller {
  return { tokenName: request.access?.tokenName ?? 'unknown', tokenHash: request.access?.tokenHash ?? '' };
}

const errors = { 400: ErrorBody, 404: ErrorBody, 409: ErrorBody };

/** The routes a workspace's endpoint and the operator's view of any endpoint have alike, under `base`. */
interface SharedRoutes {
  base: string;
  params: typeof WorkspaceEndpointParams | typeof AdminEndpointParams;
  /** Who may call them: the route's workspace (a token that reaches it), else a `*` token. */
  access: 'workspace' | 'all-workspaces';
}

const scopeOf = (params: { workspace?: string }): EndpointScope =>
  params.workspace === undefined ? everyEndpoint : workspaceScope(params.workspace);

export const endpointRoutes: FastifyPluginAsyncTypebox<EndpointRouteOptions> = async (app, { endpoints }) => {
  app.post(
    '/workspaces/:workspace/endpoints',
    {
      schema: {
        summary: 'Add an endpoint to a workspace',
        description:
          'Every notification of the workspace whose type it takes is POSTed to it, signed the Standard Webhooks way with the ' +
          '`whsec_` secret of the answer (shown this once). 404 for a workspace albumflow does not know.',
        tags: ['endpoints'],
        params: WorkspaceParams,
        body: EndpointBody,
        response: { 201: CreatedEndpoint, ...errors },
      },
    },
    async (request, reply) => {
      const { endpoint, secret } = await endpoints.add(callerOf(request), request.params.workspace, request.body);
      return reply.code(201).send({ ...endpointInfo(endpoint), secret });
    },
  );

  app.get(
    '/workspaces/:workspace/endpoints',
    {
      schema: {
        summary: "A workspace's endpoints",
        description: 'Oldest first, each with its backlog; never a secret.',
        tags: ['endpoints'],
        params: WorkspaceParams,
        response: { 200: Type.Object({ endpoints: Type.Array(EndpointInfoSchema) }) },
      },
    },
    async (request) => ({ endpoints: (await endpoints.list([request.params.workspace])).map(endpointInfo) }),
  );

  app.get(
    '/admin/endpoints',
    {
      config: { access: 'all-workspaces' },
      schema: {
        summary: 'Every endpoint',
        description:
          "The environment endpoint (NOTIFY_URL, id `ep_environment`, workspace null) first, then every workspace's. " +
          'The routes under /admin/endpoints/:id reach any endpoint by its id.',
        tags: ['endpoints'],
        response: { 200: Type.Object({ endpoints: Type.Array(EndpointInfoSchema) }) },
      },
    },
    async () => ({ endpoints: (await endpoints.list('all')).map(endpointInfo) }),
  );

  const shared: SharedRoutes[] = [
    { base: '/workspaces/:workspace/endpoints/:id', params: WorkspaceEndpointParams, access: 'workspace' },
    { base: '/admin/endpoints/:id', params: AdminEndpointParams, access: 'all-workspaces' },
  ];
  for (const { base, params, access } of shared) {
    const admin = access === 'all-workspaces';
    const where = admin ? 'any endpoint, by its id' : "one of the workspace's endpoints (another's answers 404)";
    const config = { access };
    const scope = (request: FastifyRequest) => scopeOf(request.params as { workspace?: string });
    const id = (request: FastifyRequest) => (request.params as { id: string }).id;

    app.get(
      base,
      {
        config,
        schema: { summary: `An endpoint: ${where}`, tags: ['endpoints'], params, response: { 200: EndpointInfoSchema, 404: ErrorBody } },
      },
      async (request) => endpointInfo(await endpoints.get(scope(request), id(request))),
    );

    app.patch(
      base,
      {
        config,
        schema: {
          summary: `Change an endpoint, or turn it off or on: ${where}`,
          description:
            'The environment endpoint changes through NOTIFY_URL and NOTIFY_SECRET: here it takes `enabled` alone (409 `read_only` otherwise).',
          tags: ['endpoints'],
          params,
          body: EndpointPatchBody,
          response: { 200: EndpointInfoSchema, ...errors },
        },
      },
      async (request) => endpointInfo(await endpoints.change(callerOf(request), scope(request), id(request), request.body)),
    );

    app.get(
      `${base}/deliveries`,
      {
        config,
        schema: {
          summary: `An endpoint's deliveries with their attempts: ${where}`,
          description: 'Newest first; `state` narrows them. Each attempt keeps at most 1 KB of what the receiver answered.',
          tags: ['deliveries'],
          params,
          querystring: DeliveriesQuery,
          response: { 200: DeliveryPageSchema, 404: ErrorBody },
        },
      },
      async (request) => {
        const page = await endpoints.deliveries(scope(request), id(request), request.query);
        return { deliveries: page.deliveries.map(deliveryInfo), next: page.next };
      },
    );

    app.post(
      `${base}/deliveries/:deliveryId/retry`,
      {
        config,
        schema: {
          summary: `Send one delivery again now: ${where}`,
          description:
            'A failed or delivered one starts a new schedule, a pending one stops waiting for its next attempt; it still goes after ' +
            'the earlier notifications of its album. Held while the endpoint is disabled.',
          tags: ['deliveries'],
          params: Type.Object({ ...params.properties, deliveryId: DeliveryId }),
          response: { 202: Type.Object({ id: Type.String(), state: DeliveryStateSchema }), 404: ErrorBody },
        },
      },
      async (request, reply) => {
        const { deliveryId } = request.params as { deliveryId: string };
        const state = await endpoints.retry(callerOf(request), scope(request), id(request), deliveryId);
        return reply.code(202).send({ id: deliveryId, state });
      },
    );

    app.post(
      `${base}/replay`,
      {
        config,
        schema: {
          summary: `Send every notification since a time again: ${where}`,
          description:
            'Every notification recorded since `since` that the endpoint takes now is due at once, in order, each under its own ' +
            '`webhook-id`; one still pending just stops waiting. The sending happens in the background.',
          tags: ['deliveries'],
          params,
          body: ReplayBody,
          response: { 202: Type.Object({ replayed: Type.Integer({ description: 'Deliveries made due' }) }), ...errors },
        },
      },
      async (request, reply) => {
        const since = new Date(request.body.since);
        if (Number.isNaN(since.getTime())) throw new HttpError(400, 'invalid_request', 'since: not a date and time');
        const replayed = await endpoints.replay(callerOf(request), scope(request), id(request), since);
        return reply.code(202).send({ replayed });
      },
    );
  }

  // Removing an endpoint and rotating its secret are its workspace's: the environment endpoint has neither.
  app.delete(
    '/workspaces/:workspace/endpoints/:id',
    {
      schema: {
        summary: 'Remove an endpoint',
        description: 'With its deliveries: the undelivered ones are not sent.',
        tags: ['endpoints'],
        params: WorkspaceEndpointParams,
        response: { 204: Type.Null(), 404: ErrorBody, 409: ErrorBody },
      },
    },
    async (request, reply) => {
      await endpoints.remove(callerOf(request), workspaceScope(request.params.workspace), request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/workspaces/:workspace/endpoints/:id/secret/rotate',
    {
      schema: {
        summary: "Rotate an endpoint's signing secret",
        description: 'The new `whsec_` secret is shown this once; the ones before keep signing beside it for 24 hours.',
        tags: ['endpoints'],
        params: WorkspaceEndpointParams,
        response: {
          200: Type.Object({
            secret: Type.String({ description: 'The new `whsec_` secret' }),
            previousSecretsExpireAt: Type.String({ format: 'date-time', description: 'Until then the secrets before sign too' }),
          }),
          404: ErrorBody,
          409: ErrorBody,
        },
      },
    },
    async (request) => {
      const rotated = await endpoints.rotate(callerOf(request), workspaceScope(request.params.workspace), request.params.id);
      return { secret: rotated.secret, previousSecretsExpireAt: rotated.previousUntil.toISOString() };
    },
  );
};
