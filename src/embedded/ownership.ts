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

/** Field 22 of /proc/<pid>/stat: when the process started, in clock ticks after boot. */
function startTimeOf(pid: number): string | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

export function identify(pid: number): ProcessIdentity {
  const startTime = startTimeOf(pid);
  return startTime === undefined ? { pid } : { pid, startTime };
}

export function isRunning(process_: ProcessIdentity): boolean {
  try {
    process.kill(process_.pid, 0);
  } catch (err) {
    // EPERM: it exists and belongs to another user.
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  return process_.startTime === undefined || startTimeOf(process_.pid) === process_.startTime;
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
  fs.mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, claimFileName);
  // Written whole under another name, then linked: a claim is never seen half-written.
  const mine = `${file}.${process.pid}`;
  fs.writeFileSync(mine, JSON.stringify(identify(process.pid)));
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
  fs.writeFileSync(file, JSON.stringify(record));
}

/** The server a record names, while it runs; undefined without a record or once it stopped. */
export function runningServer(file: string): ServerRecord | undefined {
  const record = parseJson<ServerRecord>(readText(file));
  return record && isRunning(record) ? record : undefined;
}

export function removeServerRecord(file: string): void {
  fs.rmSync(file, { force: true });
}

/**
 * Stops the server a record names when it still runs and its albumflow is gone; throws
 * InstanceRunningError when that albumflow still runs. Returns the record (its ports can be used again).
 */
export async function stopOrphan(
  file: string,
  name: string,
  signal: NodeJS.Signals,
  log: { warn(message: string): void },
): Promise<ServerRecord | undefined> {
  const record = parseJson<ServerRecord>(readText(file));
  if (record && isRunning(record)) {
    if (isRunning(record.owner)) throw new InstanceRunningError(path.dirname(file), record.owner.pid);
    log.warn(`stopping ${name} (pid ${record.pid}) left running by albumflow pid ${record.owner.pid}, which is gone`);
    process.kill(record.pid, signal);
    if (!(await exits(record, 30_000))) {
      process.kill(record.pid, 'SIGKILL');
      await exits(record, 10_000);
    }
  }
  removeServerRecord(file);
  return record;
}

async function exits(process_: ProcessIdentity, timeoutMs: number): Promise<boolean> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; ) {
    if (!isRunning(process_)) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return !isRunning(process_);
}
