import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { isGrpcServiceError, ServiceError, type Client } from '@temporalio/client';
import { isUnavailable, pingDatabase, type Pool } from '../db/pool.js';
import type { EmbeddedServer, EmbeddedStatus } from '../embedded/server.js';
import { bearerTokenOf } from '../common/bearer-token.js';
import type { Tokens } from '../tenants/tokens.js';
import type { MediaStore } from '../media/store.js';

export interface HealthOptions {
  pool: Pool;
  temporal: Client;
  /** Servers this process runs itself; each must be running for the process to be ready. */
  embeddedServers: readonly EmbeddedServer[];
  /** The API's tokens: a `*` token sees why a check failed and the embedded servers' pids. */
  tokens: Tokens;
  /** The media store: the media routes read it, the worker writes it. */
  store: MediaStore;
}

/** `ok`, or why a check failed: `timeout` (no answer in time), `unreachable` (no connection), `failed` (an error answered). */
type Reason = 'ok' | 'timeout' | 'unreachable' | 'failed';

interface Outcome {
  reason: Reason;
  /** The error's own message, for an admin token only: it may name internal addresses. */
  message?: string;
}

class ProbeTimeout extends Error {}

async function check(probe: () => Promise<unknown>, classify: (err: unknown) => Reason, timeoutMs = 2_000): Promise<Outcome> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      probe(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new ProbeTimeout(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    return { reason: 'ok' };
  } catch (err) {
    return { reason: err instanceof ProbeTimeout ? 'timeout' : classify(err), message: (err as Error).message || String(err) };
  } finally {
    clearTimeout(timer);
  }
}

const databaseReason = (err: unknown): Reason => (isUnavailable(err) ? 'unreachable' : 'failed');

const grpcStatus = { DEADLINE_EXCEEDED: 4, UNAVAILABLE: 14 } as const;

/** The store's failures (src/media/store.ts) carry the cause's words: a connection that could not be made is `unreachable`. */
function storeReason(err: unknown): Reason {
  const text = err instanceof Error ? err.message : String(err);
  return /ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|ECONNRESET|EAI_AGAIN|socket hang up/.test(text) ? 'unreachable' : 'failed';
}

function temporalReason(err: unknown): Reason {
  const cause = err instanceof ServiceError ? err.cause : err;
  if (!isGrpcServiceError(cause)) return 'failed';
  if ((cause.code as number) === grpcStatus.UNAVAILABLE) return 'unreachable';
  return (cause.code as number) === grpcStatus.DEADLINE_EXCEEDED ? 'timeout' : 'failed';
}

/** Whether the request carries a valid token that reaches every workspace. The route answers everyone regardless. */
function fromAdmin(request: FastifyRequest, tokens: Tokens): boolean {
  const token = bearerTokenOf(request.headers.authorization ?? '');
  return token !== undefined && tokens.current().find(token)?.workspaces === '*';
}

/**
 * `/healthz`: the process answers. `/readyz`: PostgreSQL, Temporal and the media store answer now, and every embedded
 * server runs. Open to anyone, it gives a reason code per check and the state of each embedded server:
 * `running`, `restarting` after it died, or `failed` when it could not be restarted and albumflow is
 * exiting. With a `*` token it adds the errors' own messages (`details`) and each server's pid and restarts.
 */
export const healthRoutes: FastifyPluginAsync<HealthOptions> = async (app, { pool, temporal, embeddedServers, tokens, store }) => {
  // Probes poll these every few seconds: their requests are logged only when something goes wrong.
  app.get('/healthz', { schema: { hide: true }, logLevel: 'warn' }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { hide: true }, logLevel: 'warn' }, async (request, reply) => {
    const [database, temporalCheck, storeCheck] = await Promise.all([
      check(() => pingDatabase(pool), databaseReason),
      check(() => temporal.workflowService.getSystemInfo({}), temporalReason),
      check(() => store.ping(), storeReason),
    ]);
    const statuses: Array<[string, EmbeddedStatus]> = embeddedServers.map((server) => [server.id, server.status()]);
    const ready =
      database.reason === 'ok' &&
      temporalCheck.reason === 'ok' &&
      storeCheck.reason === 'ok' &&
      statuses.every(([, status]) => status.state === 'running');
    const admin = fromAdmin(request, tokens);
    const details = Object.fromEntries(
      Object.entries({ database, temporal: temporalCheck, mediaStore: storeCheck }).flatMap(([name, { message }]) =>
        message === undefined ? [] : [[name, message]],
      ),
    );
    return reply.code(ready ? 200 : 503).send({
      status: ready ? 'ready' : 'unavailable',
      checks: { database: database.reason, temporal: temporalCheck.reason, mediaStore: storeCheck.reason },
      ...(admin && Object.keys(details).length > 0 ? { details } : {}),
      ...(statuses.length > 0
        ? { embedded: Object.fromEntries(statuses.map(([id, status]) => [id, admin ? status : { state: status.state }])) }
        : {}),
    });
  });
};
