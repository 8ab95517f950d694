import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/**
 * A process as recorded in a file: its pid, and on Linux its start time, so a pid the OS has since given
 * to another process is not mistaken for the one recorded.
 */
export interface ProcessIdentity {
  pid: number;
  startTime?: string;
}

/** The fields of /proc/<pid>/stat after the command's name (the state first), or undefined without /proc. */
function statOf(pid: number): string[] | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** Field 22 of /proc/<pid>/stat: when the process started, in clock ticks after boot. */
function startTimeOf(pid: number): string | undefined {
  return statOf(pid)?.[19];
}

export function identify(pid: number): ProcessIdentity {
  const startTime = startTimeOf(pid);
  return startTime === undefined ? { pid } : { pid, startTime };
}

/**
 * Whether the process runs. One that has exited and that its parent has not reaped yet (a zombie, state
 * Z; X while it is being reaped) still answers kill(pid, 0), but runs no more: an albumflow killed with
 * kill -9 is one until its parent waits for it, which the init process of a container may never do.
 */
export function isRunning(process_: ProcessIdentity): boolean {
  try {
    process.kill(process_.pid, 0);
  } catch (err) {
    // EPERM: it exists and belongs to another user.
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const stat = statOf(process_.pid);
  if (stat === undefined) return process_.startTime === undefined;
  if (stat[0] === 'Z' || stat[0] === 'X') return false;
  return process_.startTime === undefined || stat[19] === process_.startTime;
}

/**
 * The command line a process was started with (its arguments apart), or undefined when it is gone or
 * cannot be read: /proc on Linux, `ps` elsewhere.
 */
export function commandLineOf(pid: number): string[] | undefined {
  try {
    if (fs.existsSync('/proc/self/cmdline'))
      return fs
        .readFileSync(`/proc/${pid}/cmdline`, 'utf8')
        .split('\0')
        .filter((arg) => arg !== '');
    const line = execFileSync('ps', ['-p', String(pid), '-o', 'command='], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    return line ? line.split(/\s+/) : undefined;
  } catch {
    return undefined;
  }
}

/** The first process other than this one whose command line `matches`, from /proc (Linux only: elsewhere none). */
export function findProcess(matches: (args: string[]) => boolean): number | undefined {
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return undefined;
  }
  for (const entry of entries) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    const args = commandLineOf(pid);
    if (args && matches(args) && isRunning({ pid })) return pid;
  }
  return undefined;
}

function readText(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

function parseJson<T>(text: string | undefined): T | undefined {
  try {
    return text === undefined ? undefined : (JSON.parse(text) as T);
  } catch {
    return undefined;
  }
}

export class InstanceRunningError extends Error {
  override name = 'InstanceRunningError';
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(
      `albumflow (pid ${pid}) is already running on ${dataDir} with its embedded servers; ` +
        'stop it first, or give this one another DATA_DIR',
    );
  }
}

export interface DataDirClaim {
  release(): void;
}

const claimFileName = 'albumflow.pid';

/**
 * Makes this process the owner of the data directory's embedded servers, or throws
 * InstanceRunningError naming the live owner. A claim left by an owner that died is taken over.
 */
export function claimDataDir(dataDir: string): DataDirClaim {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = path.join(dataDir, claimFileName);
  // Written whole under another name, then linked: a claim is never seen half-written.
  const mine = `${file}.${process.pid}`;
  fs.writeFileSync(mine, JSON.stringify(identify(process.pid)), { mode: 0o600 });
  try {
    for (;;) {
      try {
        fs.linkSync(mine, file);
        return { release: () => fs.rmSync(file, { force: true }) };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const text = readText(file);
      if (text === undefined) continue;
      const owner = parseJson<ProcessIdentity>(text);
      if (owner && isRunning(owner)) throw new InstanceRunningError(dataDir, owner.pid);
      // Remove the dead owner's claim only if it is still the one read: a racing start may have replaced it.
      const moved = `${file}.${process.pid}.stale`;
      try {
        fs.renameSync(file, moved);
      } catch {
        continue;
      }
      if (readText(moved) !== text) fs.linkSync(moved, file);
      fs.rmSync(moved);
    }
  } finally {
    fs.rmSync(mine, { force: true });
  }
}

/** What a data directory keeps about one of its embedded servers while it runs. */
export interface ServerRecord extends ProcessIdentity {
  owner: ProcessIdentity;
  ports: number[];
}

export function writeServerRecord(file: string, pid: number, ports: readonly number[]): void {
  const record: ServerRecord = { ...identify(pid), owner: identify(process.pid), ports: [...ports] };
  fs.writeFileSync(file, JSON.stringify(record), { mode: 0o600 });
}

/** The server a record names, while it runs; undefined without a record or once it stopped. */
export function runningServer(file: string): ServerRecord | undefined {
  const record = parseJson<ServerRecord>(readText(file));
  return record && isRunning(record) ? record : undefined;
}

export function removeServerRecord(file: string): void {
  fs.rmSync(file, { force: true });
}

/** A running server that albumflow has no record of, found by a file of the server's own. */
export interface UnrecordedServer {
  pid: number;
  /** Where it was found, for people: e.g. "/…/postgres/postmaster.pid". */
  source: string;
}

/**
 * Stops the server a record names when it still runs and its albumflow is gone; throws
 * InstanceRunningError when that albumflow still runs. Returns the record (its ports can be used again).
 *
 * Without a record of a running server (its albumflow was killed between starting it and writing the
 * record), `unrecorded` may still find one by the server's own lock file: it is stopped unless the
 * data directory's claim (the directory of the record) names a live albumflow other than this process.
 */
export async function stopOrphan(
  file: string,
  name: string,
  signal: NodeJS.Signals,
  log: { warn(message: string): void },
  unrecorded?: () => UnrecordedServer | undefined,
): Promise<ServerRecord | undefined> {
  const dataDir = path.dirname(file);
  const record = parseJson<ServerRecord>(readText(file));
  if (record && isRunning(record)) {
    if (isRunning(record.owner)) throw new InstanceRunningError(dataDir, record.owner.pid);
    log.warn(`stopping ${name} (pid ${record.pid}) left running by albumflow pid ${record.owner.pid}, which is gone`);
    await stopProcess(record, signal);
  } else {
    const found = unrecorded?.();
    if (found) {
      const claim = parseJson<ProcessIdentity>(readText(path.join(dataDir, claimFileName)));
      const owner = claim && claim.pid !== process.pid ? claim : undefined;
      if (owner && isRunning(owner)) throw new InstanceRunningError(dataDir, owner.pid);
      log.warn(
        `stopping ${name} (pid ${found.pid}) that ${found.source} names: albumflow has no record of it, and ` +
          (owner ? `the albumflow that ran on ${dataDir} (pid ${owner.pid}) is gone` : `no other albumflow runs on ${dataDir}`),
      );
      await stopProcess(identify(found.pid), signal);
    }
  }
  removeServerRecord(file);
  return record;
}

/** The signal, then SIGKILL when it has not exited within a grace period. */
async function stopProcess(process_: ProcessIdentity, signal: NodeJS.Signals): Promise<void> {
  process.kill(process_.pid, signal);
  if (!(await exits(process_, 30_000))) {
    process.kill(process_.pid, 'SIGKILL');
    await exits(process_, 10_000);
  }
}

async function exits(process_: ProcessIdentity, timeoutMs: number): Promise<boolean> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline;) {
    if (!isRunning(process_)) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return !isRunning(process_);
}
