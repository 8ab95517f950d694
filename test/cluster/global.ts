import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { connectClient, prepareNamespace } from '../../src/temporal/connection.js';
import { startPrivateCluster, warningsLog } from '../harness/servers/postgres.js';
import { realServer } from '../harness/servers/temporal.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A PostgreSQL cluster of the run's own, where the Temporal server keeps its state; tests may add databases. */
    clusterPostgresUrl: string;
    clusterUiUrl: string;
    /** Prometheus endpoint of the server process. */
    clusterMetricsUrl: string;
  }
}

/**
 * The real Temporal server for `npm run test:cluster`: built or found in the tool cache, its state on a
 * PostgreSQL cluster of the run's own, all services in one process, with its UI. It runs before
 * test/setup/global.ts, which then takes TEMPORAL_ADDRESS instead of starting a dev server, so the
 * integration tests of this run talk to the real server. The `default` namespace is prepared the way
 * albumflow prepares it at start.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const postgres = await startPrivateCluster({
    settings: { max_connections: '300', fsync: 'off', full_page_writes: 'off' },
    log: warningsLog,
  });
  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-cluster-logs-'));
  const cleanUp = async () => {
    await postgres.remove();
    fs.rmSync(logDir, { recursive: true, force: true });
  };
  try {
    const server = await realServer({ postgresUrl: postgres.databaseUrl, logDir, ui: true });
    await server.start();
    const client = await connectClient({ address: server.address }, 'default');
    await prepareNamespace(client, 'default');
    await client.connection.close();

    process.env.TEMPORAL_ADDRESS = server.address;
    project.provide('clusterPostgresUrl', postgres.databaseUrl);
    project.provide('clusterUiUrl', server.uiUrl!);
    project.provide('clusterMetricsUrl', Object.values(server.metricsUrls)[0]!);
    return async () => {
      await server.stop();
      await cleanUp();
    };
  } catch (err) {
    await cleanUp();
    throw err;
  }
}
