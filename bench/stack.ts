// Everything a run measures, started on this machine from the harness's building blocks
// (test/harness/): the run's databases, a Temporal dev server (or the given frontend), the worker, the
// ingress, the ceiling, the ingress alone, the media server and the load generator, each its own process;
// and on demand a second app (startVariant) and the real Temporal server (startRealTemporal).
// Each piece is pushed on the cleanups as it starts, so a failure or a Ctrl-C stops what was started, in
// reverse order.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type pg from 'pg';
import { defaultTelegramApiRoot } from '../src/common/config.js';
import { connectionConfig, connectionUrl, createPool, withDatabase, type Pool } from '../src/db/pool.js';
import { pickPort } from '../src/embedded/ports.js';
import { devServerDbFile } from '../src/embedded/temporal.js';
import type { Cleanups } from '../test/harness/cleanups.js';
import { appEnvironment, composeAllocatorEnvironment, composeNodeFlags, userEnvironment } from '../test/harness/environment.js';
import { appProcess, childPids, MemorySampler, NodeProcess, pidsListeningOn } from '../test/harness/processes.js';
import type { MediaFile } from '../test/harness/servers/catalogue.js';
import { connectAdmin, startPrivateCluster } from '../test/harness/servers/postgres.js';
import { startFakeLineApi } from '../test/harness/servers/fake-line-api.js';
import { devServer, realServer } from '../test/harness/servers/temporal.js';
import { isExecutable } from '../src/embedded/temporal-cli.js';
import { clusterToolPaths } from '../tools/cluster/builds.js';
import { temporalDatabase } from '../tools/cluster/database.js';
import type { BenchOptions, PhaseName } from './options.js';
import { recordPerf } from './perf.js';
import { describePerfSummary } from './perf-summary.js';
import type { ServedMedia } from './workload.js';

/**
 * A second app of the run (the cost baseline's, or the main one's with a few settings changed), on a
 * database, task queue and media folder of its own; its ingress and worker are watched as
 * `<name> ingress` and `<name> worker` while it runs.
 */
export interface VariantApp {
  name: string;
  pool: Pool;
  /** The ingress's base URL. */
  url: string;
  workerPid: number;
  /** Its MEDIA_DIR: the directory store's objects, or with MEDIA_STORE only the worker's partial downloads. */
  mediaDir: string;
  stop: () => Promise<void>;
}

export interface VariantOptions {
  /** Settings on top of the main app's environment. */
  env?: NodeJS.ProcessEnv;
  /** Other entry points of the ingress and the worker (the cost baseline's). */
  scripts?: { ingress: string; worker: string };
}

/** The real Temporal server of the run, its CPU watched as `watchedAs` while it runs. */
export interface RealTemporal {
  /** The frontend, host:port (TEMPORAL_ADDRESS). */
  address: string;
  watchedAs: string;
  stop: () => Promise<void>;
}

export interface Stack {
  /** The run's results folder (its logs, and the folders of what it started). */
  runDir: string;
  base: pg.ClientConfig;
  /** The app's database (the ingress and the worker). */
  pool: Pool;
  /** The app's database's name, which every other database of the run starts with. */
  databasePrefix: string;
  ingressAloneDatabase: string | null;
  temporal: Client;
  /** What a report calls the stack's Temporal server: the dev server of the run, or the one of TEMPORAL_ADDRESS. */
  temporalName: string;
  connection: Connection;
  taskQueue: string;
  workspace: string;
  secret: string;
  /** The bot of TELEGRAM_BOTS[workspace] the Telegram step posts to. */
  telegram: { bot: string; botId: string; secretToken: string };
  /** The channel of LINE_CHANNELS[workspace] the routes step posts to (its content API is a fake LINE API that keeps nothing). */
  line: { channel: string; channelSecret: string; destination: string };
  worker: NodeProcess;
  ingress: NodeProcess;
  ceiling: NodeProcess;
  load: NodeProcess;
  ingressAlone: NodeProcess | undefined;
  media: ServedMedia | undefined;
  /** Pids whose CPU and memory the run reads, by process name. */
  watched: Record<string, number>;
  sampler: MemorySampler;
  ingressMetricsUrl: string;
  /** An `["*"]` token of the app's API_TOKENS: the ingress's /metrics answers only such tokens. */
  metricsToken: string;
  workerMetricsUrl: string;
  /** Starts a second app: the cost baseline's (bench/baseline/), or the main one's with other settings. */
  startVariant: (name: string, variant?: VariantOptions) => Promise<VariantApp>;
  /** A migrated database of the run's own named after `slug`, dropped when the run ends. */
  database: (slug: string) => Promise<pg.ClientConfig>;
  /** Node's flags for a process of the run named `name`: with --profile, a CPU profile under the run's profiles/<name>. */
  profileArgs: (name: string) => string[];
  /**
   * Starts the real Temporal server (tools/cluster/: every service in one process, no UI), its state and
   * visibility on two databases of the run's PostgreSQL, dropped when the run ends; null when its binaries are
   * not in the tool cache (nothing is built).
   */
  startRealTemporal: () => Promise<RealTemporal | null>;
}

