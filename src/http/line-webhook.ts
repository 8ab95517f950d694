import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { signatureFailuresTotal } from '../common/metrics.js';
import { lineSignature, sameTextInConstantTime } from '../common/signature.js';
import type { Delivery } from '../db/ingest.js';
import type { Withdrawal } from '../db/withdrawals.js';
import { unstorableTextProblem } from '../domain/storable-text.js';
import { parseLineWebhook } from '../ingest/line.js';
import type { EventSource } from '../ingest/sources.js';
import type { Ingress } from './ingress.js';
import type { TenantRegistry } from '../tenants/registry.js';
import { webhookErrorResponses } from './schemas.js';

export interface LineWebhookOptions {
  tenants: TenantRegistry;
  ingress: Ingress;
}

/** What LINE sends the body's signature in. */
export const lineSignatureHeader = 'x-line-signature';

const unstorable = {
  code: 'unstorable_webhook',
  message: `the webhook body holds text PostgreSQL cannot store (${unstorableTextProblem})`,
};

const signatureFailures = {
  missing_signature: `the ${lineSignatureHeader} header is required`,
  invalid_signature: `${lineSignatureHeader} is not the body's signature with this channel's secret`,
} as const;

/**
 * `POST /webhooks/line/:workspace/:channel` (docs/line.md), the webhook URL of a LINE channel: checks
 * the body's signature with the channel secret, parses its events with its own parser
 * (src/ingest/line.ts), stores all of them together — one batch of the group commit, or one
 * transaction of its own when an event unsends a message — and answers 200 once they are committed.
 */
export const lineWebhookRoutes: FastifyPluginCallbackTypebox<LineWebhookOptions> = (app, { tenants, ingress }, done) => {
  const { batcher, refuse } = ingress;
  const channelOf = (workspace: string, name: string) => tenants.lineChannel(workspace, name);

  app.post(
    '/webhooks/line/:workspace/:channel',
    {
      schema: {
        summary: 'Receive LINE webhook events (the channel’s webhook URL)',
        description:
          'Body: a LINE webhook body `{ "destination", "events": [...] }` as `application/json`, at most MAX_BODY_BYTES, ' +
          `with \`${lineSignatureHeader}\` = base64 of HMAC-SHA256 over the raw body with the channel secret. 200 means ` +
          'every event of the body is committed (an empty list, the console’s Verify, stores nothing). 503 with Retry-After: ' +
          'the database is unavailable, or too many events are waiting to be stored; LINE redelivers the events when redelivery is on.',
        tags: ['ingress'],
        params: Type.Object({
          workspace: Type.String({ description: 'A workspace of LINE_CHANNELS or of the admin API' }),
          channel: Type.String({ description: 'A channel of the workspace (LINE_CHANNELS, or added through the admin API)' }),
        }),
        headers: Type.Object({ [lineSignatureHeader]: Type.Optional(Type.String({ description: 'base64 HMAC-SHA256 of the body' })) }),
        response: {
          200: Type.Unknown({ description: 'Committed; the body is empty' }),
          ...webhookErrorResponses,
        },
      },
      onRequest: async (request) => {
        const { workspace, channel } = request.params;
        if (await tenants.find(() => channelOf(workspace, channel))) return;
        throw refuse(request, 404, 'unknown_channel', `workspace "${workspace}" has no LINE channel "${channel}"`);
      },
    },
    async (request, reply) => {
      const { workspace } = request.params;
      if (!Buffer.isBuffer(request.body)) throw refuse(request, 415, 'unsupported_media_type', 'the body must be application/json');
      const body = request.body;
      const sent = request.headers[lineSignatureHeader];
      let failure: keyof typeof signatureFailures | undefined;
      // A channel secret this process may not know yet (the channel was just added elsewhere) is looked for again.
      const channel = await tenants.find(() => {
        const found = channelOf(workspace, request.params.channel);
        if (!found) return undefined;
        failure = undefined;
        if (typeof sent !== 'string' || sent === '') failure = 'missing_signature';
        else if (!sameTextInConstantTime(sent, lineSignature(found.channelSecret, body))) failure = 'invalid_signature';
        return failure === 'invalid_signature' ? undefined : found;
      });
      if (!channel && failure === undefined)
        throw refuse(request, 404, 'unknown_channel', `workspace "${workspace}" has no LINE channel "${request.params.channel}"`);
      if (failure !== undefined || !channel) {
        failure ??= 'invalid_signature';
        signatureFailuresTotal.inc({ reason: failure });
        throw refuse(request, 401, failure, signatureFailures[failure]);
      }

      const parsed = parseLineWebhook(workspace, channel.name, body);
      if (parsed.kind === 'rejected') return ingress.quarantine(request, body, workspace, parsed.code, parsed.message);

      const source: EventSource = 'line';
      const deliveries: Delivery[] = [];
      const withdrawals: Withdrawal[] = [];
      // An unsend without a usable time is taken as made when it arrived.
      const now = new Date().toISOString();
      for (const event of parsed.events) {
        const { eventId, type, raw } = event;
        if (event.kind === 'child') deliveries.push({ source, eventId, type, raw, child: event.child });
        else if (event.kind === 'ignored') deliveries.push({ workspace, source, eventId, type, raw });
        else withdrawals.push({ workspace, source, eventId, type, raw, key: event.key, withdrawnAt: event.unsentAt ?? now });
      }
      const results = await ingress.store(request, body, workspace, unstorable, () => batcher.storeTogether(deliveries, withdrawals));
      const children = results.filter((result) => result !== null);
      const outcome =
        parsed.events.length === 0
          ? 'verified'
          : withdrawals.length > 0
            ? 'unsent'
            : children.some((child) => !child.duplicate)
              ? 'accepted'
              : children.length > 0 && children.every((child) => child.erased)
                ? 'erased'
                : children.length > 0
                  ? 'duplicate'
                  : 'ignored';
      ingress.count(request, outcome);
      request.log.debug({ events: parsed.events.length, children: children.length, withdrawals: withdrawals.length }, 'line events stored');
      return reply.code(200).send();
    },
  );
  done();
};
