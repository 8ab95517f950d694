import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { connectionConfig, connectionUrl, withDatabase } from '../../src/db/pool.js';
import { migrate } from '../../src/db/migrate.js';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../src/embedded/postgres.js';
import { startDevServer, type DevServer } from '../../src/embedded/temporal.js';
import { bundleWorkflows } from '../../src/temporal/worker.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The run's migrated database, shared by the test files. */
    databaseUrl: string;
    /** A migrated database no one connects to, which `freshDatabase()` copies for a test of its own. */
    templateDatabaseUrl: string;
    temporalAddress: string;
    workflowBundlePath: string;
  }
}

/**
 * Fresh PostgreSQL databases (on DATABASE_URL's server, else on an embedded PostgreSQL of the run's
 * own), one Temporal dev server (or TEMPORAL_ADDRESS) per test run, and the workflow code bundled once
 * for every worker the tests create.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-test-run-'));
  // As root, the embedded PostgreSQL runs as the postgres user, which must reach its directory.
  fs.chmodSync(scratch, 0o755);
  const postgres: EmbeddedPostgres | undefined = process.env.DATABASE_URL
    ? undefined
    : await startEmbeddedPostgres({ dataDir: path.join(scratch, 'postgres'), settings: { fsync: 'off' }, log: console });
  const base = connectionConfig(process.env.DATABASE_URL ?? postgres?.url);
  const prefix = `albumflow_test_${process.pid}_${Date.now()}`;
  const admin = new pg.Client(withDatabase(base, 'postgres'));
  await admin.connect();
  const migrated = async (database: string) => {
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(database)}`);
    const config = withDatabase(base, database);
    await migrate(config);
    return config;
  };
  const dbConfig = await migrated(prefix);
  const templateConfig = await migrated(`${prefix}_template`);

  let devServer: DevServer | undefined;
  const temporalAddress = process.env.TEMPORAL_ADDRESS ?? (devServer = await startDevServer({ uiPort: false, log: console })).address;

  const bundle = await bundleWorkflows();
  const workflowBundlePath = path.join(scratch, 'workflows.js');
  fs.writeFileSync(workflowBundlePath, bundle.code);

  project.provide('databaseUrl', connectionUrl(dbConfig));
  project.provide('templateDatabaseUrl', connectionUrl(templateConfig));
  project.provide('temporalAddress', temporalAddress);
  project.provide('workflowBundlePath', workflowBundlePath);

  return async () => {
    await devServer?.stop();
    const { rows } = await admin.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE starts_with(datname, $1)`, [prefix]);
    for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(datname)} WITH (FORCE)`);
    await admin.end();
    await postgres?.stop();
    fs.rmSync(scratch, { recursive: true, force: true });
  };
}
