// The bench's child processes (app, ceiling, media server, load generator), what Linux tells about them
// (resident memory from /proc/<pid>/status, CPU time from /proc/<pid>/stat), and the problems they logged.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export interface ManagedProcess {
  name: string;
  pid: number;
  child: ChildProcess;
  /** The first capture group of the ready pattern (e.g. the listening URL). */
  readyMatch: string;
  /** The last lines the process wrote, for error messages. */
  tail(): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it exited. */
  stop(graceMs?: number): Promise<void>;
}

export interface SpawnOptions {
  name: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Written to stdout once the process serves; its first capture group becomes `readyMatch`. */
  ready: RegExp;
  readyTimeoutMs: number;
  /** Where stdout and stderr are copied. */
  logFile: string;
  ipc?: boolean;
}

/** Starts `node <args>` in its own process group (a Ctrl-C reaches only the bench, which stops it in order). */
export async function spawnNode(options: SpawnOptions): Promise<ManagedProcess> {
  fs.mkdirSync(path.dirname(options.logFile), { recursive: true });
  const log = fs.createWriteStream(options.logFile);
  const child = spawn(process.execPath, options.args, {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe', ...(options.ipc ? (['ipc'] as const) : [])],
    detached: true,
  });
  let tail = '';
  let stdout = '';
  const keep = (chunk: Buffer) => {
    log.write(chunk);
    tail = (tail + chunk.toString()).slice(-6000);
  };
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const closedLog = exited.then(() => new Promise<void>((resolve) => log.end(resolve)));

  const readyMatch = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${options.name} did not start within ${options.readyTimeoutMs} ms:\n${tail}`)),
      options.readyTimeoutMs,
    );
    child.stdout!.on('data', (chunk: Buffer) => {
      keep(chunk);
      stdout = (stdout + chunk.toString()).slice(-6000);
      const match = options.ready.exec(stdout);
      if (match) {
        clearTimeout(timer);
        resolve(match[1] ?? match[0]);
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${options.name} exited (${signal ?? code}) before it was ready:\n${tail}`));
    });
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  }).catch(async (err: unknown) => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await closedLog;
    throw err;
  });

  return {
    name: options.name,
    pid: child.pid!,
    child,
    readyMatch,
    tail: () => tail,
    async stop(graceMs = 20_000) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      }
      await closedLog;
    },
  };
}

export interface MemoryStatus {
  /** Resident set now, bytes. */
  rss: number;
  /** Peak resident set since the process started (VmHWM), bytes. */
  hwm: number;
}

export function readMemory(pid: number): MemoryStatus | null {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return null;
  }
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) * 1024;
  return { rss: kib('VmRSS'), hwm: kib('VmHWM') };
}

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ); 100 on every Linux build that matters. */
const ticksPerSecond = 100;

interface ProcStat {
  comm: string;
  ppid: number;
  cpuSeconds: number;
  /** CPU seconds of its children that exited and were waited for (cutime + cstime). */
  reapedChildrenCpuSeconds: number;
}

function readStat(pid: number): ProcStat | null {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  // The fields after "(comm) ", from field 3 (state) on: ppid is field 4, utime…cstime are fields 14–17.
  const fields = text.slice(close + 2).split(' ');
  const seconds = (field: number) => Number(fields[field - 3]) / ticksPerSecond;
  return {
    comm: text.slice(open + 1, close),
    ppid: Number(fields[1]),
    cpuSeconds: seconds(14) + seconds(15),
    reapedChildrenCpuSeconds: seconds(16) + seconds(17),
  };
}

export function cpuSeconds(pid: number): number | null {
  return readStat(pid)?.cpuSeconds ?? null;
}

function allPids(): number[] {
  return fs
    .readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number);
}

/** Processes whose parent is `parent` and whose command name is `comm` (the dev server the bench started). */
export function childPids(parent: number, comm: string): number[] {
  return allPids().filter((pid) => {
    const stat = readStat(pid);
    return stat !== null && stat.ppid === parent && stat.comm === comm;
  });
}

