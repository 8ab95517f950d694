import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type RouteOptions } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Client } from '@temporalio/client';
import type { Config } from '../common/config.js';
import type { Pool } from '../db/pool.js';
import type { EmbeddedServer } from '../embedded/server.js';
import type { Logger } from '../common/log.js';
import { httpRequestDuration, mediaDeleteFailures, registry, reviewQueue, setWorkspaceUsage } from '../common/metrics.js';
import { countSetAsideMedia } from '../db/media-collector.js';
import { countReviewQueue } from '../db/status.js';
import { cachedWorkspaceUsage } from '../db/usage.js';
import { accessControl, documentAccess, markRoutesOpen, securitySchemes } from '../http/access/plugin.js';
import { ConsoleSessions } from '../http/access/session.js';
import { signInRoutes } from '../http/access/sign-in.js';
import { actionRoutes } from '../http/actions.js';
import { erasureRoutes } from '../http/erasures.js';
import { handleError } from '../http/errors.js';
import { errorBody } from '../common/http-error.js';
import { healthRoutes } from '../http/health.js';
import { statusRoutes } from '../http/status.js';
import { textKindPlugin } from '../common/text-schemas.js';
import { webhooksPlugin } from '../platforms/webhooks.js';
import { consolePlugin } from '../ui/console.js';
import { adminRoutes } from '../http/admin.js';
import { createRegistry, type TenantRegistry } from '../tenants/registry.js';
import { openMediaStore, type MediaStore } from '../media/store.js';
import { mediaLinksFor } from '../media/links.js';
import { endpointGuard } from '../delivery/engine.js';
import { createFeedReader, type FeedReader } from '../delivery/feed.js';
import { endpointManager } from '../delivery/manage.js';
import { withMediaLinks } from '../delivery/materialize.js';
import { refreshDeliveryGauges } from '../delivery/metrics.js';
import { endpointRoutes } from '../http/endpoints.js';
import { eventRoutes } from '../http/events.js';
import { HttpError } from '../common/http-error.js';

export interface AppDeps {
  config: Config;
  pool: Pool;
  temporal: Client;
  /** Called after a child commits so the outbox is drained at once. */
  wakeDispatcher: () => void;
  logger: Logger;
  /** The in-process worker's Temporal metrics, appended to `/metrics`. */
  workerMetricsUrl?: string;
  /**
   * The bearer tokens and the workspaces each reaches. Default: API_TOKENS, and no token at all when
   * it is unset (startService passes the admin token it generated).
   */
  tokens?: ReadonlyMap<string, readonly string[]>;
  /**
   * Where every route looks workspaces, secrets, tokens, bots and channels up (default: one of this app's,
   * on `pool`, with `tokens` and the configuration's entries as the environment's; started here, closed with the app).
   */
  tenants?: TenantRegistry;
  /** The console's sessions and sign-in codes (default: kept in `pool`). */
  consoleSessions?: ConsoleSessions;
  /** The servers this process runs itself (DATABASE_URL or TEMPORAL_ADDRESS unset), reported by `/readyz`. */
  embeddedServers?: readonly EmbeddedServer[];
  /** Told of every route as it is registered, with its schema (a test walks them all with hostile input). */
  onRoute?: (route: RouteOptions) => void;
  /** Tracing is on (src/common/tracing.ts): each webhook request gets a span. */
  traced?: boolean;
  /** The media store (default: the one the configuration names, closed with the app). */
  store?: MediaStore;
  /**
   * How long one reading of the workspaces' rows and media (src/db/usage.ts) serves `/metrics` and the
   * console before the next request reads them again (default 30 s): a scrape does not count every table.
   */
  usageMaxAgeMs?: number;
}

export type App = FastifyInstance<Server, IncomingMessage, ServerResponse, FastifyBaseLogger, TypeBoxTypeProvider>;

/**
 * A request Node's parser gave up on (a timeout, headers too large, bytes that are not HTTP), answered
 * with albumflow's error body before the socket is closed; nothing of it reached a route.
 */
