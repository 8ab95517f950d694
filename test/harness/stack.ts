import type { Client } from '@temporalio/client';
import type { Config } from '../../src/config.js';
import type { Pool } from '../../src/db/pool.js';
import { createDispatcher, type Dispatcher } from '../../src/dispatcher/dispatcher.js';
import { buildApp, type App } from '../../src/http/app.js';
import type { Logger } from '../../src/log.js';
import { webhookRequest, type Delivery } from './events.js';
import { freshDatabase, startTestWorker, testClient, testConfig, testLogger, testPool, type Activities, type TestWorker } from './env.js';
import { unique } from './random.js';

/**
 * The whole albumflow in this process, as `npm start` wires it: the HTTP app, a dispatcher, and a real
 * worker on its own task queue, on a database of the stack's own.
 */
export interface Stack {
  config: Config;
  workspace: string;
  secret: string;
  pool: Pool;
  client: Client;
  app: App;
  dispatcher: Dispatcher;
  worker: TestWorker;
  /** Signs and posts an event to this stack's workspace. */
  post(event: unknown): Promise<{ statusCode: number; body: Record<string, unknown> }>;
  /**
   * Posts a Telegram Update to a bot of TELEGRAM_BOTS[workspace] with that bot's secret token (or the
   * `secretToken` given, or none with null), as Telegram does.
   */
  telegram(update: unknown, options: { bot: string; secretToken?: string | null }): Promise<{ statusCode: number; body: string }>;
  close(): Promise<void>;
}

/**
 * `env` may be a function of the stack's workspace (for TELEGRAM_BOTS); `logger` receives what every part
 * of the stack logs (default: the test logger); `activities` wraps the worker's activities.
 */
export async function startStack(
  env: Record<string, string> | ((workspace: string) => Record<string, string>) = {},
  options: { logger?: Logger; activities?: (real: Activities) => Activities } = {},
): Promise<Stack> {
  const workspace = unique('ws');
  const secret = 'stack-secret';
  const extra = typeof env === 'function' ? env(workspace) : env;
  const config = testConfig({
    DATABASE_URL: await freshDatabase(),
    WORKSPACE_SECRETS: JSON.stringify({ [workspace]: [secret] }),
    ...extra,
  });
  const logger = options.logger ?? testLogger(config);
  const pool = testPool(config);
  const client = await testClient(config);
  const worker = await startTestWorker(config, pool, logger, options.activities);
  const dispatcher = createDispatcher({
    pool,
    client,
    taskQueue: config.temporal.taskQueue,
    timings: config.album,
    logger,
    sweepIntervalMs: 200,
  });
  dispatcher.start();
  const app = await buildApp({ config, pool, temporal: client, wakeDispatcher: dispatcher.wake, logger });
  const deliver = (delivery: Delivery) => {
    const { path, headers } = webhookRequest(delivery);
    return app.inject({ method: 'POST', url: path, headers, payload: delivery.body });
  };
  return {
    config,
    workspace,
    secret,
    pool,
    client,
    app,
    dispatcher,
    worker,
    async post(event) {
      const response = await deliver({ route: 'unifyport', workspace, secret, body: JSON.stringify(event) });
      return { statusCode: response.statusCode, body: response.json() };
    },
    async telegram(update, { bot, secretToken }) {
      const configured = config.telegram.bots.get(workspace)?.get(bot)?.secretToken ?? null;
      const body = typeof update === 'string' ? update : JSON.stringify(update);
      const response = await deliver({
        route: 'telegram',
        workspace,
        bot,
        secretToken: secretToken === undefined ? configured : secretToken,
        body,
      });
      return { statusCode: response.statusCode, body: response.body };
    },
    async close() {
      await app.close();
      await dispatcher.stop();
      await worker.stop();
      await client.connection.close();
      await pool.end();
    },
  };
}
