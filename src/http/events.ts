// The pull feed (docs/api.md, "The pull feed"): a workspace's notifications in an order in which
// a reader never skips one that committed after a later one was read, for receivers that cannot take webhooks;
// `wait` holds the request until something arrives.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ErrorBodySchema as ErrorBody, HttpError } from '../common/http-error.js';
import { maxFeedWaitMs, type FeedReader } from '../delivery/feed.js';
import { isNotificationType, notificationTypes, type NotificationType } from '../domain/types.js';
import { NotificationTypeSchema } from './endpoints.js';
import { Segment } from './params.js';
import { IdentifierString } from '../common/text-schemas.js';

export interface EventRouteOptions {
  /** The process's one feed reader (one LISTEN connection for every waiting request). */
  feed: () => FeedReader;
}

const EventsQuery = Type.Object({
  after: Type.Optional(
    Type.String({ pattern: '^(0|[1-9][0-9]{0,17})$', description: 'The `next` of the page before; none: from the start' }),
  ),
  limit: Type.Integer({ minimum: 1, maximum: 500, default: 100 }),
  types: Type.Optional(
    IdentifierString({ maxLength: 500, description: `Comma-separated, of ${notificationTypes.join(', ')}; none: every type` }),
  ),
  wait: Type.Integer({
    minimum: 0,
    maximum: maxFeedWaitMs / 1000,
    default: 0,
    description: 'Seconds to hold the request when nothing is there yet (a long poll); it answers as soon as something commits',
  }),
});

const FeedPageSchema = Type.Object({
  events: Type.Array(
    Type.Object({
      cursor: Type.String({ description: 'Its place in the feed' }),
      id: Type.String({ description: 'Its `webhook-id`: the same id its webhooks carry' }),
      type: NotificationTypeSchema,
      timestamp: Type.String({ format: 'date-time', description: 'When it was recorded' }),
      data: Type.Record(Type.String(), Type.Unknown(), {
        description: "As a webhook's body carries it: `id` (the notification's), then `album` or `message`, `decision`, …",
      }),
    }),
  ),
  next: Type.String({ description: 'Pass as `after` to read on (the last event’s cursor, or `after` when there was none)' }),
});

function typesOf(text: string | undefined): NotificationType[] | undefined {
  if (text === undefined) return undefined;
  const types = text
    .split(',')
    .map((type) => type.trim())
    .filter((type) => type !== '');
  const unknown = types.find((type) => !isNotificationType(type));
  if (unknown !== undefined || types.length === 0) {
    throw new HttpError(400, 'invalid_request', `querystring/types: name types of ${notificationTypes.join(', ')}, separated by commas`);
  }
  return types as NotificationType[];
}

export const eventRoutes: FastifyPluginAsyncTypebox<EventRouteOptions> = async (app, { feed }) => {
  app.get(
    '/workspaces/:workspace/events',
    {
      schema: {
        summary: "A workspace's notifications, as a feed to pull",
        description:
          'In commit order: a reader that goes on from `next` never misses a notification, even one that committed after a ' +
          'later one was read. Media links are minted at each read.',
        tags: ['events'],
        params: Type.Object({ workspace: Segment }),
        querystring: EventsQuery,
        response: { 200: FeedPageSchema, 400: ErrorBody },
      },
    },
    async (request, reply) => {
      const { after, limit, wait } = request.query;
      const types = typesOf(request.query.types);
      // A client that goes away ends its wait.
      const gone = new AbortController();
      reply.raw.once('close', () => gone.abort());
      return feed().read(request.params.workspace, {
        ...(after === undefined ? {} : { after }),
        limit,
        ...(types ? { types } : {}),
        waitMs: wait * 1000,
        signal: gone.signal,
      });
    },
  );
};
