import fs from 'node:fs';
import { spawn, type ChildProcess } from 'node:child_process';
import { pickPort, saysAddressInUse } from './ports.js';
import { removeServerRecord, stopOrphan, writeServerRecord, type UnrecordedServer } from './ownership.js';

/**
 * `running`; `restarting` after it died under albumflow; `failed` when it could not be restarted and
 * albumflow is exiting; `stopped` after albumflow's shutdown.
 */
export type EmbeddedState = 'running' | 'restarting' | 'failed' | 'stopped';

export interface EmbeddedStatus {
  state: EmbeddedState;
  pid: number | undefined;
  /** How many times it was restarted after dying under albumflow. */
  restarts: number;
}

/** Where an embedded server's news goes: albumflow's logger, or the console. */
export interface ServerLog {
  info(message: string): void;
  warn(message: string): void;
}

/** Says nothing: for callers that want no news. */
export const silent: ServerLog = { info: () => undefined, warn: () => undefined };

export interface EmbeddedServerSpec<Ports extends readonly number[] = readonly number[]> {
  /** Its key in `/readyz`: `postgres`, `temporal`. */
  id: string;
  /** The server in messages, e.g. "the embedded PostgreSQL". */
  name: string;
  command: string;
  /** The command's arguments for the ports it is given (in the order of `ports`). */
  args(ports: Ports): string[];
  /** The ports it listens on; 0: a port picked here, kept across restarts. */
  ports: Ports;
  cwd?: string;
  /** The OS user to run it as. */
  user?: { uid: number; gid: number };
  /** The signal that makes it shut down cleanly. */
  stopSignal: NodeJS.Signals;
  /** Resolves once the server serves on `ports`; `output` is what it has written to stderr so far. */
  waitUntilServing(ports: Ports, output: () => string, signal: AbortSignal): Promise<void>;
  /** Where the running server is recorded so that one left behind by a dead albumflow is recognised; unset: no state kept. */
  recordFile?: string;
  /**
   * Where the ports picked for it are kept across starts (its state is kept, so are its addresses: a URL
   * printed once goes on working); unset: picked afresh at each start.
   */
  portsFile?: string;
  /** A running server of the same state that the record does not name, found by a file of the server's own (PostgreSQL's postmaster.pid). */
  unrecorded?: () => UnrecordedServer | undefined;
  /** Runs once before the first start, after a server left behind by a dead albumflow was stopped: e.g. a check that the ports asked for are free. */
  beforeStart?: () => Promise<void>;
  log: ServerLog;
  /** Called once when the server died and could not be restarted: albumflow cannot go on. */
  onFailed?(err: Error): void;
}

export interface EmbeddedServer<Ports extends readonly number[] = readonly number[]> {
  id: string;
  name: string;
  /** The ports it listens on (the same across restarts). */
  ports: Ports;
  status(): EmbeddedStatus;
  /** Stops it cleanly (the signal, then SIGKILL after a grace period); never restarts it afterwards. */
  stop(): Promise<void>;
}

class PortInUseError extends Error {}

/** The ports a ports file keeps; none when it is missing or unreadable (then they are picked afresh). */
function keptPorts(file: string): number[] {
  try {
    const { ports } = JSON.parse(fs.readFileSync(file, 'utf8')) as { ports?: unknown };
    return Array.isArray(ports) && ports.every((port) => Number.isInteger(port) && port > 0 && port < 65_536) ? (ports as number[]) : [];
  } catch {
    return [];
  }
}

interface Running {
  child: ChildProcess;
  exited: Promise<string>;
  /** Stops the server should albumflow die without stopping it (see `watch`). */
  watchdog: ChildProcess | undefined;
}

const startTimeoutMs = 60_000;
/** Starts that found a port taken (one picked, or one the server picks itself) before giving up. */
const maxPortAttempts = 5;
const stopGraceMs = 30_000;
/** How long the watchdog of a server whose albumflow died waits after the stop signal before SIGKILL. */
const watchdogGraceTenths = 100;
/** Unexpected exits and failed restarts in a row before albumflow gives up. */
const maxRestartAttempts = 6;
/** A server that has run this long after a restart counts as healthy again. */
const healthyAfterMs = 60_000;

