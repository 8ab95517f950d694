import type { FastifyPluginAsync } from 'fastify';
import type { Client } from '@temporalio/client';
import { pingDatabase, type Pool } from '../db/pool.js';
import type { EmbeddedServer, EmbeddedStatus } from '../embedded/server.js';

export interface HealthOptions {
  pool: Pool;
  temporal: Client;
  /** Servers this process runs itself; each must be running for the process to be ready. */
  embeddedServers: readonly EmbeddedServer[];
}

/** 'ok', or why the probe failed. */
async function check(probe: () => Promise<unknown>, timeoutMs = 2_000): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      probe(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    return 'ok';
  } catch (err) {
    return (err as Error).message || 'unavailable';
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `/healthz`: the process answers. `/readyz`: PostgreSQL and Temporal both answer now, and every embedded
 * server runs; `embedded` says of each whether it runs, is being restarted after it died (`restarting`),
 * or could not be restarted so that albumflow is exiting (`failed`).
 */
export const healthRoutes: FastifyPluginAsync<HealthOptions> = async (app, { pool, temporal, embeddedServers }) => {
  // Probes poll these every few seconds: their requests are logged only when something goes wrong.
  app.get('/healthz', { schema: { hide: true }, logLevel: 'warn' }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { hide: true }, logLevel: 'warn' }, async (_request, reply) => {
    const [database, temporalCheck] = await Promise.all([
      check(() => pingDatabase(pool)),
      check(() => temporal.workflowService.getSystemInfo({})),
    ]);
    const embedded: Record<string, EmbeddedStatus> = Object.fromEntries(embeddedServers.map((server) => [server.id, server.status()]));
    const ready = database === 'ok' && temporalCheck === 'ok' && Object.values(embedded).every((status) => status.state === 'running');
    return reply.code(ready ? 200 : 503).send({
      status: ready ? 'ready' : 'unavailable',
      checks: { database, temporal: temporalCheck },
      ...(embeddedServers.length > 0 ? { embedded } : {}),
    });
  });
};