async function getJson<T>(url: string): Promise<T> {
  const response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  if (!response.ok) throw new Error(`GET ${url}: HTTP ${response.status}`);
  return (await response.json()) as T;
}

export async function startStack(options: BenchOptions, runTag: string, runDir: string, closers: Cleanups): Promise<Stack> {
  const { log } = options;
  const runs = (phase: PhaseName) => options.phases.includes(phase);
  let databaseUrl = options.databaseUrl;
  if (!databaseUrl) {
    // No PostgreSQL given: one of the run's own, as `npm start` runs one (its processes count as PostgreSQL's CPU).
    log('bench: starting an embedded PostgreSQL');
    const postgres = await startPrivateCluster({ dataDir: path.join(runDir, 'postgres'), settings: { max_connections: '300' } });
    closers.push('the embedded PostgreSQL', () => postgres.remove());
    databaseUrl = postgres.databaseUrl;
  }
  const base = connectionConfig(databaseUrl);
  const appDatabase = `albumflow_bench_${process.pid}_${Date.now()}`;
  const ceilingDatabase = `${appDatabase}_ceiling`;
  const ingressAloneDatabase = runs('ingest') ? `${appDatabase}_ingress_alone` : null;
  const admin = await connectAdmin(base);
  closers.push('the admin connection', () => admin.end());
  for (const database of [appDatabase, ceilingDatabase, ...(ingressAloneDatabase ? [ingressAloneDatabase] : [])]) {
    await admin.createDatabase(database);
    closers.push(`database ${database}`, () => admin.dropDatabase(database));
  }
  const appDb = withDatabase(base, appDatabase);
  const pool = createPool(appDb, { max: 3, applicationName: 'albumflow-bench' });
  closers.push('the bench pool', () => pool.end());

  let temporalAddress = options.temporalAddress;
  let startedDevServer = false;
  if (!temporalAddress) {
    log('bench: starting the Temporal dev server');
    // Its state in a file of the run, as `npm start` keeps it (in memory, SQLite never writes to disk).
    const devServerDir = path.join(runDir, 'temporal');
    const server = await devServer({ dbFile: devServerDbFile(devServerDir) });
    await server.start();
    closers.push('the Temporal dev server', async () => {
      await server.stop();
      await fs.promises.rm(devServerDir, { recursive: true, force: true });
    });
    temporalAddress = server.address;
    startedDevServer = true;
  }
  const connection = await Connection.connect({ address: temporalAddress });
  closers.push('the Temporal connection', () => connection.close());
  const temporal = new Client({ connection, namespace: 'default' });

  const workspace = `bench-${crypto.randomBytes(4).toString('hex')}`;
  const secret = crypto.randomBytes(24).toString('hex');
  const taskQueue = `bench-${runTag}`;
  const workerMetricsPort = await pickPort();
  const inherited = userEnvironment();
  const mediaDir = path.join(runDir, 'media');
  closers.push('the downloaded media', () => fs.promises.rm(mediaDir, { recursive: true, force: true }));
  const metricsToken = crypto.randomBytes(32).toString('base64url');
  const telegram = { bot: 'bench', botId: '7000000099', secretToken: crypto.randomBytes(24).toString('hex') };
  const telegramToken = `${telegram.botId}:${crypto.randomBytes(24).toString('base64url')}`;
  const line = {
    channel: 'bench',
    channelSecret: crypto.randomBytes(16).toString('hex'),
    destination: `U${crypto.randomBytes(16).toString('hex')}`,
  };
  // The LINE content API of the run: it keeps no content, so each image's download is one 404 (`expired`).
  const lineApi = await startFakeLineApi();
  closers.push('the fake LINE API', () => lineApi.close());
  /** The app's environment on one of the run's databases. */
  const albumEnv = (db: pg.ClientConfig, overrides: { taskQueue?: string; mediaDir?: string } = {}): NodeJS.ProcessEnv => ({
    ...inherited,
    ...appEnvironment({
      databaseUrl: connectionUrl(db),
      temporalAddress,
      taskQueue: overrides.taskQueue ?? taskQueue,
      workspaces: { [workspace]: [secret] },
      quietPeriodMs: options.quietPeriodMs,
      maxWaitMs: options.maxWaitMs,
      lateWindowMs: options.lateWindowMs,
      dataDir: path.join(runDir, 'data'),
      mediaDir: overrides.mediaDir ?? mediaDir,
      logLevel: 'warn',
    }),
    API_TOKENS: JSON.stringify({ [metricsToken]: ['*'] }),
    PORT: '0',
    // The cloud Bot API (unreachable here): the Telegram step's files are over its 20 MB limit, so none is fetched.
    TELEGRAM_BOTS: JSON.stringify({ [workspace]: { [telegram.bot]: { token: telegramToken, secretToken: telegram.secretToken } } }),
    TELEGRAM_API_ROOT: defaultTelegramApiRoot,
    LINE_CHANNELS: JSON.stringify({
      [workspace]: {
        [line.channel]: { channelSecret: line.channelSecret, channelAccessToken: crypto.randomBytes(32).toString('base64url') },
      },
    }),
    LINE_API_ROOT: lineApi.url,
    LINE_DATA_API_ROOT: lineApi.url,
  });
  const profileArgs = (name: string) => (options.profile ? ['--cpu-prof', `--cpu-prof-dir=${path.join(runDir, 'profiles', name)}`] : []);
  const logFile = (name: string) => path.join(runDir, `${name}.log`);
  const launch = async (started: NodeProcess) => {
    await started.start();
    closers.push(started.name, () => started.stop());
    return started;
  };
  const start = (name: string, script: string, env: NodeJS.ProcessEnv, ready: RegExp, nodeArgs: string[] = [], ipc = false) =>
    launch(new NodeProcess({ name, script, nodeArgs, env, ready, readyTimeoutMs: 180_000, logFile: logFile(name), ipc, detached: true }));
  // Each with the Node flags and allocator settings docker-compose gives it, as deployed.
  const startApp = (name: string, role: 'ingress' | 'worker', env: NodeJS.ProcessEnv, nodeArgs: string[] = [], script?: string) =>
    launch(
      appProcess({
        name,
        role,
        script,
        nodeArgs: [...composeNodeFlags(role), ...nodeArgs],
        env: { ...composeAllocatorEnvironment(role), ...env },
        readyTimeoutMs: 180_000,
        logFile: logFile(name),
        detached: true,
      }),
    );

  const withMedia = options.media && (runs('sustained') || runs('burst') || runs('media-store') || runs('knee'));
  log(`bench: starting the worker, the ingress, the ceiling${withMedia ? ', the media server' : ''} and the load generator`);
  const startups = await Promise.allSettled([
    startApp('worker', 'worker', { ...albumEnv(appDb), WORKER_METRICS_PORT: String(workerMetricsPort) }, profileArgs('worker')),
    startApp('ingress', 'ingress', albumEnv(appDb), profileArgs('ingress')),
    start(
      'ceiling',
      'bench/ceiling.ts',
      albumEnv(withDatabase(base, ceilingDatabase)),
      /ceiling listening on (\S+)/,
      profileArgs('ceiling'),
    ),
    start('load', 'bench/load.ts', { ...inherited }, /load generator ready/, [], true),
    ingressAloneDatabase
      ? start(
          'ingress alone',
          'bench/ingress-alone.ts',
          albumEnv(withDatabase(base, ingressAloneDatabase)),
          /listening on (http:\/\/\S+)/,
          profileArgs('ingress-alone'),
        )
      : Promise.resolve(undefined),
    withMedia
      ? start(
          'media',
          'bench/media/server.ts',
          {
            ...inherited,
            HOST: '127.0.0.1',
            PORT: '0',
            MEDIA_SEED: String(options.seed),
            MEDIA_FIRST_BYTE_MS: String(options.mediaFirstByteMs),
            MEDIA_MB_PER_S: String(options.mediaMegabytesPerSecond),
          },
          /media server listening on (\S+)/,
        )
      : Promise.resolve(undefined),
  ]);
  const failed = startups.find((startup) => startup.status === 'rejected');
  if (failed) throw failed.reason;
  const [worker, ingress, ceiling, load, ingressAlone, mediaProcess] = startups.map(
    (startup) => (startup as PromiseFulfilledResult<NodeProcess | undefined>).value,
  ) as [NodeProcess, NodeProcess, NodeProcess, NodeProcess, NodeProcess | undefined, NodeProcess | undefined];

  let media: ServedMedia | undefined;
  if (mediaProcess) {
    const baseUrl = mediaProcess.readyMatch;
    media = { baseUrl, files: await getJson<MediaFile[]>(`${baseUrl}/catalogue`) };
  }

  const watched: Record<string, number> = { ingress: ingress.pid!, worker: worker.pid!, ceiling: ceiling.pid!, load: load.pid! };
  if (ingressAlone) watched['ingress alone'] = ingressAlone.pid!;
  if (mediaProcess) watched.media = mediaProcess.pid!;
  // A server of the run's own is its child; a given one is whatever listens on the frontend's port here.
  const temporalPid = startedDevServer
    ? childPids(process.pid, 'temporal')[0]
    : pidsListeningOn(Number(temporalAddress.split(':').pop()))[0];
  if (temporalPid !== undefined) watched.temporal = temporalPid;
  else log(`bench: no process of this machine listens on ${temporalAddress}; the Temporal server's CPU is not measured`);
  if (options.profile && temporalPid !== undefined) {
    const dir = path.join(runDir, 'profiles', 'temporal');
    const recording = recordPerf(temporalPid, dir, log);
    if (recording) {
      closers.push("the Temporal server's profile", async () => {
        const summary = await recording.stop();
        if (summary)
          log(`bench: the Temporal server's profile (${summary.cpuSeconds} CPU-s sampled): ${describePerfSummary(summary)}; in ${dir}`);
      });
    }
  }
  const sampler = new MemorySampler();
  for (const [name, pid] of Object.entries(watched)) sampler.watch(name, pid);
  sampler.start();
  closers.push('the memory sampler', async () => sampler.stop());

  const database = async (slug: string): Promise<pg.ClientConfig> => {
    const name = `${appDatabase}_${slug}`;
    await admin.createDatabase(name);
    closers.push(`database ${name}`, () => admin.dropDatabase(name));
    return withDatabase(base, name);
  };

  const startRealTemporal = async (): Promise<RealTemporal | null> => {
    const tools = clusterToolPaths();
    if (!isExecutable(tools.server) || !isExecutable(tools.sqlTool)) return null;
    const postgresUrl = connectionUrl(withDatabase(base, `${appDatabase}_t`));
    for (const name of Object.values(temporalDatabase(postgresUrl).names)) {
      closers.push(`database ${name}`, () => admin.dropDatabase(name));
    }
    log('bench: starting the real Temporal server');
    const server = await realServer({ postgresUrl, logDir: path.join(runDir, 'temporal-server'), tools });
    await server.start();
    closers.push('the real Temporal server', () => server.stop());
    const watchedAs = 'temporal server';
    const pid = pidsListeningOn(Number(server.address.split(':').pop()))[0];
    if (pid !== undefined) watched[watchedAs] = pid;
    return {
      address: server.address,
      watchedAs,
      stop: async () => {
        delete watched[watchedAs];
        await server.stop();
      },
    };
  };

  const startVariant = async (name: string, variant: VariantOptions = {}): Promise<VariantApp> => {
    const slug = name.replace(/[^a-z0-9]+/gi, '_').toLowerCase();
    const db = await database(slug);
    const variantPool = createPool(db, { max: 3, applicationName: 'albumflow-bench' });
    closers.push(`the ${name} pool`, () => variantPool.end());
    const variantMedia = path.join(runDir, `${slug}-media`);
    closers.push(`the ${name} media`, () => fs.promises.rm(variantMedia, { recursive: true, force: true }));
    const env = { ...albumEnv(db, { taskQueue: `${taskQueue}-${slug}`, mediaDir: variantMedia }), ...variant.env };
    const metricsPort = await pickPort();
    const [variantWorker, variantIngress] = await Promise.all([
      startApp(
        `${name} worker`,
        'worker',
        { ...env, WORKER_METRICS_PORT: String(metricsPort) },
        profileArgs(`${slug}-worker`),
        variant.scripts?.worker,
      ),
      startApp(`${name} ingress`, 'ingress', env, profileArgs(`${slug}-ingress`), variant.scripts?.ingress),
    ]);
    watched[`${name} ingress`] = variantIngress.pid!;
    watched[`${name} worker`] = variantWorker.pid!;
    return {
      name,
      pool: variantPool,
      url: variantIngress.readyMatch,
      workerPid: variantWorker.pid!,
      mediaDir: variantMedia,
      stop: async () => {
        delete watched[`${name} ingress`];
        delete watched[`${name} worker`];
        await variantIngress.stop();
        await variantWorker.stop();
      },
    };
  };

  return {
    startVariant,
    database,
    profileArgs,
    startRealTemporal,
    runDir,
    base,
    pool,
    databasePrefix: appDatabase,
    ingressAloneDatabase,
    temporal,
    temporalName: startedDevServer ? 'the Temporal dev server' : `the Temporal server at ${temporalAddress}`,
    connection,
    taskQueue,
    workspace,
    secret,
    telegram,
    line,
    worker,
    ingress,
    ceiling,
    load,
    ingressAlone,
    media,
    watched,
    sampler,
    ingressMetricsUrl: `${ingress.readyMatch}/metrics`,
    metricsToken,
    workerMetricsUrl: `http://127.0.0.1:${workerMetricsPort}/metrics`,
  };
}
