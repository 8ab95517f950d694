// `npm run temporal:cluster`: albumflow's production topology of Temporal on this machine — the real server
// (PostgreSQL persistence and visibility) and its Web UI, the versions docker-compose.yml runs.
import path from 'node:path';
import { parseArgs } from 'node:util';
import { connectClient, prepareNamespace } from '../connection.js';
import { setUpSchemas, temporalDatabase } from './database.js';
import { defaultClusterPorts, temporalCluster, type TemporalCluster } from './cluster.js';
import { locateClusterTools } from './tools.js';
import { temporalServerVersion, temporalUiVersion } from './versions.js';

const usage = `npm run temporal:cluster [-- options]

Builds (first time) or finds the Temporal server ${temporalServerVersion}, temporal-sql-tool and the UI server
${temporalUiVersion} in the tool cache, sets up Temporal's databases on the PostgreSQL server of DATABASE_URL
(<database>_temporal and <database>_temporal_visibility), runs the server and its UI, and creates the
namespace TEMPORAL_NAMESPACE (default "default") with albumflow's search attributes. Ctrl-C stops it.

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

  const database = temporalDatabase(process.env.DATABASE_URL ?? fail('DATABASE_URL is required: the Temporal server keeps its state on that PostgreSQL server'));
  await setUpSchemas(tools.sqlTool, database, log);

  const ports = defaultClusterPorts(values.split);
  ports.frontend = integer(values.port, 'port', ports.frontend);
  ports.ui = integer(values['ui-port'], 'ui-port', ports.ui);
  const namespace = process.env.TEMPORAL_NAMESPACE || 'default';
  const logDir = path.resolve(process.env.DATA_DIR || '.data', 'temporal-cluster', 'logs');
  const startedAt = Date.now();
  let started = false;
  let stopping = false;
  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    console.error('Stopping the Temporal cluster…');
    await cluster.stop();
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
      console.error(`temporal:cluster: ${name} exited (${signal ?? `exit code ${code}`}); see ${path.join(logDir, `${name}.log`)}. Stopping.`);
      void shutdown(1);
    },
  });
  // The servers run in process groups of their own: a Ctrl-C reaches only this process, which stops them.
  process.once('SIGINT', () => void shutdown(0));
  process.once('SIGTERM', () => void shutdown(0));
  await cluster.start();
  started = true;
  try {
    const client = await connectClient({ address: cluster.address }, namespace);
    await prepareNamespace(client, namespace).finally(() => client.connection.close());
  } catch (err) {
    await cluster.stop();
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
      ...Object.entries(cluster.metricsUrls).map(([name, url]) => `  metrics      ${url}   (${name})`),
      `  processes    ${processes.map(([name, pid]) => `${name} (pid ${pid})`).join(', ')}`,
      `  logs         ${logDir}`,
      'Press Ctrl-C to stop.',
    ].join('\n'),
  );
}

main().catch((err: unknown) => fail(err instanceof Error ? err.message : String(err)));
