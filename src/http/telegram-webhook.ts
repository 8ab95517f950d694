import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { EventSource } from '../ingest/sources.js';
import { parseUpdate } from '../ingest/telegram.js';
import { unstorableTextProblem } from '../domain/storable-text.js';
import { signatureFailuresTotal } from '../common/metrics.js';
import { sameTextInConstantTime } from '../common/signature.js';
import { webhookErrorResponses } from './schemas.js';
import type { Ingress } from './ingress.js';
import type { TenantRegistry } from '../tenants/registry.js';

export interface TelegramWebhookOptions {
  tenants: TenantRegistry;
  ingress: Ingress;
}

/** What Telegram sends the `secret_token` of setWebhook in. */
export const secretTokenHeader = 'x-telegram-bot-api-secret-token';

const unstorable = {
  code: 'unstorable_update',
  message: `the update holds text PostgreSQL cannot store (${unstorableTextProblem})`,
};

const secretTokenFailures = {
  missing_secret_token: `the ${secretTokenHeader} header is required`,
  invalid_secret_token: `${secretTokenHeader} is not this bot's secret token`,
} as const;

/**
 * `POST /webhooks/telegram/:workspace/:bot` (docs/telegram.md), the webhook a bot's setWebhook points at:
 * checks the secret token, parses the Update with its own parser (src/ingest/telegram.ts), stores it
 * through the same group commit as the UnifyPort route, and answers 200 with an empty body once it is
 * committed — a JSON body would be taken by Telegram as a Bot API method call.
 */
export const telegramWebhookRoutes: FastifyPluginCallbackTypebox<TelegramWebhookOptions> = (app, { tenants, ingress }, done) => {
  const { batcher, refuse } = ingress;
  const botOf = (workspace: string, name: string) => tenants.telegramBot(workspace, name);

  app.post(
    '/webhooks/telegram/:workspace/:bot',
    {
      schema: {
        summary: 'Receive a Telegram Update (the bot’s webhook)',
        description:
          'Body: one Telegram Update as `application/json`, at most MAX_BODY_BYTES, with the bot’s `secret_token` in ' +
          `\`${secretTokenHeader}\`. 200 with an empty body means the update is committed (a new child, a redelivery, ` +
          'an edit, or an update recorded without a child). 503 with Retry-After: the database is unavailable, or ' +
          'too many updates are waiting to be stored; Telegram delivers the update again later.',
        tags: ['ingress'],
        params: Type.Object({
          workspace: Type.String({ description: 'A workspace of TELEGRAM_BOTS or of the admin API' }),
          bot: Type.String({ description: 'A bot of the workspace (TELEGRAM_BOTS, or added through the admin API)' }),
        }),
        headers: Type.Object({ [secretTokenHeader]: Type.Optional(Type.String({ description: 'The secret_token given to setWebhook' })) }),
        response: {
          200: Type.Unknown({ description: 'Committed; the body is empty' }),
          ...webhookErrorResponses,
        },
      },
      onRequest: async (request) => {
        const { workspace, bot } = request.params;
        if (await tenants.find(() => botOf(workspace, bot))) return;
        throw refuse(request, 404, 'unknown_bot', `workspace "${workspace}" has no Telegram bot "${bot}"`);
      },
    },
    async (request, reply) => {
      const { workspace } = request.params;
      const sent = request.headers[secretTokenHeader];
      let failure: keyof typeof secretTokenFailures | undefined;
      // A secret token this process may not know yet (the bot was just added elsewhere) is looked for again.
      const bot = await tenants.find(() => {
        const found = botOf(workspace, request.params.bot);
        if (!found) return undefined;
        failure = undefined;
        if (typeof sent !== 'string' || sent === '') failure = 'missing_secret_token';
        else if (!sameTextInConstantTime(sent, found.secretToken)) failure = 'invalid_secret_token';
        return failure === 'invalid_secret_token' ? undefined : found;
      });
      if (!bot && failure === undefined)
        throw refuse(request, 404, 'unknown_bot', `workspace "${workspace}" has no Telegram bot "${request.params.bot}"`);
      if (failure !== undefined || !bot) {
        failure ??= 'invalid_secret_token';
        // Counted with UnifyPort's signature failures: both are senders that did not prove who they are.
        signatureFailuresTotal.inc({ reason: failure });
        throw refuse(request, 401, failure, secretTokenFailures[failure]);
      }
      if (!Buffer.isBuffer(request.body)) throw refuse(request, 415, 'unsupported_media_type', 'the body must be application/json');
      const body = request.body;

      const update = parseUpdate(workspace, bot.id, body);
      if (update.kind === 'rejected') return ingress.quarantine(request, body, workspace, update.code, update.message);

      const raw = body.toString('utf8');
      const source: EventSource = 'telegram';
      if (update.kind === 'ignored') {
        await ingress.store(request, body, workspace, unstorable, () =>
          batcher.recordEvent({ workspace, source, eventId: update.eventId, type: update.type, raw }),
        );
        ingress.count(request, 'ignored');
      } else if (update.kind === 'child') {
        const stored = await ingress.store(request, body, workspace, unstorable, () =>
          batcher.storeChild({ source, eventId: update.eventId, type: update.type, raw, child: update.child }),
        );
        ingress.count(request, stored.erased ? 'erased' : stored.duplicate ? 'duplicate' : 'accepted');
      } else {
        // An edit without a usable edit_date is taken as made when it arrived.
        const editedAt = update.editedAt ?? new Date().toISOString();
        const stored = await ingress.store(request, body, workspace, unstorable, () =>
          batcher.storeEdit({ source, eventId: update.eventId, type: update.type, raw, child: update.child, editedAt }),
        );
        ingress.count(request, stored.outcome === 'stale' ? 'duplicate' : stored.outcome === 'erased' ? 'erased' : 'edited');
      }
      return reply.code(200).send();
    },
  );
  done();
};