/**
 * Starts a server process in its own process group (a Ctrl-C in the terminal reaches only albumflow,
 * which stops it after the worker and the HTTP server), and supervises it: when it dies while albumflow
 * runs, it is restarted with the same ports and state, and `onFailed` is called when that fails.
 */
export async function startEmbeddedServer<Ports extends readonly number[]>(
  spec: EmbeddedServerSpec<Ports>,
): Promise<EmbeddedServer<Ports>> {
  // The ports of a server left behind are tried first, so that its addresses stay the same.
  const previous = spec.recordFile ? await stopOrphan(spec.recordFile, spec.name, spec.stopSignal, spec.log, spec.unrecorded) : undefined;
  const preferred = previous?.ports ?? (spec.portsFile ? keptPorts(spec.portsFile) : []);
  await spec.beforeStart?.();

  let ports = spec.ports;
  let running: Running | undefined;
  for (let attempt = 1; !running; attempt += 1) {
    // Element by element, so the tuple keeps its length.
    ports = (await Promise.all(
      spec.ports.map(async (port, i) => port || (attempt === 1 && preferred[i]) || pickPort()),
    )) as unknown as Ports;
    try {
      running = await launch(spec, ports);
    } catch (err) {
      if (!(err instanceof PortInUseError) || attempt === maxPortAttempts) throw err;
    }
  }
  if (spec.portsFile) fs.writeFileSync(spec.portsFile, `${JSON.stringify({ ports })}\n`, { mode: 0o600 });

  let state: EmbeddedState = 'running';
  let restarts = 0;
  let attempts = 0;
  let healthyTimer: NodeJS.Timeout | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let restarting: Promise<void> | undefined;
  /** Why the latest restart failed, for the message when albumflow gives up. */
  let lastFailure: Error | undefined;

  const supervise = (current: Running) => {
    clearTimeout(healthyTimer);
    healthyTimer = setTimeout(() => (attempts = 0), healthyAfterMs);
    healthyTimer.unref();
    void current.exited.then((how) => {
      if (state !== 'running' || running !== current) return;
      spec.log.warn(`${spec.name} (pid ${current.child.pid}) ${how} while albumflow runs; restarting it on the same state`);
      state = 'restarting';
      scheduleRestart();
    });
  };

  const scheduleRestart = () => {
    attempts += 1;
    if (attempts > maxRestartAttempts) {
      state = 'failed';
      const last = lastFailure ? `; the last: ${lastFailure.message}` : '';
      spec.onFailed?.(new Error(`${spec.name} could not be restarted (${maxRestartAttempts} attempts${last})`));
      return;
    }
    retryTimer = setTimeout(
      () => {
        restarting = launch(spec, ports).then(
          (next) => {
            restarting = undefined;
            running = next;
            if (state !== 'restarting') return; // stopped meanwhile: stop() stops it
            restarts += 1;
            state = 'running';
            spec.log.info(`${spec.name} is back (pid ${next.child.pid})`);
            supervise(next);
          },
          (err: unknown) => {
            restarting = undefined;
            if (state !== 'restarting') return;
            lastFailure = err as Error;
            spec.log.warn(`${spec.name} did not restart: ${lastFailure.message}`);
            scheduleRestart();
          },
        );
      },
      Math.min(8_000, 250 * 2 ** (attempts - 1)),
    );
  };

  supervise(running);
  return {
    id: spec.id,
    name: spec.name,
    ports,
    status: () => ({ state, pid: state === 'running' ? running?.child.pid : undefined, restarts }),
    async stop() {
      if (state !== 'failed') state = 'stopped';
      clearTimeout(retryTimer);
      clearTimeout(healthyTimer);
      await restarting;
      if (running) await stopProcess(running, spec.stopSignal);
      if (spec.recordFile) removeServerRecord(spec.recordFile);
    },
  };
}

