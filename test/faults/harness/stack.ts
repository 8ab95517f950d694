import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connectionConfig, createPool, type Pool } from '../../../src/db/pool.js';
import { freeClusterPorts, temporalCluster } from '../../../src/cluster/cluster.js';
import { setUpSchemas, temporalDatabase } from '../../../src/cluster/database.js';
import { locateClusterTools } from '../../../src/cluster/tools.js';
import { pickPort } from '../../../src/embedded/ports.js';
import { startDevServer, type DevServer } from '../../../src/embedded/temporal.js';
import { appProcess, type AppProcess } from './processes.js';
import { startPrivateCluster, type PrivateCluster } from './postgres.js';
import { startMediaServer, startNotifyReceiver, type MediaServer, type NotifyReceiver } from './servers.js';

export const workspace = 'faults';
export const webhookSecret = 'faults-webhook-secret';
const notifySecret = 'faults-notify-secret';

/**
 * The Temporal server under the stack: the dev server keeping its state in a file (`npm run test:faults`), or
 * the real server with all its state in the stack's PostgreSQL cluster (`npm run test:cluster`, which sets
 * FAULTS_TEMPORAL=cluster).
 */
export type TemporalKind = 'dev-server' | 'cluster';

interface StackTemporal {
  /** What the fault suite calls it. */
  name: string;
  address: string;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface StackOptions {
  temporal?: TemporalKind;
  ingresses: number;
  workers: number;
  /** Extra environment for every albumflow process. */
  env?: Record<string, string>;
  media: { bytes: number; durationMs: () => number };
  notifyDelayMs: () => number;
}

/**
 * albumflow as it runs in production, on this machine: its own PostgreSQL cluster, a Temporal server,
 * ingress and worker child processes, a slow media server and a NOTIFY_URL receiver. Everything can be
 * stopped and started again on the same ports and state.
 */
export interface Stack {
  dir: string;
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
  stopTemporal(): Promise<void>;
  startTemporal(): Promise<void>;
  teardown(): Promise<void>;
}

export async function startStack(options: StackOptions): Promise<Stack> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-faults-'));
  const cleanups: Array<() => Promise<unknown>> = [];
  const teardown = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch((err: unknown) => console.error('fault stack teardown:', err));
    cleanups.length = 0;
    if (process.env.FAULTS_KEEP_DIR === '1') console.log(`fault suite files kept in ${dir}`);
    else fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    const postgres = await startPrivateCluster();
    cleanups.push(() => postgres.remove());

    const kind = options.temporal ?? (process.env.FAULTS_TEMPORAL === 'cluster' ? 'cluster' : 'dev-server');
    const temporal = kind === 'cluster' ? await realServer(postgres, dir) : await devServer(dir);
    await temporal.start();
    cleanups.push(() => temporal.stop());

    const media = await startMediaServer(options.media);
    cleanups.push(() => media.close());
    const receiver = await startNotifyReceiver({ secret: notifySecret, delayMs: options.notifyDelayMs });
    cleanups.push(() => receiver.close());

    const env: Record<string, string> = {
      HOST: '127.0.0.1',
      DATABASE_URL: postgres.databaseUrl,
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_NAMESPACE: 'default',
      TEMPORAL_TASK_QUEUE: 'faults',
      WORKSPACE_SECRETS: JSON.stringify({ [workspace]: [webhookSecret] }),
      QUIET_PERIOD_MS: '300',
      MAX_WAIT_MS: '3000',
      LATE_WINDOW_MS: '4000',
      DATA_DIR: path.join(dir, 'data'),
      MEDIA_DIR: path.join(dir, 'media'),
      MEDIA_ALLOW_PRIVATE_NETWORKS: 'true',
      NOTIFY_URL: receiver.url,
      NOTIFY_SECRET: notifySecret,
      LOG_LEVEL: 'warn',
      ...options.env,
    };
    const logDir = path.join(dir, 'logs');
    // Ports picked outside the range the OS hands out, so a killed ingress gets its port back on restart.
    const ingressPorts = await Promise.all(Array.from({ length: options.ingresses }, () => pickPort()));
    const ingresses = ingressPorts.map((port, i) =>
      appProcess({ name: `ingress-${i + 1}`, role: 'ingress', env: { ...env, PORT: String(port) }, logDir }),
    );
    const workers = Array.from({ length: options.workers }, (_, i) => appProcess({ name: `worker-${i + 1}`, role: 'worker', env, logDir }));
    cleanups.push(() => Promise.all([...ingresses, ...workers].map((p) => p.stop())));
    // The first process creates the database and runs the migrations; the rest start together.
    await ingresses[0]!.start();
    await Promise.all([...ingresses.slice(1), ...workers].map((p) => p.start()));

    const pool = createPool(connectionConfig(postgres.databaseUrl), { max: 4, applicationName: 'albumflow-faults' });
    cleanups.push(() => pool.end());

    return {
      dir,
      postgres,
      temporalName: temporal.name,
      temporalAddress: temporal.address,
      media,
      receiver,
      ingresses,
      workers,
      ingressUrls: ingressPorts.map((port) => `http://127.0.0.1:${port}`),
      pool,
      stopTemporal: () => temporal.stop(),
      startTemporal: () => temporal.start(),
      teardown,
    };
  } catch (err) {
    await teardown();
    throw err;
  }
}

async function devServer(dir: string): Promise<StackTemporal> {
  const port = await pickPort();
  const dbFile = path.join(dir, 'temporal.db');
  let server: DevServer | undefined;
  return {
    name: 'Temporal dev server',
    address: `127.0.0.1:${port}`,
    async start() {
      server = await startDevServer({ port, uiPort: false, dbFile });
    },
    async stop() {
      await server?.stop();
      server = undefined;
    },
  };
}

/** The real server, one process running every service, with its state and visibility in the stack's PostgreSQL. */
async function realServer(postgres: PrivateCluster, dir: string): Promise<StackTemporal> {
  const tools = await locateClusterTools({ log: (message) => console.log(message) });
  const database = temporalDatabase(postgres.databaseUrl);
  await setUpSchemas(tools.sqlTool, database);
  const cluster = temporalCluster({
    tools,
    database,
    ports: await freeClusterPorts(false),
    ui: false,
    logDir: path.join(dir, 'logs'),
    logLevel: 'warn',
  });
  return { name: 'Temporal server', address: cluster.address, start: () => cluster.start(), stop: () => cluster.stop() };
}
