// `npm run temporal:cluster`: albumflow's production topology of Temporal on this machine — the real server
// (PostgreSQL persistence and visibility) and its Web UI, the versions docker-compose.yml runs.
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { claimDataDir } from '../../src/embedded/ownership.js';
import { onStopSignals } from '../../src/common/stop-signals.js';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../src/embedded/postgres.js';
import { connectClient, prepareNamespace } from '../../src/temporal/connection.js';
import { setUpSchemas, temporalDatabase } from './database.js';
import { defaultClusterPorts, temporalCluster, type TemporalCluster } from './cluster.js';
import { locateClusterTools } from './builds.js';
import { temporalServerVersion, temporalUiVersion } from './versions.js';

const usage = `npm run temporal:cluster [-- options]

Builds (first time) or finds the Temporal server ${temporalServerVersion}, temporal-sql-tool and the UI server
${temporalUiVersion} in the tool cache, sets up Temporal's databases on the PostgreSQL server of DATABASE_URL
(<database>_temporal and <database>_temporal_visibility) — without DATABASE_URL, on an embedded PostgreSQL
of its own under DATA_DIR/temporal-cluster, whose URL it writes for albumflow's processes —, runs the
server and its UI, and creates the namespace TEMPORAL_NAMESPACE (default "default") with albumflow's
search attributes. Ctrl-C stops it.

  --split              one process per service (frontend, history, matching, worker) instead of one
  --port N             frontend gRPC port (default 7233); the other services keep their default ports
  --ui-port N          Web UI port (default 8080)
  --no-ui              no Web UI
  --history-shards N   history shards of a new cluster (default 4; fixed once the databases exist)
  --install            build or find the binaries, print their paths, and exit
  --help`;

function fail(message: string): never {
  console.error(`temporal:cluster: ${message}`);
  process.exit(1);
}

function integer(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) fail(`--${name} must be a positive integer, not ${value}`);
  return n;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      split: { type: 'boolean', default: false },
      port: { type: 'string' },
      'ui-port': { type: 'string' },
      'no-ui': { type: 'boolean', default: false },
      'history-shards': { type: 'string' },
      install: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(usage);
    return;
  }
  const log = (message: string) => console.error(message);
  const tools = await locateClusterTools({ log });
  if (values.install) {
    for (const file of Object.values(tools)) console.log(file);
    return;
  }

  const clusterDir = path.resolve(process.env.DATA_DIR || '.data', 'temporal-cluster');
  const embedded = process.env.DATABASE_URL ? undefined : await embeddedPostgres(clusterDir, log);
  const databaseUrl = process.env.DATABASE_URL ?? embedded!.postgres.url;
  const database = temporalDatabase(databaseUrl);
  await setUpSchemas(tools.sqlTool, database, log);

  const ports = defaultClusterPorts(values.split);
  ports.frontend = integer(values.port, 'port', ports.frontend);
  ports.ui = integer(values['ui-port'], 'ui-port', ports.ui);
  const namespace = process.env.TEMPORAL_NAMESPACE || 'default';
  const logDir = path.join(clusterDir, 'logs');
  const startedAt = Date.now();
  let started = false;
  let stopping = false;
  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    console.error('Stopping the Temporal cluster…');
    await cluster.stop();
    await embedded?.stop();
    process.exit(code);
  };
  const cluster: TemporalCluster = temporalCluster({
    tools,
    database,
    ports,
    split: values.split,
    historyShards: integer(values['history-shards'], 'history-shards', 4),
    ui: !values['no-ui'],
    uiNamespace: namespace,
    logDir,
    onUnexpectedExit: (name, code, signal) => {
      // During the start, start() reports the exit itself.
      if (!started) return;
      console.error(
        `temporal:cluster: ${name} exited (${signal ?? `exit code ${code}`}); see ${path.join(logDir, `${name}.log`)}. Stopping.`,
      );
      void shutdown(1);
    },
  });
  // The servers run in process groups of their own: a Ctrl-C reaches only this process, which stops them.
  onStopSignals(
    () => void shutdown(0),
    () => process.exit(1),
  );
  try {
    await cluster.start();
    started = true;
    const client = await connectClient({ address: cluster.address }, namespace);
    await prepareNamespace(client, namespace).finally(() => client.connection.close());
  } catch (err) {
    await cluster.stop();
    await embedded?.stop();
    throw err;
  }

  const processes = Object.entries(cluster.pids());
  console.log(
    [
      `Temporal cluster is running (server ${temporalServerVersion}, ${values.split ? 'one process per service' : 'all services in one process'}; served after ${((Date.now() - startedAt) / 1000).toFixed(1)} s)`,
      `  frontend     ${cluster.address}   (albumflow: TEMPORAL_ADDRESS=${cluster.address})`,
      ...(cluster.uiUrl ? [`  Web UI       ${cluster.uiUrl}/namespaces/${encodeURIComponent(namespace)}/workflows`] : []),
      `  namespace    ${namespace} (search attributes registered)`,
      `  PostgreSQL   ${database.host}:${database.port}, databases ${database.names.store} and ${database.names.visibility}`,
      ...(embedded
        ? [
            `               embedded, state in ${path.join(clusterDir, 'postgres')}; albumflow's processes: DATABASE_URL="$(cat ${embedded.urlFile})"`,
          ]
        : []),
      ...Object.entries(cluster.metricsUrls).map(([name, url]) => `  metrics      ${url}   (${name})`),
      `  processes    ${processes.map(([name, pid]) => `${name} (pid ${pid})`).join(', ')}`,
      `  logs         ${logDir}`,
      'Press Ctrl-C to stop.',
    ].join('\n'),
  );
}

/**
 * A PostgreSQL of the cluster's own, for a machine without one: it owns its directory as `npm start` owns
 * its data directory, and its URL (which holds the password) goes to a file of mode 0600, never to the terminal.
 */
async function embeddedPostgres(
  dir: string,
  log: (message: string) => void,
): Promise<{ postgres: EmbeddedPostgres; urlFile: string; stop(): Promise<void> }> {
  const claim = claimDataDir(dir);
  try {
    const serverLog = { info: log, warn: log };
    const postgres = await startEmbeddedPostgres({
      dataDir: path.join(dir, 'postgres'),
      log: serverLog,
      onFailed: (err) => fail(`the embedded PostgreSQL died and could not be restarted: ${err.message}`),
    });
    const urlFile = path.join(dir, 'database-url');
    fs.writeFileSync(urlFile, `${postgres.url}\n`, { mode: 0o600 });
    return {
      postgres,
      urlFile,
      async stop() {
        await postgres.stop();
        claim.release();
      },
    };
  } catch (err) {
    claim.release();
    throw err;
  }
}

main().catch((err: unknown) => fail(err instanceof Error ? err.message : String(err)));
