import closeWithGrace from 'close-with-grace';
import { loadConfig, type Config } from '../common/config.js';
import { InstanceRunningError } from '../embedded/ownership.js';
import { createLogger, type Logger } from '../common/log.js';
import { onStopSignals } from '../common/stop-signals.js';
import { startTracing, type Tracing } from '../common/tracing.js';
import { startService, type Roles, type Service, type ServiceOptions } from './start.js';

/**
 * Runs albumflow with the given roles until SIGINT/SIGTERM, then shuts down gracefully:
 * HTTP stops accepting, the dispatcher and the worker drain, the embedded servers stop, exit 0. Exits 1
 * when an embedded server died and could not be restarted, or the worker stopped on its own.
 */
export async function run(
  roles: Roles,
  describe: (service: Service, config: Config) => string,
  options: ServiceOptions = {},
): Promise<void> {
  const fail = (message: string): never => {
    process.stderr.write(`\nalbumflow could not start: ${message}\n`);
    process.exit(1);
  };
  let config: Config;
  let tracing: Tracing | undefined;
  try {
    // First, so that everything after it is traced when the OTEL_* variables turn tracing on.
    tracing = await startTracing(roleNames(roles));
    config = loadConfig();
  } catch (err) {
    return fail((err as Error).message);
  }
  if (!(roles.http && roles.dispatcher && roles.worker) && !(config.temporal.address && config.databaseUrl)) {
    fail(
      'TEMPORAL_ADDRESS and DATABASE_URL are required to run the ingress or the worker alone; ' +
        '`npm start` runs both with an embedded PostgreSQL and Temporal dev server',
    );
  }
  const logger: Logger = createLogger({
    level: config.logLevel,
    format: config.logFormat ?? (process.stdout.isTTY ? 'pretty' : 'json'),
    traceIds: tracing !== undefined,
  });
  for (const [workspace, secrets] of config.workspaceSecrets) {
    if (secrets.length === 0) logger.warn(`workspace "${workspace}" has no signing secret: unsigned webhooks are accepted`);
  }
  let service: Service;
  try {
    service = await startService(config, roles, logger, { ...options, ...(tracing ? { tracing } : {}) });
  } catch (err) {
    // Another albumflow on this data directory is a refusal that explains itself: the one line below says it.
    if (!(err instanceof InstanceRunningError)) logger.fatal({ err }, 'albumflow could not start');
    return fail((err as Error).message);
  }
  process.stdout.write(describe(service, config));
  void service.failed.then(async (err) => {
    logger.fatal({ err }, 'albumflow cannot go on: exiting so that it can be started again');
    await service.close();
    process.exit(1);
  });
  // SIGINT and SIGTERM are handled by onStopSignals, not by close-with-grace (it keeps errors and the other
  // signals it stops on): close-with-grace exits 1 on any second signal, and npm's relay of a Ctrl-C is one,
  // before the embedded servers are stopped. The signal Node writes heap snapshots on must not stop albumflow.
  const snapshotSignal = heapSnapshotSignal();
  const skip: closeWithGrace.AllEvents[] = ['SIGINT', 'SIGTERM'];
  if (snapshotSignal) skip.push(snapshotSignal as closeWithGrace.AllEvents);
  const shutdown = closeWithGrace({ delay: 30_000, logger, skip }, async ({ err }) => {
    if (err) logger.error({ err }, 'shutting down after an error');
    await service.close();
  });
  onStopSignals(
    (signal) => {
      logger.info(`${signal}: shutting down`);
      void shutdown.close();
    },
    (signal) => {
      logger.error(`second ${signal}: exiting without finishing the shutdown`);
      process.exit(1);
    },
  );
}

/** The parts a process runs, as its spans' resource names them. */
function roleNames(roles: Roles): string[] {
  return [roles.http && 'ingress', roles.dispatcher && 'dispatcher', roles.worker && 'worker'].filter((role) => role !== false);
}

/** The signal named by Node's `--heapsnapshot-signal`, on the command line or in NODE_OPTIONS. */
function heapSnapshotSignal(): string | undefined {
  const flags = [...process.execArgv, process.env.NODE_OPTIONS ?? ''].join(' ');
  return /--heapsnapshot-signal(?:=|\s+)(SIG[A-Z0-9]+)/.exec(flags)?.[1];
}
