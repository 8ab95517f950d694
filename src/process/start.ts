import { deliveryConfig, type DeliveryConfig } from '../delivery/config.js';
import { createDeliveryEngine, endpointGuard } from '../delivery/engine.js';
import { withMediaLinks } from '../delivery/materialize.js';
import { mediaLinksFor } from '../media/links.js';
import fs from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import type { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../../activities/index.js';
import type { Config } from '../common/config.js';
import { connectionConfig, createPool, ensureDatabase, type Pool } from '../db/pool.js';
import { migrate } from '../db/migrate.js';
import { createDispatcher, type Dispatcher, type DispatcherOptions } from '../dispatcher/dispatcher.js';
import { resolveApiTokens, type ApiTokens } from '../http/access/admin-token.js';
import { consolePath, signInPath } from '../http/access/plugin.js';
import { ConsoleSessions } from '../http/access/session.js';
import { serveWorkerMetrics } from '../http/worker-metrics.js';
import { buildApp, type App } from './app.js';
import { openMediaStore, type MediaStore } from '../media/store.js';
import type { Logger } from '../common/log.js';
import { claimDataDir } from '../embedded/ownership.js';
import { pickPort } from '../embedded/ports.js';
import { startEmbeddedPostgres } from '../embedded/postgres.js';
import type { EmbeddedServer } from '../embedded/server.js';
import { devServerDbFile, startDevServer, type DevServer } from '../embedded/temporal.js';
import { connectClient, connectWorker, prepareNamespace, temporalConnectOptions } from '../temporal/connection.js';
import { installTemporalRuntime } from '../temporal/telemetry.js';
import type { Tracing } from '../common/tracing.js';
import { clientTracingInterceptors, workerTracingOptions } from '../temporal/tracing.js';
import { ensureRetentionSchedule } from '../temporal/lifetime.js';
import { bundleWorkflowsInChildProcess, createAlbumWorker } from '../temporal/worker.js';
import { resolveSecretKey } from '../common/secret-key.js';
import { createRegistry, withRegisteredBots, type TenantRegistry } from '../tenants/registry.js';

export interface Roles {
  /** The HTTP server: webhooks, status, health, metrics. */
  http: boolean;
  /** The outbox dispatcher, which hands committed children to their album workflows. */
  dispatcher: boolean;
  /** Temporal worker running the album workflows and activities. */
  worker: boolean;
}

export interface Service {
  urls: {
    http?: string;
    /** The console; with a single-use sign-in code when the admin token was generated (no API_TOKENS). */
    console?: string;
    /** The embedded PostgreSQL's address (without its password); unset with DATABASE_URL. */
    database?: string;
    /** Where the embedded PostgreSQL keeps its data: DATA_DIR/postgres, or as root a place the postgres OS user reaches. */
    databaseDir?: string;
    temporal: string;
    temporalUi?: string;
    workerMetrics?: string;
  };
  /** Settles when albumflow can no longer work: an embedded server died and could not be restarted. */
  failed: Promise<Error>;
  /** Stops accepting, drains, and closes everything in reverse order of start. */
  close(): Promise<void>;
}

/**
 * What a caller swaps in from code, never from the environment: the bench starts its cost baseline's
 * ingress and worker this way.
 */
export interface ServiceOptions {
  /** The workflow module the worker bundles instead of workflows/index.ts. */
  workflowsPath?: string;
  /** The dispatcher's signal settings. */
  dispatcher?: Pick<DispatcherOptions, 'minSignalIntervalMs' | 'maxChildrenPerSignal'>;
  /** The tracing this process started (the OTEL_* variables turned it on): shut down last, after everything it traces. */
  tracing?: Tracing;
}

/** What every step of the start shares: the configuration, the log, what to close, and how to say albumflow failed. */
interface Startup {
  config: Config;
  /** Outbound delivery's configuration (DELIVERY_*, NOTIFY_*), read at start so that a mistake stops it. */
  delivery: DeliveryConfig;
  logger: Logger;
  /** Closed in reverse order of start. */
  closers: Array<() => Promise<unknown>>;
  /** Settles the service's `failed`. */
  fail: (err: Error) => void;
}

/**
 * Starts albumflow's parts: the embedded PostgreSQL when DATABASE_URL is unset, migrations, the embedded
 * Temporal dev server when TEMPORAL_ADDRESS is unset, then the worker, the dispatcher and the HTTP
 * server, each when its role is asked for. Embedded servers belong to this process: it claims the data
 * directory first (a second albumflow on it stops here), and stops them last.
 */
export async function startService(config: Config, roles: Roles, logger: Logger, options: ServiceOptions = {}): Promise<Service> {
  const closers: Array<() => Promise<unknown>> = [];
  // Once, however many callers ask (a signal and a lost embedded server may both).
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      for (const closer of closers.reverse()) {
        await closer().catch((err: unknown) => logger.error({ err }, 'error while shutting down'));
      }
    })());

  let fail: (err: Error) => void = () => undefined;
  const failed = new Promise<Error>((resolve) => (fail = resolve));
  const startup: Startup = { config, delivery: deliveryConfig(config.notify), logger, closers, fail };
  const embedded: EmbeddedServer[] = [];
  const embed = <T extends EmbeddedServer>(server: T): T => {
    embedded.push(server);
    closers.push(() => server.stop());
    return server;
  };

  const { tracing } = options;
  if (tracing) closers.push(() => tracing.shutdown());
  try {
    // Readable by their owner only, like the admin token: the photos of every album (with MEDIA_STORE, the
    // downloads under way), the servers' state.
    if (roles.http || roles.worker) fs.mkdirSync(config.media.dir, { recursive: true, mode: 0o700 });
    if (!config.databaseUrl || !config.temporal.address) {
      const claim = claimDataDir(config.dataDir);
      closers.push(async () => claim.release());
    }
    const database = config.databaseUrl
      ? { url: config.databaseUrl }
      : embed(await startEmbeddedPostgres({ dataDir: path.join(config.dataDir, 'postgres'), log: logger, onFailed: fail }));
    const dbConfig = connectionConfig(database.url);
    await ensureDatabase(dbConfig);
    await migrate(dbConfig, logger);

    // Before any Temporal connection (the SDK's download of the dev server makes one).
    // The Temporal SDK's metrics, on a loopback port: the HTTP API's /metrics includes them, or the worker's own listener.
    let temporalMetrics: string | undefined;
    if (roles.worker) {
      const metricsPort = await pickPort();
      installTemporalRuntime(logger, `127.0.0.1:${metricsPort}`);
      temporalMetrics = `http://127.0.0.1:${metricsPort}/metrics`;
    }
    const devServer: DevServer | undefined = config.temporal.address
      ? undefined
      : embed(
          await startDevServer({
            dbFile: devServerDbFile(config.dataDir),
            port: config.temporal.port,
            uiPort: config.temporal.uiPort,
            log: logger,
            onFailed: fail,
          }),
        );
    const { connectionOptions } = temporalConnectOptions(devServer?.address);
    const namespace = config.temporal.namespace;

    const client: Client = await connectClient(connectionOptions, namespace, undefined, tracing ? await clientTracingInterceptors() : []);
    closers.push(() => client.connection.close());
    await prepareNamespace(client, namespace);

    const pool: Pool = createPool(dbConfig, { max: 20, logger });
    closers.push(() => pool.end());
    const store = openMediaStore(config.media);
    closers.push(async () => store.close());

    // One registry of the tenants for the HTTP routes and the worker's downloads, following the tables' changes.
    // A worker of its own checks them too, on its /metrics.
    const apiTokens = roles.http || roles.worker ? resolveApiTokens(config, logger) : { tokens: new Map<string, string[]>() };
    const tenants = roles.http || roles.worker ? await startRegistry(startup, pool, apiTokens.tokens) : undefined;

    let workerMetrics: string | undefined;
    if (roles.worker && !roles.http && temporalMetrics && tenants) {
      const server = await serveWorkerMetrics({
        host: config.temporal.workerMetricsHost,
        port: config.temporal.workerMetricsPort ?? (await pickPort()),
        tokens: tenants,
        temporalMetricsUrl: temporalMetrics,
        timeouts: config.http,
        logger,
      });
      closers.push(() => server.close());
      workerMetrics = server.url;
    }

    if (roles.worker) {
      await startWorker(startup, {
        connection: await connectWorker(connectionOptions),
        client,
        pool,
        store,
        tenants: tenants!,
        ...(options.workflowsPath ? { workflowsPath: options.workflowsPath } : {}),
        ...(tracing ? { tracing } : {}),
      });
    }

    const dispatcher: Dispatcher | undefined = roles.dispatcher
      ? createDispatcher({
          pool,
          client,
          taskQueue: config.temporal.taskQueue,
          timings: config.album,
          logger,
          ...options.dispatcher,
        })
      : undefined;
    if (dispatcher) {
      dispatcher.start();
      closers.push(() => dispatcher.stop());
    }

    const served = roles.http
      ? await startHttp(startup, {
          pool,
          client,
          store,
          tenants,
          dispatcher,
          devServer,
          embedded,
          temporalMetrics,
          adminToken: apiTokens.adminToken,
          traced: tracing !== undefined,
        })
      : undefined;

    return {
      urls: {
        ...(served ? { http: served.http, console: served.console } : {}),
        ...('displayUrl' in database ? { database: database.displayUrl, databaseDir: database.clusterDir } : {}),
        temporal: devServer?.address ?? connectionOptions.address ?? '',
        ...(devServer?.uiUrl ? { temporalUi: devServer.uiUrl } : {}),
        ...(workerMetrics ? { workerMetrics } : {}),
      },
      failed,
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

/** The registry of the tenants, loaded and following the tables' changes: the HTTP routes' and the worker's downloads'. */
async function startRegistry({ config, logger, closers }: Startup, pool: Pool, tokens: ApiTokens['tokens']): Promise<TenantRegistry> {
  const secretKey = resolveSecretKey({ secretKey: config.secretKey, dataDir: config.dataDir });
  if (secretKey.file) {
    logger.info(
      { file: secretKey.file },
      secretKey.created ? 'ALBUMFLOW_SECRET_KEY is unset: generated a secret key' : 'ALBUMFLOW_SECRET_KEY is unset: using the secret key',
    );
  }
  if (secretKey.warning) logger.warn(secretKey.warning);
  const registry = createRegistry({
    config,
    pool,
    keys: secretKey.ring,
    logger,
    tokens,
    tokenLabel: config.apiTokens ? 'API_TOKENS' : 'admin token',
  });
  await registry.start();
  closers.push(() => registry.close());
  return registry;
}

/**
 * The Temporal worker, running the workflows (bundled in a child process) and the activities; the retention
 * Schedule; and outbound delivery, which sends what the activities record.
 */
async function startWorker(
  { config, delivery, logger, closers, fail }: Startup,
  parts: {
    connection: NativeConnection;
    client: Client;
    pool: Pool;
    store: MediaStore;
    tenants: TenantRegistry;
    workflowsPath?: string;
    tracing?: Tracing;
  },
): Promise<void> {
  const { connection, client, pool, store, tenants, tracing } = parts;
  closers.push(() => connection.close());
  const bundle = await bundleWorkflowsInChildProcess({
    ...(parts.workflowsPath ? { modulePath: parts.workflowsPath } : {}),
    traced: tracing !== undefined,
  });
  closers.push(async () => bundle.dispose());
  const worker: Worker = await createAlbumWorker({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    activities: createActivities({ pool, config: withRegisteredBots(config, tenants), logger, store, temporal: client }),
    workflowBundle: { codePath: bundle.codePath },
    maxCachedWorkflows: config.temporal.maxCachedWorkflows,
    ...(tracing ? { tracing: await workerTracingOptions(tracing) } : {}),
  });
  const running = worker.run();
  await ensureRetentionSchedule(client, config.temporal.taskQueue, config.retention.intervalS);
  const sender = createDeliveryEngine({
    pool,
    keys: tenants.keys,
    config: delivery,
    guard: endpointGuard(delivery),
    materialize: withMediaLinks(mediaLinksFor(config, pool, () => tenants.keys)),
    logger,
  });
  await sender.start();
  closers.push(() => sender.stop());
  // A worker that stopped on its own leaves albumflow unable to work: it exits, as when an embedded server is lost.
  running.catch((err: unknown) => fail(err instanceof Error ? err : new Error(String(err))));
  closers.push(async () => {
    if (worker.getState() === 'RUNNING') worker.shutdown();
    await running;
  });
}

/** The HTTP server, listening: the webhooks, the API, the console and /metrics. Answers its address and the console's. */
async function startHttp(
  { config, logger, closers }: Startup,
  parts: {
    pool: Pool;
    client: Client;
    store: MediaStore;
    tenants: TenantRegistry | undefined;
    dispatcher: Dispatcher | undefined;
    devServer: DevServer | undefined;
    embedded: EmbeddedServer[];
    temporalMetrics: string | undefined;
    /** The admin token generated without API_TOKENS: the console's link then carries a sign-in code for it. */
    adminToken: string | undefined;
    traced: boolean;
  },
): Promise<{ http: string; console: string } | undefined> {
  const { pool, dispatcher, temporalMetrics, adminToken } = parts;
  let consoleLink = consolePath;
  const consoleSessions = new ConsoleSessions(pool);
  if (adminToken) consoleLink = `${signInPath}?code=${await consoleSessions.issueCode(adminToken)}`;
  // With TEMPORAL_UI_PORT=0 the console learns the UI's address from the dev server once it runs.
  const uiUrl = config.temporal.uiUrl ?? parts.devServer?.uiUrl;
  const app: App = await buildApp({
    config: { ...config, temporal: { ...config.temporal, uiUrl } },
    pool,
    temporal: parts.client,
    wakeDispatcher: () => dispatcher?.wake(),
    logger,
    embeddedServers: parts.embedded,
    ...(temporalMetrics ? { workerMetricsUrl: temporalMetrics } : {}),
    tenants: parts.tenants,
    consoleSessions,
    traced: parts.traced,
    store: parts.store,
  });
  closers.push(() => app.close());
  await app.listen({ port: config.port, host: config.host });
  const address = app.server.address();
  if (!address || typeof address !== 'object') return undefined;
  const http = `http://${displayHost(config.host)}:${address.port}`;
  return { http, console: `${http}${consoleLink}` };
}

function displayHost(host: string): string {
  return host === '0.0.0.0' || host === '::' ? 'localhost' : host;
}
