// The worker's own /metrics listener (a process with the worker role and no HTTP API): albumflow's
// counters of the worker's activities (downloads, decisions, notifications) and the Temporal SDK's metrics,
// which its core serves on a loopback port of its own. Behind a `*` API token like the ingress's /metrics,
// so that it may listen beyond this host (WORKER_METRICS_HOST) for a Prometheus on another machine.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { bearerTokenOf } from '../common/bearer-token.js';
import type { HttpTimeouts } from '../common/config.js';
import { errorMessage } from '../common/error-message.js';
import type { Logger } from '../common/log.js';
import { registry } from '../common/metrics.js';
import type { Tokens } from '../tenants/tokens.js';
import { errorBody } from '../common/http-error.js';

export interface WorkerMetricsServer {
  /** Its /metrics URL. */
  url: string;
  close(): Promise<void>;
}

export async function serveWorkerMetrics(options: {
  host: string;
  port: number;
  /** The tenant registry's tokens (API_TOKENS or the admin token, and those of the admin API). */
  tokens: Tokens;
  /** The Temporal SDK's Prometheus endpoint of this process. */
  temporalMetricsUrl: string;
  timeouts: HttpTimeouts;
  logger: Logger;
}): Promise<WorkerMetricsServer> {
  const { tokens, temporalMetricsUrl, logger } = options;
  const refuse = (response: http.ServerResponse, status: number, code: string, message: string, headers: http.OutgoingHttpHeaders = {}) => {
    response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
    response.end(JSON.stringify(errorBody(code, message)));
  };
  const server = http.createServer(
    { requestTimeout: options.timeouts.requestTimeoutMs, headersTimeout: options.timeouts.headersTimeoutMs },
    (request, response) => {
      void (async () => {
        const path = new URL(request.url ?? '/', 'http://worker').pathname;
        if (path !== '/metrics') return refuse(response, 404, 'not_found', 'the worker serves /metrics only');
        if (request.method !== 'GET' && request.method !== 'HEAD')
          return refuse(response, 405, 'method_not_allowed', 'GET /metrics', { allow: 'GET, HEAD' });
        const presented = bearerTokenOf(request.headers.authorization ?? '');
        const entry = presented === undefined ? undefined : await tokens.find(() => tokens.current().find(presented));
        if (!entry)
          return refuse(response, 401, 'unauthorized', 'a bearer token of API_TOKENS is needed', { 'www-authenticate': 'Bearer' });
        if (entry.workspaces !== '*')
          return refuse(response, 403, 'workspace_not_allowed', 'this route needs a token that reaches every workspace ("*")');
        tokens.used?.(entry);
        let text = await registry.metrics();
        try {
          const temporal = await fetch(temporalMetricsUrl, { signal: AbortSignal.timeout(2_000) });
          text += `\n${await temporal.text()}`;
        } catch (err) {
          logger.warn({ err: errorMessage(err) }, "the Temporal SDK's metrics are unavailable");
        }
        response.writeHead(200, { 'content-type': registry.contentType });
        response.end(request.method === 'HEAD' ? undefined : text);
      })().catch((err: unknown) => {
        logger.error({ err: errorMessage(err) }, 'worker metrics failed');
        if (!response.headersSent) refuse(response, 500, 'internal_error', 'internal server error');
        else response.destroy();
      });
    },
  );
  server.keepAliveTimeout = options.timeouts.keepAliveTimeoutMs;
  server.setTimeout(options.timeouts.idleTimeoutMs, (socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host === '0.0.0.0' || options.host === '::' ? '127.0.0.1' : options.host;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
