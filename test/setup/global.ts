import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { connectionConfig, connectionUrl, withDatabase } from '../../src/db/pool.js';
import { bundleWorkflows } from '../../src/temporal/worker.js';
import { connectAdmin, startPrivateCluster, type PrivateCluster } from '../harness/servers/postgres.js';
import { s3Server } from '../harness/servers/s3.js';
import { devServer, type TemporalServer } from '../harness/servers/temporal.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The run's migrated database, shared by the test files. */
    databaseUrl: string;
    /** A migrated database no one connects to, which `freshDatabase()` copies for a test of its own. */
    templateDatabaseUrl: string;
    temporalAddress: string;
    workflowBundlePath: string;
    /** The run's S3-compatible server (its buckets are the folders of `s3Root`); '' when it could not be had (`s3Unavailable` says why). */
    s3Endpoint: string;
    s3Unavailable: string;
    s3Root: string;
    s3Credentials: { accessKeyId: string; secretAccessKey: string };
  }
}

/**
 * Fresh PostgreSQL databases (on DATABASE_URL's server, else on an embedded PostgreSQL of the run's
 * own), one Temporal dev server (or TEMPORAL_ADDRESS) and one S3-compatible server per test run, and the
 * workflow code bundled once for every worker the tests create.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-test-run-'));
  const postgres: PrivateCluster | undefined = process.env.DATABASE_URL
    ? undefined
    : await startPrivateCluster({ settings: { fsync: 'off' }, log: console });
  const base = connectionConfig(process.env.DATABASE_URL ?? postgres?.databaseUrl);
  const prefix = `albumflow_test_${process.pid}_${Date.now()}`;
  const admin = await connectAdmin(base);
  await admin.createDatabase(prefix);
  await admin.createDatabase(`${prefix}_template`);

  let temporal: TemporalServer | undefined;
  if (!process.env.TEMPORAL_ADDRESS) {
    temporal = await devServer({ log: console });
    await temporal.start();
  }

  // Without it (no Go to build it, and none in the tool cache) the other tests still run; the S3 ones fail, saying why.
  const s3 = await s3Server({ root: path.join(scratch, 's3') }).then(
    async (server) => (await server.start(), server),
    (err: Error) => err,
  );
  if (s3 instanceof Error) console.error(`The S3-compatible server of the tests is not available: ${s3.message}`);

  const bundle = await bundleWorkflows();
  const workflowBundlePath = path.join(scratch, 'workflows.js');
  fs.writeFileSync(workflowBundlePath, bundle.code);

  project.provide('databaseUrl', connectionUrl(withDatabase(base, prefix)));
  project.provide('templateDatabaseUrl', connectionUrl(withDatabase(base, `${prefix}_template`)));
  project.provide('temporalAddress', process.env.TEMPORAL_ADDRESS ?? temporal!.address);
  project.provide('workflowBundlePath', workflowBundlePath);
  if (s3 instanceof Error) {
    project.provide('s3Endpoint', '');
    project.provide('s3Unavailable', s3.message);
    project.provide('s3Root', '');
    project.provide('s3Credentials', { accessKeyId: '', secretAccessKey: '' });
  } else {
    project.provide('s3Endpoint', s3.endpoint);
    project.provide('s3Unavailable', '');
    project.provide('s3Root', s3.root);
    project.provide('s3Credentials', { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey });
  }

  return async () => {
    await temporal?.stop();
    if (!(s3 instanceof Error)) await s3.stop();
    await admin.dropDatabases(prefix);
    await admin.end();
    await postgres?.remove();
    fs.rmSync(scratch, { recursive: true, force: true });
  };
}
