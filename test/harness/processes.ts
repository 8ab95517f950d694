// The processes the fault suite and the bench run: albumflow's ingress and worker (`node --import tsx
// src/<role>.ts`) and the bench's own servers, each started until it prints its readiness line, logged
// to a file, stopped (SIGTERM, then SIGKILL), killed with kill -9 and started again under the same name
// and environment; and what Linux tells about processes (resident memory from /proc/<pid>/status, CPU
// time from /proc/<pid>/stat, listening sockets), a memory sampler, and the problems a process logged.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../src/common/paths.js';
import { ingressReadyPrefix, workerReadyPrefix } from '../../src/process/ready-lines.js';

export interface ProcessOptions {
  name: string;
  /** The script node runs with tsx, relative to the project. */
  script: string;
  /** Node's own flags (--cpu-prof, …), before the script. */
  nodeArgs?: string[];
  /** The whole environment of the process. */
  env: NodeJS.ProcessEnv;
  /** Written to stdout once the process serves; its first capture group becomes `readyMatch`. */
  ready: RegExp;
  readyTimeoutMs?: number;
  /** Where stdout and stderr are appended, a line marking each start. */
  logFile: string;
  /** How long a stop waits after SIGTERM before SIGKILL. */
  stopGraceMs?: number;
  /** An IPC channel (`child().send`). */
  ipc?: boolean;
  /** In a process group of its own, so that a Ctrl-C reaches only the parent, which stops it in order. */
  detached?: boolean;
}

/** A node process, restartable under the same name, environment and log. */
export class NodeProcess {
  /** Times the process exited without being asked to. */
  unexpectedExits = 0;
  /** The first capture group of the ready pattern (e.g. the listening URL) of the latest start. */
  readyMatch = '';
  private running: ChildProcess | undefined;
  private closed: Promise<void> = Promise.resolve();
  private expectingExit = false;
  private output = '';

  constructor(readonly options: ProcessOptions) {}

  get name(): string {
    return this.options.name;
  }

  /** The running process's pid. */
  get pid(): number | undefined {
    return this.running?.pid;
  }

  /** The running process (for its IPC channel). */
  child(): ChildProcess {
    if (!this.running) throw new Error(`${this.name} is not running`);
    return this.running;
  }

  /** The last lines the process wrote, for error messages. */
  tail(): string {
    return this.output;
  }

