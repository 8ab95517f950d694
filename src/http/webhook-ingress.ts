import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { context, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../common/config.js';
import { isDataException, quarantine } from '../db/ingest.js';
import { createIngestBatcher, IngestSaturatedError } from '../db/ingest-batcher.js';
import { isUnavailable, type Pool } from '../db/pool.js';
import { webhooksTotal } from '../common/metrics.js';
import { tracer } from '../common/tracing.js';
import { HttpError } from './errors.js';
import type { Ingress } from './ingress.js';
import { lineWebhookRoutes } from './line-webhook.js';
import { telegramWebhookRoutes } from './telegram-webhook.js';
import { webhookRoutes } from './webhook.js';
import type { TenantRegistry } from '../tenants/registry.js';

export interface WebhookIngressOptions {
  config: Config;
  pool: Pool;
  /** Where the routes look workspaces, secrets, bots and channels up. */
  tenants: TenantRegistry;
  /** Called once after each commit that queued children, so the outbox is drained at once. */
  wakeDispatcher: () => void;
  /** Each request gets a span (off: no hook is added). */
  traced: boolean;
}

const frameworkOutcomes: Record<number, string> = { 413: 'body_too_large', 415: 'unsupported_media_type' };

/**
 * The webhook routes (UnifyPort's, Telegram's and LINE's), each verifying its own way, in one plugin: the raw-body
 * parser is registered here only, and every route stores through one group commit (src/db/ingest-batcher.ts),
 * so their rows share transactions.
 */
export const webhookIngress: FastifyPluginAsyncTypebox<WebhookIngressOptions> = async (
  app,
  { config, pool, tenants, wakeDispatcher, traced },
) => {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, parsed) => parsed(null, body));

  const outcomes = new WeakMap<FastifyRequest, string>();
  const batcher = createIngestBatcher({ pool, ...config.ingest, onQueued: wakeDispatcher, logger: app.log });
  app.addHook('onClose', () => batcher.close());
  const spans = traced ? traceRequests(app) : undefined;
  app.addHook('onResponse', async (request, reply) => {
    const status = reply.statusCode;
    const outcome = outcomes.get(request) ?? frameworkOutcomes[status] ?? (status >= 500 ? 'error' : 'rejected');
    webhooksTotal.inc({ status: String(status), outcome });
    spans?.end(request, status, outcome);
  });

  const refuse: Ingress['refuse'] = (request, status, code, message, headers) => {
    outcomes.set(request, code);
    return new HttpError(status, code, message, headers);
  };
  const storageFailure = (request: FastifyRequest, err: unknown): unknown => {
    if (err instanceof IngestSaturatedError) {
      return refuse(request, 503, 'overloaded', 'too many events are waiting to be stored; retry later', { 'retry-after': '1' });
    }
    if (!isUnavailable(err)) return err;
    return refuse(request, 503, 'database_unavailable', 'the database is unavailable; retry later', { 'retry-after': '5' });
  };
  const keep: Ingress['quarantine'] = async (request, body, workspace, code, message, detail = message) => {
    try {
      await quarantine(pool, { workspace, reason: code, detail, raw: body });
    } catch (err) {
      throw storageFailure(request, err);
    }
    request.log.warn({ workspace, reason: code }, 'event quarantined');
    throw refuse(request, 400, code, message);
  };
  const ingress: Ingress = {
    batcher,
    count: (request, outcome) => outcomes.set(request, outcome),
    refuse,
    quarantine: keep,
    store: async (request, body, workspace, unstorable, store) => {
      try {
        return await store();
      } catch (err) {
        if (isDataException(err)) return keep(request, body, workspace, unstorable.code, unstorable.message, (err as Error).message);
        throw storageFailure(request, err);
      }
    },
  };

  await app.register(webhookRoutes, { config, tenants, ingress });
  await app.register(telegramWebhookRoutes, { tenants, ingress });
  await app.register(lineWebhookRoutes, { tenants, ingress });
};

/**
 * A server span per webhook request, active while its handler runs (so the group commit links to it and
 * every log line of the request carries its ids): the route pattern, the workspace, the status and the
 * outcome — never the body, a header or the raw URL.
 */
function traceRequests(app: FastifyInstance): { end: (request: FastifyRequest, status: number, outcome: string) => void } {
  const spans = new WeakMap<FastifyRequest, Span>();
  app.addHook('onRequest', (request, _reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const params = request.params as { workspace?: string; bot?: string; channel?: string };
    const span = tracer.startSpan(`${request.method} ${route}`, {
      kind: SpanKind.SERVER,
      root: true,
      attributes: {
        'http.request.method': request.method,
        'http.route': route,
        ...(params.workspace !== undefined ? { 'albumflow.workspace': params.workspace } : {}),
        ...(params.bot !== undefined ? { 'albumflow.telegram.bot': params.bot } : {}),
        ...(params.channel !== undefined ? { 'albumflow.line.channel': params.channel } : {}),
      },
    });
    spans.set(request, span);
    done();
  });
  // A callback hook calls the handler from `done`: the handler and everything it awaits run in the span.
  app.addHook('preHandler', (request, _reply, done) => {
    const span = spans.get(request);
    if (span) context.with(trace.setSpan(context.active(), span), done);
    else done();
  });
  const end = (request: FastifyRequest, status: number, outcome: string) => {
    const span = spans.get(request);
    if (!span) return;
    spans.delete(request);
    span.setAttributes({ 'http.response.status_code': status, 'albumflow.outcome': outcome });
    if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
    span.end();
  };
  app.addHook('onRequestAbort', (request, done) => {
    end(request, 499, 'aborted');
    done();
  });
  return { end };
}
