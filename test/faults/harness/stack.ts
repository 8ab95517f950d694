import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connectionConfig, createPool, type Pool } from '../../../src/db/pool.js';
import { freePort, startDevServer, type DevServer } from '../../../src/temporal/devserver.js';
import { appProcess, type AppProcess } from './processes.js';
import { startPrivateCluster, type PrivateCluster } from './postgres.js';
import { startMediaServer, startNotifyReceiver, type MediaServer, type NotifyReceiver } from './servers.js';

export const workspace = 'faults';
export const webhookSecret = 'faults-webhook-secret';
const notifySecret = 'faults-notify-secret';

export interface StackOptions {
  ingresses: number;
  workers: number;
  /** Extra environment for every albumflow process. */
  env?: Record<string, string>;
  media: { bytes: number; durationMs: () => number };
  notifyDelayMs: () => number;
}

/**
 * albumflow as it runs in production, on this machine: its own PostgreSQL cluster, a Temporal dev server
 * keeping its state in a file, ingress and worker child processes, a slow media server and a NOTIFY_URL
 * receiver. Everything can be stopped and started again on the same ports and state.
 */
export interface Stack {
  dir: string;
  postgres: PrivateCluster;
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

    const temporalPort = await freePort();
    const dbFile = path.join(dir, 'temporal.db');
    let devServer: DevServer | undefined;
    const startTemporal = async () => {
      devServer = await startDevServer({ port: temporalPort, uiPort: false, dbFile });
    };
    const stopTemporal = async () => {
      await devServer?.stop();
      devServer = undefined;
    };
    await startTemporal();
    cleanups.push(stopTemporal);

    const media = await startMediaServer(options.media);
    cleanups.push(() => media.close());
    const receiver = await startNotifyReceiver({ secret: notifySecret, delayMs: options.notifyDelayMs });
    cleanups.push(() => receiver.close());

    const env: Record<string, string> = {
      HOST: '127.0.0.1',
      DATABASE_URL: postgres.databaseUrl,
      TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}`,
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
    const ingressPorts = await Promise.all(Array.from({ length: options.ingresses }, () => freePort()));
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
      temporalAddress: env.TEMPORAL_ADDRESS!,
      media,
      receiver,
      ingresses,
      workers,
      ingressUrls: ingressPorts.map((port) => `http://127.0.0.1:${port}`),
      pool,
      stopTemporal,
      startTemporal,
      teardown,
    };
  } catch (err) {
    await teardown();
    throw err;
  }
}
