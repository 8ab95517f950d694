import type { Client } from '@temporalio/client';
import type { Config } from '../../src/common/config.js';
import type { Pool } from '../../src/db/pool.js';
import { createDispatcher, type Dispatcher } from '../../src/dispatcher/dispatcher.js';
import { buildApp, type App } from '../../src/app.js';
import { secretTokenHeader } from '../../src/http/telegram-webhook.js';
import type { Logger } from '../../src/common/log.js';
import { signatureHeader } from '../../src/common/signature.js';
import {
  freshDatabase,
  startTestWorker,
  testClient,
  testConfig,
  testLogger,
  testPool,
  unique,
  type Activities,
  type TestWorker,
} from './env.js';

export interface AlbumEventOptions {
  conversationId?: string;
  accountId?: string;
  provider?: string;
  albumId?: string;
  messageId: string;
  index?: unknown;
  total?: unknown;
  text?: string;
  sentAt?: string;
  attachments?: Array<Record<string, unknown>>;
}

/** A UnifyPort `message.received` event; without `albumId` it is a standalone message. */
export function albumEvent(options: AlbumEventOptions): Record<string, unknown> {
  const album: Record<string, unknown> | undefined = options.albumId === undefined ? undefined : { id: options.albumId };
  if (album && options.index !== undefined) album.index = options.index;
  if (album && options.total !== undefined) album.total = options.total;
  return {
    id: unique('evt'),
    type: 'message.received',
    provider: options.provider ?? 'whatsapp',
    account_id: options.accountId ?? 'acc_1',
    data: {
      conversation: { id: options.conversationId ?? 'conv_1' },
      message: {
        id: options.messageId,
        text: options.text ?? `photo ${options.messageId}`,
        sent_at: options.sentAt ?? '2026-09-29T10:00:00Z',
        attachments: options.attachments ?? [{ type: 'image', mime_type: 'image/jpeg' }],
        ...(album ? { album } : {}),
      },
    },
  };
}

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
      const payload = JSON.stringify(event);
      const timestamp = String(Math.floor(Date.now() / 1000));
      const response = await app.inject({
        method: 'POST',
        url: `/webhooks/unifyport/${encodeURIComponent(workspace)}`,
        headers: {
          'content-type': 'application/json',
          'x-unifyport-timestamp': timestamp,
          'x-unifyport-signature': signatureHeader(secret, timestamp, payload),
        },
        payload,
      });
      return { statusCode: response.statusCode, body: response.json() };
    },
    async telegram(update, { bot, secretToken }) {
      const configured = config.telegram.bots.get(workspace)?.get(bot)?.secretToken;
      const sent = secretToken === undefined ? configured : secretToken;
      const response = await app.inject({
        method: 'POST',
        url: `/webhooks/telegram/${encodeURIComponent(workspace)}/${encodeURIComponent(bot)}`,
        headers: { 'content-type': 'application/json', ...(sent === null || sent === undefined ? {} : { [secretTokenHeader]: sent }) },
        payload: typeof update === 'string' ? update : JSON.stringify(update),
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