  /** Starts the process and resolves once it printed its readiness line (else kills it and rejects). */
  async start(): Promise<void> {
    const { options } = this;
    if (this.running) throw new Error(`${this.name} is already running`);
    fs.mkdirSync(path.dirname(options.logFile), { recursive: true });
    const log = fs.createWriteStream(options.logFile, { flags: 'a' });
    log.write(`=== start ${new Date().toISOString()}\n`);
    const child = spawn(process.execPath, [...(options.nodeArgs ?? []), '--import', 'tsx', options.script], {
      cwd: projectRoot,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe', ...(options.ipc ? (['ipc'] as const) : [])],
      detached: options.detached ?? false,
    });
    this.running = child;
    this.expectingExit = false;
    this.output = '';
    const keep = (chunk: Buffer) => {
      log.write(chunk);
      this.output = (this.output + chunk.toString()).slice(-6000);
    };
    child.stderr!.on('data', keep);
    let stdout = '';
    let ready: ((match: string) => void) | undefined;
    child.stdout!.on('data', (chunk: Buffer) => {
      keep(chunk);
      if (!ready) return;
      stdout = (stdout + chunk.toString()).slice(-6000);
      const match = options.ready.exec(stdout);
      if (match) ready(match[1] ?? match[0]);
    });
    // 'close': the process exited and its output was read to the end.
    this.closed = new Promise<void>((resolve) =>
      child.once('close', () => {
        if (!this.expectingExit) this.unexpectedExits += 1;
        if (this.running === child) this.running = undefined;
        log.end(() => resolve());
      }),
    );
    const timeoutMs = options.readyTimeoutMs ?? 180_000;
    try {
      this.readyMatch = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${this.name} did not start within ${timeoutMs} ms:\n${this.output}`)), timeoutMs);
        ready = (match) => {
          clearTimeout(timer);
          ready = undefined;
          resolve(match);
        };
        child.once('exit', (code, signal) => {
          clearTimeout(timer);
          reject(new Error(`${this.name} exited (${signal ?? code}) before it was ready:\n${this.output}`));
        });
        child.once('error', (err) => {
          clearTimeout(timer);
          reject(err);
        });
      });
    } catch (err) {
      this.expectingExit = true;
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await this.closed;
      throw err;
    }
  }

  /** SIGTERM (a graceful shutdown), then SIGKILL after `graceMs`; resolves once it exited. */
  async stop(graceMs = this.options.stopGraceMs ?? 20_000): Promise<void> {
    const child = this.running;
    if (child && child.exitCode === null && child.signalCode === null) {
      this.expectingExit = true;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await this.closed;
      clearTimeout(timer);
    }
    await this.closed;
  }

  /** kill -9, then waits for the exit. */
  async kill9(): Promise<void> {
    const child = this.running;
    if (!child) return;
    this.expectingExit = true;
    child.kill('SIGKILL');
    await this.closed;
  }

  /** Current and peak resident memory of the running process. */
  memory(): MemoryStatus | null {
    return this.pid === undefined ? null : readMemory(this.pid);
  }
}

/** Starts a process (see `NodeProcess.start`). */
export async function spawnNode(options: ProcessOptions): Promise<NodeProcess> {
  const started = new NodeProcess(options);
  await started.start();
  return started;
}

export type Role = 'ingress' | 'worker';

/** Each role's entry point and readiness line; the ingress's captures its HTTP address. */
const roles: Record<Role, { script: string; ready: RegExp }> = {
  ingress: { script: 'src/ingress.ts', ready: new RegExp(`${ingressReadyPrefix} (http://\\S+?),`) },
  worker: { script: 'src/worker.ts', ready: new RegExp(workerReadyPrefix) },
};

/**
 * An albumflow ingress or worker (not started yet); `script` runs another entry point of the role that
 * prints the role's readiness line (the bench's cost baseline).
 */
export function appProcess(
  options: Omit<ProcessOptions, 'script' | 'ready'> & { role: Role; script?: string | undefined },
): NodeProcess & { role: Role } {
  const { role, script, ...rest } = options;
  return Object.assign(new NodeProcess({ ...rest, ...roles[role], ...(script ? { script } : {}) }), { role });
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

/**
 * Samples the resident memory of the watched processes (by pid, or by a process that may be restarted
 * under another one); keeps the peak per process for each named window, of VmRSS and of VmHWM.
 */
export class MemorySampler {
  private readonly watched = new Map<string, () => number | undefined>();
  private readonly peaks = new Map<string, Map<string, MemoryStatus>>();
  private timer: NodeJS.Timeout | undefined;
  private windows: string[] = ['run'];

  watch(name: string, pid: number | (() => number | undefined)): void {
    this.watched.set(name, typeof pid === 'number' ? () => pid : pid);
  }

  start(intervalMs = 250): void {
    this.sample();
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
  }

  /** Stops sampling, after a last sample. */
  stop(): void {
    clearInterval(this.timer);
    this.sample();
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

  /** Peak sampled VmRSS (or VmHWM) of `name` in `window`, bytes. */
  peak(window: string, name: string, field: keyof MemoryStatus = 'rss'): number | null {
    return this.peaks.get(window)?.get(name)?.[field] ?? null;
  }

  sample(): void {
    for (const [name, pidOf] of this.watched) {
      const pid = pidOf();
      const memory = pid === undefined ? null : readMemory(pid);
      if (!memory) continue;
      for (const window of this.windows) {
        const peaks = this.peaks.get(window) ?? new Map<string, MemoryStatus>();
        const peak = peaks.get(name);
        peaks.set(name, { rss: Math.max(peak?.rss ?? 0, memory.rss), hwm: Math.max(peak?.hwm ?? 0, memory.hwm) });
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
