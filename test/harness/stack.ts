// albumflow started whole for a test, the fault suite or the bench, from one set of building blocks: the
// environment every albumflow process (or the in-process config) is given, and the cleanups that stop
// what was started in reverse order. `startStack` runs it in this process, as `npm start` wires it;
// `startProcessStack` runs it as production does, ingress and worker child processes on a PostgreSQL
// cluster and a Temporal server of the stack's own, with a media server and a NOTIFY_URL receiver. The
// bench builds its own stack (bench/stack.ts) from the same blocks.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import type { Config } from '../../src/common/config.js';
import { connectionConfig, createPool, type Pool } from '../../src/db/pool.js';
import { createDispatcher, type Dispatcher } from '../../src/dispatcher/dispatcher.js';
import { buildApp, type App } from '../../src/process/app.js';
import { pickPort } from '../../src/embedded/ports.js';
import type { Logger } from '../../src/common/log.js';
import { webhookRequest, type Delivery } from './events.js';
import { freshDatabase, startTestWorker, testClient, testConfig, testLogger, testPool, type Activities, type TestWorker } from './env.js';
import { Cleanups } from './cleanups.js';
import { appEnvironment, userEnvironment } from './environment.js';
import { appProcess, MemorySampler, type NodeProcess, type Role } from './processes.js';
import { unique } from './random.js';
import { startMediaServer, trickle, type MediaServer } from './servers/media.js';
import { startNotifyReceiver, type NotifyReceiver } from './servers/notify.js';
import { startPrivateCluster, warningsLog, type PrivateCluster } from './servers/postgres.js';
import { devServer, realServer } from './servers/temporal.js';

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
  /**
   * Posts a LINE webhook body to a channel of LINE_CHANNELS[workspace], signed with that channel's secret
   * (or the `channelSecret` given, or unsigned with null), as LINE does.
   */
  line(body: unknown, options: { channel: string; channelSecret?: string | null }): Promise<{ statusCode: number; body: string }>;
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
  const cleanups = new Cleanups();
  try {
    return await startInProcess(config, workspace, secret, logger, cleanups, options.activities);
  } catch (err) {
    await cleanups.closeAll().catch(() => undefined);
    throw err;
  }
}

