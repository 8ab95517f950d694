import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { context, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../common/config.js';
import { isDataException, quarantine } from '../db/ingest.js';
import { createIngestBatcher, IngestSaturatedError } from '../db/ingest-batcher.js';
import { isUnavailable, type Pool } from '../db/pool.js';
import { webhooksTotal } from '../common/metrics.js';
import { tracer } from '../common/tracing.js';
import { HttpError } from '../common/http-error.js';
import type { TenantRegistry } from '../tenants/registry.js';
import { platforms } from './index.js';
import type { Webhooks } from './webhook-route.js';

export interface WebhooksOptions {
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
 * Every platform's webhook route (./<platform>/route.ts), each verifying its own way, in one plugin: the raw-body
 * parser is registered here only, and every route stores through one group commit (src/db/ingest-batcher.ts),
 * so their rows share transactions.
 */
export const webhooksPlugin: FastifyPluginAsyncTypebox<WebhooksOptions> = async (
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

  const refuse: Webhooks['refuse'] = (request, status, code, message, headers) => {
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
  const keep: Webhooks['quarantine'] = async (request, body, workspace, code, message, detail = message) => {
    try {
      await quarantine(pool, { workspace, reason: code, detail, raw: body });
    } catch (err) {
      throw storageFailure(request, err);
    }
    request.log.warn({ workspace, reason: code }, 'event quarantined');
    throw refuse(request, 400, code, message);
  };
  const webhooks: Webhooks = {
    batcher,
    count: (request, outcome) => outcomes.set(request, outcome),
    refuse,
    quarantine: keep,
    replayHorizonMs: config.replayHorizonS * 1000,
    store: async (request, body, workspace, unstorable, store) => {
      try {
        return await store();
      } catch (err) {
        if (isDataException(err)) return keep(request, body, workspace, unstorable.code, unstorable.message, (err as Error).message);
        throw storageFailure(request, err);
      }
    },
  };

  for (const platform of platforms) await app.register(platform.route(config), { tenants, webhooks });
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
    const span = tracer.startSpan(`${request.method} ${route}`, {
      kind: SpanKind.SERVER,
      root: true,
      attributes: { 'http.request.method': request.method, 'http.route': route, ...accountAttributes(route, request.params) },
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

/**
 * The account a webhook URL names, as span attributes: `albumflow.workspace`, and each other segment
 * under its platform's name (`albumflow.telegram.bot` for `/webhooks/telegram/:workspace/:bot`).
 */
function accountAttributes(route: string, params: unknown): Record<string, string> {
  const platform = /^\/webhooks\/([^/]+)\//.exec(route)?.[1];
  const attributes: Record<string, string> = {};
  for (const [name, value] of Object.entries((params ?? {}) as Record<string, unknown>)) {
    if (typeof value !== 'string') continue;
    if (name === 'workspace') attributes['albumflow.workspace'] = value;
    else if (platform) attributes[`albumflow.${platform}.${name}`] = value;
  }
  return attributes;
}