function answerClientError(this: FastifyInstance, err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, code, message] =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'request_timeout', 'the request did not arrive within HTTP_REQUEST_TIMEOUT_MS (its headers within HTTP_HEADERS_TIMEOUT_MS)']
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'headers_too_large', 'the request headers are too large']
        : [400, 'bad_request', 'the request is not valid HTTP'];
  this.log.debug({ err: { code: err.code } }, 'client error');
  if (socket.writable) {
    const body = JSON.stringify(errorBody(code, message));
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/** The HTTP application without a listening socket: tests use `app.inject`, servers call `listen`. */
export async function buildApp(deps: AppDeps): Promise<App> {
  const loggerInstance: FastifyBaseLogger = deps.logger;
  const timeouts = deps.config.http;
  const app = Fastify({
    loggerInstance,
    bodyLimit: deps.config.maxBodyBytes,
    // No client holds a connection forever: not by trickling its request, not by sending nothing.
    requestTimeout: timeouts.requestTimeoutMs,
    connectionTimeout: timeouts.idleTimeoutMs,
    keepAliveTimeout: timeouts.keepAliveTimeoutMs,
    http: {
      requestTimeout: timeouts.requestTimeoutMs,
      headersTimeout: timeouts.headersTimeoutMs,
      // How often Node looks for requests past those timeouts (its default, 30 s, would let them run that much longer).
      connectionsCheckingInterval: Math.min(1_000, timeouts.headersTimeoutMs),
    },
    clientErrorHandler: answerClientError,
    // A URL the router cannot decode (invalid percent-encoding) or a path segment past maxParamLength.
    frameworkErrors: (error, request, reply) => handleError(error, request, reply),
    return503OnClosing: true,
    // TRUST_PROXY: the X-Forwarded-* of these peers give the client's address and the request's scheme.
    trustProxy: deps.config.trustProxy,
    // Key segments longer than this are refused by the route schemas with a 400, not by the router.
    routerOptions: { maxParamLength: 2048 },
    // Strings of the request schemas that PostgreSQL must be able to store carry this keyword.
    ajv: { plugins: [textKindPlugin] },
  }).withTypeProvider<TypeBoxTypeProvider>();

  if (deps.onRoute) app.addHook('onRoute', deps.onRoute);
  const store = deps.store ?? openMediaStore(deps.config.media);
  if (!deps.store) app.addHook('onClose', async () => store.close());
  app.setErrorHandler(handleError);
  app.addHook('onResponse', async (request, reply) => {
    // The route pattern, never the raw URL: ids in paths would make a series per album.
    const route = request.routeOptions.url ?? 'unmatched';
    httpRequestDuration.observe({ method: request.method, route, status_code: String(reply.statusCode) }, reply.elapsedTime / 1000);
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ error: { code: 'not_found', message: `no route for ${request.method} ${request.url}` } }),
  );

  await app.register(swagger, {
    openapi: {
      info: { title: 'albumflow', version: '0.1.0', description: 'Durable media-album aggregation for chat webhooks' },
      components: { securitySchemes },
    },
    transform: documentAccess,
  });

  // Every route needs a token unless it is registered in the open block below.
  let tenants = deps.tenants;
  if (!tenants) {
    const own = createRegistry({
      config: deps.config,
      pool: deps.pool,
      logger: deps.logger,
      tokens: deps.tokens ?? deps.config.apiTokens ?? new Map(),
      tokenLabel: deps.config.apiTokens ? 'API_TOKENS' : 'admin token',
    });
    await own.start();
    app.addHook('onClose', () => own.close());
    tenants = own;
  }
  const tokens = tenants;
  const sessions = deps.consoleSessions ?? new ConsoleSessions(deps.pool);
  const links = mediaLinksFor(deps.config, deps.pool, () => tokens.keys);
  const usage = cachedWorkspaceUsage(deps.pool, deps.usageMaxAgeMs ?? 30_000);
  await app.register(accessControl, { tokens, sessions, links });
  const endpoints = endpointManager({
    pool: deps.pool,
    deps: {
      get keys() {
        return tokens.keys;
      },
      guard: endpointGuard(deps.config.notify),
    },
    knows: async (workspace) => (await tokens.find(() => tokens.knows(workspace) || undefined)) === true,
  });
  // The feed's one LISTEN connection, opened by the first read and ended before the server closes, so that
  // long polls answer at once instead of holding the close up.
  let feed: FeedReader | undefined;
  let closing = false;
  const feedReader = () => {
    if (closing) throw new HttpError(503, 'closing', 'albumflow is shutting down; read again from another process or later');
    return (feed ??= createFeedReader({ pool: deps.pool, materialize: withMediaLinks(links), logger: deps.logger }));
  };
  app.addHook('preClose', async () => {
    closing = true;
    await feed?.close();
  });
  await app.register(async (open) => {
    markRoutesOpen(open);
    await open.register(swaggerUi, { routePrefix: '/docs' });
    await open.register(healthRoutes, {
      pool: deps.pool,
      temporal: deps.temporal,
      embeddedServers: deps.embeddedServers ?? [],
      tokens,
      store,
    });
    await open.register(webhooksPlugin, {
      config: deps.config,
      pool: deps.pool,
      tenants,
      wakeDispatcher: deps.wakeDispatcher,
      traced: deps.traced ?? false,
    });
    await open.register(signInRoutes, { tokens, sessions });
  });

  await app.register(statusRoutes, { pool: deps.pool, temporal: deps.temporal });
  await app.register(actionRoutes, { config: deps.config, pool: deps.pool, temporal: deps.temporal });
  await app.register(erasureRoutes, { config: deps.config, pool: deps.pool, temporal: deps.temporal, tenants });
  await app.register(consolePlugin, { config: deps.config, pool: deps.pool, tenants, store, usage, temporal: deps.temporal, endpoints });
  await app.register(adminRoutes, { pool: deps.pool, tenants });
  await app.register(endpointRoutes, { endpoints });
  await app.register(eventRoutes, { feed: feedReader });
  app.get('/metrics', { schema: { hide: true }, config: { access: 'all-workspaces' } }, async (request, reply) => {
    try {
      reviewQueue.set(await countReviewQueue(deps.pool));
    } catch (err) {
      request.log.warn({ err }, 'review queue not counted');
    }
    try {
      mediaDeleteFailures.set(await countSetAsideMedia(deps.pool));
    } catch (err) {
      request.log.warn({ err }, 'set-aside media objects not counted');
    }
    try {
      setWorkspaceUsage((await usage.read()).usage);
    } catch (err) {
      request.log.warn({ err }, 'workspace usage not read');
    }
    try {
      await refreshDeliveryGauges(deps.pool);
    } catch (err) {
      request.log.warn({ err }, 'delivery backlog not read');
    }
    let text = await registry.metrics();
    if (deps.workerMetricsUrl) {
      try {
        const response = await fetch(deps.workerMetricsUrl, { signal: AbortSignal.timeout(2_000) });
        text += `\n${await response.text()}`;
      } catch (err) {
        request.log.warn({ err }, 'worker metrics unavailable');
      }
    }
    return reply.type(registry.contentType).send(text);
  });

  return app;
}
