import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { searchAttributes } from '../../workflows/definitions.js';
import { downloadWithSdk, locateTemporalCli } from './temporal-cli.js';
import { dynamicConfigFlags } from '../temporal/dynamic-config.js';
import { findProcess, runningServer, type UnrecordedServer } from './ownership.js';
import { isFree } from './ports.js';
import { silent, startEmbeddedServer, type EmbeddedServer, type ServerLog } from './server.js';

export interface DevServer extends EmbeddedServer {
  /** gRPC frontend, host:port. */
  address: string;
  uiUrl: string | undefined;
}

export interface DevServerOptions {
  /** File that keeps workflow histories across restarts; in memory when unset. */
  dbFile?: string;
  ip?: string;
  /** Frontend port; 0 or unset: a free one, kept across restarts. */
  port?: number;
  /** Web UI port (0: a free one), or false for a headless server. */
  uiPort?: number | false;
  namespace?: string;
  log?: ServerLog;
  /** Called when the server died under us and could not be restarted. */
  onFailed?: (err: Error) => void;
}

/** Where `npm start` keeps its embedded dev server's state in a data directory. */
export function devServerDbFile(dataDir: string): string {
  return path.join(dataDir, 'temporal.db');
}

const recordFileOf = (dbFile: string) => `${dbFile}.pid`;
const defaultIp = '127.0.0.1';

/**
 * The addresses of the embedded dev server that an albumflow runs on `dataDir` now (its ports may have
 * been picked at start), from the record it keeps there; undefined when none runs.
 */
export function runningDevServer(dataDir: string): { address: string; uiUrl: string | undefined } | undefined {
  const record = runningServer(recordFileOf(devServerDbFile(dataDir)));
  const [port, uiPort] = record?.ports ?? [];
  if (port === undefined) return undefined;
  return { address: `${defaultIp}:${port}`, uiUrl: uiPort === undefined ? undefined : `http://${defaultIp}:${uiPort}` };
}

/**
 * How the dev server keeps its state file. SQLite's default rollback journal syncs the disk two or three
 * times per transaction, and the server writes through one connection, so every workflow task waited on
 * them; the write-ahead log syncs once per commit (synchronous stays FULL: a commit the server answered
 * survives a power cut).
 */
const sqlitePragmas = ['journal_mode=wal', 'synchronous=full'];

const searchAttributeFlags = Object.values(searchAttributes).map((key) => {
  const type = { KEYWORD: 'Keyword', BOOL: 'Bool', INT: 'Int' }[key.type];
  return `${key.name}=${type}`;
});

/**
 * Starts `temporal server start-dev` with albumflow's search attributes registered, supervised as an
 * embedded server (src/embedded/server.ts); with a state file, one left running by an albumflow that died
 * is stopped first.
 */
export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  const log = options.log ?? silent;
  const ip = options.ip ?? defaultIp;
  const headless = options.uiPort === false;
  const say = (message: string) => log.info(message);
  const cli = await locateTemporalCli({ log: say });
  const command = cli.kind === 'binary' ? cli.path : await downloadWithSdk(say);
  if (options.dbFile) keepStatePrivate(options.dbFile);

  const requested = [options.port ?? 0, ...(headless ? [] : [options.uiPort || 0])];
  const [frontendPort, uiPortAsked] = requested;
  // After a server left running by a dead albumflow was stopped: it may be what holds the ports.
  const checkPorts = async () => {
    if (frontendPort && !(await isFree(ip, frontendPort))) {
      throw new Error(
        `the Temporal frontend port ${ip}:${frontendPort} is already in use. Is another Temporal server running? ` +
          `Stop it, set TEMPORAL_ADDRESS=${ip}:${frontendPort} to use it, or TEMPORAL_PORT=0 for any free port.`,
      );
    }
    if (uiPortAsked && !(await isFree(ip, uiPortAsked))) {
      throw new Error(
        `the Temporal UI port ${ip}:${uiPortAsked} is already in use: set TEMPORAL_UI_PORT to another port (0: any free one).`,
      );
    }
  };
  const server = await startEmbeddedServer({
    id: 'temporal',
    name: 'the embedded Temporal dev server',
    command,
    ports: requested,
    args: ([port, uiPort]) => [
      'server',
      'start-dev',
      '--ip',
      ip,
      '--port',
      String(port),
      '--log-level',
      'warn',
      ...dynamicConfigFlags(),
      ...(uiPort === undefined ? ['--headless'] : ['--ui-port', String(uiPort)]),
      ...(options.dbFile ? ['--db-filename', options.dbFile, ...sqlitePragmas.flatMap((pragma) => ['--sqlite-pragma', pragma])] : []),
      ...(options.namespace && options.namespace !== 'default' ? ['--namespace', options.namespace] : []),
      ...searchAttributeFlags.flatMap((flag) => ['--search-attribute', flag]),
    ],
    stopSignal: 'SIGTERM',
    waitUntilServing: ([port], _output, signal) => waitUntilServing(`${ip}:${port}`, signal),
    ...(options.dbFile ? { recordFile: recordFileOf(options.dbFile), unrecorded: () => runningDevServerOn(options.dbFile!) } : {}),
    beforeStart: checkPorts,
    log,
    ...(options.onFailed ? { onFailed: options.onFailed } : {}),
  });
  const [port, uiPort] = server.ports;
  return {
    ...server,
    address: `${ip}:${port}`,
    uiUrl: uiPort === undefined ? undefined : `http://${ip === '0.0.0.0' ? 'localhost' : ip}:${uiPort}`,
  };
}

/**
 * The state directory created readable by its owner only, and state files an older albumflow left
 * readable by others tightened (the server creates new ones so, see `privateFiles` in server.ts).
 */
function keepStatePrivate(dbFile: string): void {
  fs.mkdirSync(path.dirname(dbFile), { recursive: true, mode: 0o700 });
  for (const file of [dbFile, `${dbFile}-wal`, `${dbFile}-shm`]) {
    try {
      fs.chmodSync(file, 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
}

/** A dev server running on this state file that albumflow has no record of (its owner died before writing it). */
function runningDevServerOn(dbFile: string): UnrecordedServer | undefined {
  const pid = findProcess((args) => args.includes('start-dev') && args[args.indexOf('--db-filename') + 1] === dbFile);
  return pid === undefined ? undefined : { pid, source: `the process list (a dev server on ${dbFile})` };
}

async function waitUntilServing(address: string, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1_000 });
      try {
        await connection.workflowService.getSystemInfo({});
        return;
      } finally {
        await connection.close();
      }
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}
