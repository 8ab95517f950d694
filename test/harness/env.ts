import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { Client } from '@temporalio/client';
import type { NativeConnection, Worker } from '@temporalio/worker';
import { inject } from 'vitest';
import { createActivities } from '../../activities/index.js';
import { loadConfig, type Config } from '../../src/common/config.js';
import { connectionConfig, connectionUrl, createPool, databaseName, withDatabase, type Pool } from '../../src/db/pool.js';
import { createLogger, type Logger } from '../../src/common/log.js';
import { connectClient, connectWorker } from '../../src/temporal/connection.js';
import { createAlbumWorker } from '../../src/temporal/worker.js';
import { unique } from './random.js';
import { connectAdmin } from './servers/postgres.js';
import { appEnvironment } from './environment.js';

/**
 * A database of the test's own, copied from the run's migrated template: a dispatcher running on it
 * drains only what the test stored. Dropped with the others when the run ends.
 */
export async function freshDatabase(): Promise<string> {
  const template = connectionConfig(inject('templateDatabaseUrl'));
  const name = `${databaseName(template)}_${crypto.randomBytes(4).toString('hex')}`;
  const admin = await connectAdmin(template);
  try {
    await admin.createDatabase(name, { template: databaseName(template) });
  } finally {
    await admin.end();
  }
  return connectionUrl(withDatabase(template, name));
}

/**
 * Configuration pointing at the run's database and Temporal server, with short album timers and a
 * task queue of its own. Keys are the environment variables of the README's configuration table.
 */
export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({
    ...appEnvironment({
      databaseUrl: inject('databaseUrl'),
      temporalAddress: inject('temporalAddress'),
      taskQueue: unique('albums'),
      quietPeriodMs: 400,
      maxWaitMs: 4000,
      lateWindowMs: 3000,
      mediaDir: fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-media-')),
      logLevel: process.env.TEST_LOG_LEVEL ?? 'silent',
    }),
    ...env,
  });
}

/** The AWS SDK's variables that point it at the run's S3-compatible server. */
export function s3Environment(): Record<string, string> {
  const { accessKeyId, secretAccessKey } = inject('s3Credentials');
  return {
    AWS_ENDPOINT_URL_S3: inject('s3Endpoint'),
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: accessKeyId,
    AWS_SECRET_ACCESS_KEY: secretAccessKey,
  };
}

/** A bucket of the test's own on the run's S3 server, as MEDIA_STORE names it (`s3://<bucket>/<prefix>`). */
export function testBucket(prefix = 'media'): string {
  if (!inject('s3Endpoint'))
    throw new Error(`the run has no S3-compatible server: ${inject('s3Unavailable')} (npm run s3:install builds it)`);
  const bucket = `test-${crypto.randomBytes(6).toString('hex')}`;
  fs.mkdirSync(path.join(inject('s3Root'), bucket));
  return `s3://${bucket}${prefix ? `/${prefix}` : ''}`;
}

export function testLogger(config: Config): Logger {
  return createLogger({ level: config.logLevel, format: 'json', name: 'test' });
}

/** A logger whose JSON lines are kept in `lines` (to search them for secrets). */
export function capturedLogger(name: string, level = 'trace'): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return { logger: createLogger({ level, format: 'json', name, destination }), lines };
}

export function testPool(config: Config, max = 5): Pool {
  return createPool(connectionConfig(config.databaseUrl), { max, applicationName: 'albumflow-test' });
}

export async function testClient(config: Config): Promise<Client> {
  return connectClient({ address: config.temporal.address! }, config.temporal.namespace);
}

export interface TestWorker {
  worker: Worker;
  connection: NativeConnection;
  /** Shuts the worker down and waits for it to drain. */
  stop(): Promise<void>;
}

export type Activities = ReturnType<typeof createActivities>;

/**
 * A real worker on the config's task queue, running the run's pre-bundled workflow code; `activities`
 * may wrap the real activities (to hold one back).
 */
export async function startTestWorker(
  config: Config,
  pool: Pool,
  logger: Logger = testLogger(config),
  activities: (real: Activities) => Activities = (real) => real,
): Promise<TestWorker> {
  const connection = await connectWorker({ address: config.temporal.address! });
  const temporal = await testClient(config);
  const worker = await createAlbumWorker({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    activities: activities(createActivities({ pool, config, logger, temporal })),
    workflowBundle: { codePath: inject('workflowBundlePath') },
  });
  const running = worker.run();
  return {
    worker,
    connection,
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      await connection.close();
      await temporal.connection.close();
    },
  };
}