async function startInProcess(
  config: Config,
  workspace: string,
  secret: string,
  logger: Logger,
  cleanups: Cleanups,
  activities: ((real: Activities) => Activities) | undefined,
): Promise<Stack> {
  const pool = testPool(config);
  cleanups.push('the pool', () => pool.end());
  const client = await testClient(config);
  cleanups.push('the Temporal client', () => client.connection.close());
  const worker = await startTestWorker(config, pool, logger, activities);
  cleanups.push('the worker', () => worker.stop());
  const dispatcher = createDispatcher({
    pool,
    client,
    taskQueue: config.temporal.taskQueue,
    timings: config.album,
    logger,
    sweepIntervalMs: 200,
  });
  dispatcher.start();
  cleanups.push('the dispatcher', () => dispatcher.stop());
  const app = await buildApp({ config, pool, temporal: client, wakeDispatcher: dispatcher.wake, logger });
  cleanups.push('the app', () => app.close());
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
    async line(body, { channel, channelSecret }) {
      const configured = config.line.channels.get(workspace)?.get(channel)?.channelSecret ?? null;
      const response = await deliver({
        route: 'line',
        workspace,
        channel,
        channelSecret: channelSecret === undefined ? configured : channelSecret,
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
      return { statusCode: response.statusCode, body: response.body };
    },
    close: () => cleanups.closeAll(),
  };
}

/** Which Temporal server: the dev server (`npm run test:faults`) or the real one (`npm run test:cluster` sets FAULTS_TEMPORAL=cluster). */
export type TemporalKind = 'dev-server' | 'cluster';

export interface ProcessStackOptions {
  /** Default: FAULTS_TEMPORAL's, else the dev server; `{ address }`: a server the run already has (never stopped here). */
  temporal?: TemporalKind | { address: string };
  /**
   * Each albumflow process gets a DATA_DIR and MEDIA_DIR of its own (`<dir>/<process name>/…`), as on
   * machines that share only PostgreSQL, Temporal and the media store; default: one of each for all.
   */
  ownDirectories?: boolean;
  ingresses: number;
  workers: number;
  /** Extra environment for every albumflow process; may be a function of the stack's workspace (for TELEGRAM_BOTS). */
  env?: Record<string, string> | ((workspace: string) => Record<string, string>);
  /** Every file the media server serves: this many bytes, trickled out over `durationMs()`. */
  media: { bytes: number; durationMs: () => number };
  notifyDelayMs: () => number;
}

/** An albumflow process of the stack, with its role. */
export type AppProcess = NodeProcess & { role: Role };

/**
 * albumflow as it runs in production, on this machine: its own PostgreSQL cluster, a Temporal server,
 * ingress and worker child processes, a slow media server and a NOTIFY_URL receiver. Everything can be
 * stopped and started again on the same ports and state.
 */
export interface ProcessStack {
  dir: string;
  workspace: string;
  /** The workspace's webhook secret. */
  secret: string;
  postgres: PrivateCluster;
  /** The Temporal server's name in the fault table ("Temporal dev server", "Temporal server"). */
  temporalName: string;
  temporalAddress: string;
  media: MediaServer;
  receiver: NotifyReceiver;
  ingresses: AppProcess[];
  workers: AppProcess[];
  ingressUrls: string[];
  /** A pool of the test itself, for the checks. */
  pool: Pool;
  /** Watches the resident memory of every albumflow process (also across restarts); not started. */
  memory: MemorySampler;
  /** The highest VmHWM the memory sampler saw of the processes of one role, bytes. */
  peakMemory(role: Role): number;
  stopTemporal(): Promise<void>;
  startTemporal(): Promise<void>;
  teardown(): Promise<void>;
}

/** A Temporal server the run already has: the stack uses it and leaves it running. */
function givenServer(address: string) {
  const refuse = async () => {
    throw new Error(`the Temporal server at ${address} is not the stack's own: it cannot stop or start it`);
  };
  return { name: `Temporal server at ${address}`, address, start: async () => undefined, stop: async () => undefined, refuse };
}

export async function startProcessStack(options: ProcessStackOptions): Promise<ProcessStack> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-faults-'));
  const cleanups = new Cleanups((line) => console.error(`process stack: ${line}`));
  const teardown = async () => {
    await cleanups.closeAll();
    if (process.env.FAULTS_KEEP_DIR === '1') console.log(`fault suite files kept in ${dir}`);
    else fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    const workspace = 'faults';
    const secret = 'faults-webhook-secret';
    const postgres = await startPrivateCluster({
      settings: { max_connections: '300', fsync: 'off', full_page_writes: 'off' },
      log: warningsLog,
    });
    cleanups.push('PostgreSQL', () => postgres.remove());

    const kind = options.temporal ?? (process.env.FAULTS_TEMPORAL === 'cluster' ? 'cluster' : 'dev-server');
    const logDir = path.join(dir, 'logs');
    const temporal =
      typeof kind === 'object'
        ? givenServer(kind.address)
        : kind === 'cluster'
          ? await realServer({ postgresUrl: postgres.databaseUrl, logDir })
          : await devServer({ dbFile: path.join(dir, 'temporal.db') });
    await temporal.start();
    cleanups.push(temporal.name, () => temporal.stop());

    const media = await startMediaServer({ fallback: trickle(options.media) });
    cleanups.push('the media server', () => media.close());
    const receiver = await startNotifyReceiver({ delayMs: options.notifyDelayMs });
    cleanups.push('the NOTIFY_URL receiver', () => receiver.close());

    const env: NodeJS.ProcessEnv = {
      ...userEnvironment(),
      ...appEnvironment({
        databaseUrl: postgres.databaseUrl,
        temporalAddress: temporal.address,
        taskQueue: 'faults',
        workspaces: { [workspace]: [secret] },
        quietPeriodMs: 300,
        maxWaitMs: 3000,
        lateWindowMs: 4000,
        dataDir: path.join(dir, 'data'),
        mediaDir: path.join(dir, 'media'),
        notify: { url: receiver.url, secret: receiver.secret },
        logLevel: 'warn',
      }),
      ...(typeof options.env === 'function' ? options.env(workspace) : options.env),
    };
    const app = (name: string, role: Role, processEnv: NodeJS.ProcessEnv) =>
      appProcess({ name, role, env: processEnv, logFile: path.join(logDir, `${name}.log`), readyTimeoutMs: 120_000, stopGraceMs: 40_000 });
    // Ports picked outside the range the OS hands out, so a killed ingress gets its port back on restart.
    const ingressPorts = await Promise.all(Array.from({ length: options.ingresses }, () => pickPort()));
    const own = (name: string): NodeJS.ProcessEnv =>
      options.ownDirectories ? { DATA_DIR: path.join(dir, name, 'data'), MEDIA_DIR: path.join(dir, name, 'media') } : {};
    const ingresses = ingressPorts.map((port, i) =>
      app(`ingress-${i + 1}`, 'ingress', { ...env, ...own(`ingress-${i + 1}`), PORT: String(port) }),
    );
    const workers = Array.from({ length: options.workers }, (_, i) =>
      app(`worker-${i + 1}`, 'worker', { ...env, ...own(`worker-${i + 1}`) }),
    );
    const processes = [...ingresses, ...workers];
    cleanups.push('albumflow', () => Promise.all(processes.map((p) => p.stop())));
    // The first process creates the database and runs the migrations; the rest start together.
    await ingresses[0]!.start();
    await Promise.all([...ingresses.slice(1), ...workers].map((p) => p.start()));

    const pool = createPool(connectionConfig(postgres.databaseUrl), { max: 4, applicationName: 'albumflow-faults' });
    cleanups.push('the pool', () => pool.end());
    const memory = new MemorySampler();
    for (const p of processes) memory.watch(p.name, () => p.pid);
    cleanups.push('the memory sampler', async () => memory.stop());

    return {
      dir,
      workspace,
      secret,
      postgres,
      temporalName: temporal.name,
      temporalAddress: temporal.address,
      media,
      receiver,
      ingresses,
      workers,
      ingressUrls: ingressPorts.map((port) => `http://127.0.0.1:${port}`),
      pool,
      memory,
      peakMemory: (role) => Math.max(0, ...processes.filter((p) => p.role === role).map((p) => memory.peak('run', p.name, 'hwm') ?? 0)),
      stopTemporal: () => ('refuse' in temporal ? temporal.refuse() : temporal.stop()),
      startTemporal: () => ('refuse' in temporal ? temporal.refuse() : temporal.start()),
      teardown,
    };
  } catch (err) {
    await teardown();
    throw err;
  }
}
