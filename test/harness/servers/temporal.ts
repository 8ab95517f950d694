// The Temporal server under a stack, not started yet and restartable on the same address and state: the
// dev server (the one `npm start` embeds), its state in a file or in memory; or the real server, one
// process running every service, its state and visibility in a PostgreSQL of the stack's own.
import { freeClusterPorts, temporalCluster } from '../../../tools/cluster/cluster.js';
import { setUpSchemas, temporalDatabase } from '../../../tools/cluster/database.js';
import { locateClusterTools, type ClusterToolPaths } from '../../../tools/cluster/builds.js';
import { pickPort } from '../../../src/embedded/ports.js';
import type { ServerLog } from '../../../src/embedded/server.js';
import { startDevServer, type DevServer } from '../../../src/embedded/temporal.js';

export interface TemporalServer {
  /** What a report calls it ("Temporal dev server", "Temporal server"). */
  name: string;
  /** The frontend, host:port (TEMPORAL_ADDRESS). */
  address: string;
  /** The Web UI, when it serves one. */
  uiUrl: string | undefined;
  /** Prometheus endpoint of each server process (the real server's). */
  metricsUrls: Record<string, string>;
  /** Starts it (again: same address, same state) and resolves once it serves. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** The dev server without its UI, on a port picked now; `dbFile` keeps its state across restarts (else in memory). */
export async function devServer(options: { dbFile?: string; log?: ServerLog } = {}): Promise<TemporalServer> {
  const port = await pickPort();
  let server: DevServer | undefined;
  return {
    name: 'Temporal dev server',
    address: `127.0.0.1:${port}`,
    uiUrl: undefined,
    metricsUrls: {},
    async start() {
      server = await startDevServer({ port, uiPort: false, ...options });
    },
    async stop() {
      await server?.stop();
      server = undefined;
    },
  };
}

/**
 * The real server on free ports, its schemas set up in the PostgreSQL of `postgresUrl` (its databases named after
 * that URL's, created when missing): with `tools`, those binaries; else built or found in the tool cache.
 */
export async function realServer(options: {
  postgresUrl: string;
  logDir: string;
  ui?: boolean;
  tools?: ClusterToolPaths;
}): Promise<TemporalServer> {
  const tools = options.tools ?? (await locateClusterTools({ log: (message) => console.log(message) }));
  const database = temporalDatabase(options.postgresUrl);
  await setUpSchemas(tools.sqlTool, database);
  const cluster = temporalCluster({
    tools,
    database,
    ports: await freeClusterPorts(false),
    ui: options.ui ?? false,
    logDir: options.logDir,
    logLevel: 'warn',
  });
  return {
    name: 'Temporal server',
    address: cluster.address,
    uiUrl: cluster.uiUrl,
    metricsUrls: cluster.metricsUrls,
    start: () => cluster.start(),
    stop: () => cluster.stop(),
  };
}