async function launch<Ports extends readonly number[]>(spec: EmbeddedServerSpec<Ports>, ports: Ports): Promise<Running> {
  const child = privateFiles(() =>
    spawn(spec.command, spec.args(ports), {
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: true,
      ...(spec.cwd ? { cwd: spec.cwd } : {}),
      ...(spec.user ?? {}),
    }),
  );
  let output = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-8_000);
  });
  const exited = new Promise<string>((resolve) => {
    child.once('error', (err) => resolve(`could not be started (${spawnFailure(err, spec.cwd)})`));
    child.once('exit', (code, signal) => resolve(signal ? `was killed (${signal})` : `exited with code ${code}`));
  });
  const watchdog = watch(child, spec.stopSignal);
  void exited.then(() => watchdog?.kill('SIGKILL'));
  const current: Running = { child, exited, watchdog };
  if (spec.recordFile && child.pid) writeServerRecord(spec.recordFile, child.pid, ports);

  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      spec.waitUntilServing(ports, () => output, abort.signal),
      exited.then((how) => {
        const message = `${spec.name} ${how} before it served:\n${output.trim()}`;
        throw saysAddressInUse(output) ? new PortInUseError(message) : new Error(message);
      }),
      new Promise((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`${spec.name} did not serve within ${startTimeoutMs / 1000} s:\n${output.trim()}`)),
          startTimeoutMs,
        );
      }),
    ]);
    return current;
  } catch (err) {
    await stopProcess(current, spec.stopSignal);
    throw err;
  } finally {
    abort.abort();
    clearTimeout(timer);
  }
}

/**
 * Runs `start` (a spawn) with the umask 077, which the child inherits: the files a server creates (the
 * dev server's state file, whose write-ahead log takes its mode) are readable by their owner only.
 * spawn forks synchronously, so nothing else of albumflow's runs meanwhile.
 */
function privateFiles<T>(start: () => T): T {
  const previous = process.umask(0o077);
  try {
    return start();
  } finally {
    process.umask(previous);
  }
}

/** Why a spawn failed, for people: Node reports a missing working directory as the command's own ENOENT. */
function spawnFailure(err: NodeJS.ErrnoException, cwd: string | undefined): string {
  if (err.code === 'ENOENT' && cwd !== undefined && !fs.existsSync(cwd)) return `its directory ${cwd} does not exist`;
  return err.message;
}

/**
 * A server runs in a process group of its own, so nothing ends it when albumflow dies by SIGKILL. Its
 * watchdog, a shell in a group of its own too, waits on a pipe from albumflow that no process but
 * albumflow holds open (Node opens its pipes close-on-exec): when albumflow dies, the kernel closes it,
 * the shell reads end-of-file and stops the server (the signal, then SIGKILL after a grace period). A
 * clean stop ends the watchdog first.
 */
function watch(child: ChildProcess, signal: NodeJS.Signals): ChildProcess | undefined {
  const pid = child.pid;
  if (!pid || process.platform === 'win32') return undefined;
  const script =
    `read _; kill -s ${signal.replace(/^SIG/, '')} ${pid} 2>/dev/null || exit 0; i=0; ` +
    `while kill -0 ${pid} 2>/dev/null && [ $i -lt ${watchdogGraceTenths} ]; do sleep 0.1; i=$((i+1)); done; ` +
    `[ $i -lt ${watchdogGraceTenths} ] || kill -s KILL ${pid} 2>/dev/null`;
  const watchdog = spawn('sh', ['-c', script, `albumflow-watchdog-${pid}`], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
  watchdog.once('error', () => undefined);
  watchdog.stdin?.once('error', () => undefined);
  // Neither keeps albumflow's event loop alive: the server does while it runs.
  watchdog.unref();
  (watchdog.stdin as (NodeJS.WritableStream & { unref?: () => void }) | null)?.unref?.();
  return watchdog;
}

async function stopProcess({ child, exited, watchdog }: Running, signal: NodeJS.Signals): Promise<void> {
  watchdog?.kill('SIGKILL');
  if (child.exitCode !== null || child.signalCode !== null || !child.pid) return;
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), stopGraceMs);
  await exited;
  clearTimeout(timer);
}