/**
 * CPU seconds PostgreSQL used since it started, on the whole machine (the bench's databases and
 * anyone else's): each postmaster, its live backends, and the backends that already exited (which
 * the postmaster reaped, so they count in its cutime/cstime).
 */
export function postgresCpuSeconds(): number {
  const stats = new Map<number, ProcStat>();
  for (const pid of allPids()) {
    const stat = readStat(pid);
    if (stat && (stat.comm === 'postgres' || stat.comm.startsWith('postgres:'))) stats.set(pid, stat);
  }
  let total = 0;
  for (const stat of stats.values()) {
    const postmaster = !stats.has(stat.ppid);
    total += stat.cpuSeconds + (postmaster ? stat.reapedChildrenCpuSeconds : 0);
  }
  return total;
}

/** The processes listening on a local TCP port (a Temporal server the bench did not start), from /proc. */
export function pidsListeningOn(port: number): number[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const lines = fs.existsSync(table) ? fs.readFileSync(table, 'utf8').split('\n').slice(1) : [];
    for (const line of lines) {
      const fields = line.trim().split(/\s+/);
      // local_address is <ip>:<port> in hex; state 0A is LISTEN; the inode is the tenth field.
      if (fields[1]?.endsWith(`:${hexPort}`) && fields[3] === '0A' && fields[9]) inodes.add(fields[9]);
    }
  }
  if (inodes.size === 0) return [];
  return allPids().filter((pid) => {
    try {
      return fs.readdirSync(`/proc/${pid}/fd`).some((fd) => {
        const target = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
        return target.startsWith('socket:[') && inodes.has(target.slice(8, -1));
      });
    } catch {
      return false;
    }
  });
}

/** Busy and total CPU time of the whole machine, seconds (from /proc/stat). */
export function machineCpu(): { busy: number; total: number } {
  const line = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
  const values = line.trim().split(/\s+/).slice(1).map(Number);
  const total = values.reduce((sum, value) => sum + value, 0);
  const idle = (values[3] ?? 0) + (values[4] ?? 0);
  return { busy: (total - idle) / ticksPerSecond, total: total / ticksPerSecond };
}

/** Samples VmRSS of the watched processes; keeps the peak per process for each named window. */
export class MemorySampler {
  private readonly watched = new Map<string, number>();
  private readonly peaks = new Map<string, Map<string, number>>();
  private timer: NodeJS.Timeout | undefined;
  private windows: string[] = ['run'];

  watch(name: string, pid: number): void {
    this.watched.set(name, pid);
  }

  start(intervalMs = 250): void {
    this.sample();
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Samples taken from now on also count for `window` (until `closeWindow`). */
  openWindow(window: string): void {
    this.windows.push(window);
    this.sample();
  }

  closeWindow(window: string): void {
    this.sample();
    this.windows = this.windows.filter((name) => name !== window);
  }

  /** Peak sampled VmRSS of `name` in `window`, bytes. */
  peak(window: string, name: string): number | null {
    return this.peaks.get(window)?.get(name) ?? null;
  }

  sample(): void {
    for (const [name, pid] of this.watched) {
      const memory = readMemory(pid);
      if (!memory) continue;
      for (const window of this.windows) {
        const peaks = this.peaks.get(window) ?? new Map<string, number>();
        peaks.set(name, Math.max(peaks.get(name) ?? 0, memory.rss));
        this.peaks.set(window, peaks);
      }
    }
  }
}

/** Counts warnings and errors (pino level ≥ 40) by message in a process log. */
export function countLogProblems(file: string, into: Record<string, number>): void {
  if (!fs.existsSync(file)) return;
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const entry = JSON.parse(line) as { level?: number; msg?: string };
      if ((entry.level ?? 0) >= 40) into[entry.msg ?? '?'] = (into[entry.msg ?? '?'] ?? 0) + 1;
    } catch {
      // not a log line
    }
  }
}
