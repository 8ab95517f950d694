import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export type Role = 'ingress' | 'worker';

const repoRoot = path.resolve(import.meta.dirname, '../../..');
const entryPoints: Record<Role, string> = { ingress: 'src/ingress.ts', worker: 'src/worker.ts' };
/** What each entry point prints once it serves. */
const readyLines: Record<Role, RegExp> = { ingress: /albumflow ingress listening on/, worker: /albumflow worker polling/ };

export interface MemorySample {
  rssBytes: number;
  peakRssBytes: number;
}

/** One albumflow process (`node --import tsx src/<role>.ts`), restartable under the same name and environment. */
export interface AppProcess {
  name: string;
  role: Role;
  pid(): number | undefined;
  /** Starts the process and resolves once it prints that it serves. */
  start(): Promise<void>;
  /** kill -9, then waits for the exit. */
  kill9(): Promise<void>;
  /** SIGTERM (graceful shutdown), then waits for the exit. */
  stop(): Promise<void>;
  /** Current and peak resident memory of the running process, from /proc. */
  memory(): MemorySample | undefined;
  /** Times the process exited without being asked to. */
  unexpectedExits: number;
}

export function appProcess(options: { name: string; role: Role; env: Record<string, string>; logDir: string }): AppProcess {
  const { name, role, env, logDir } = options;
  fs.mkdirSync(logDir, { recursive: true });
  const logPath = path.join(logDir, `${name}.log`);
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let expectingExit = false;

  const processHandle: AppProcess = {
    name,
    role,
    unexpectedExits: 0,
    pid: () => child?.pid,
    async start() {
      if (child) throw new Error(`${name} is already running`);
      const log = fs.openSync(logPath, 'a');
      fs.writeSync(log, `\n=== start ${new Date().toISOString()}\n`);
      const started = spawn(process.execPath, ['--import', 'tsx', entryPoints[role]], {
        cwd: repoRoot,
        env: { ...process.env, ...env },
        stdio: ['ignore', 'pipe', log],
      });
      fs.closeSync(log);
      child = started;
      expectingExit = false;
      exited = new Promise((resolve) =>
        started.once('exit', () => {
          if (!expectingExit) processHandle.unexpectedExits += 1;
          if (child === started) child = undefined;
          resolve();
        }),
      );
      let output = '';
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${name} did not start within 120 s; see ${logPath}`)), 120_000);
        started.stdout!.on('data', (chunk: Buffer) => {
          fs.appendFileSync(logPath, chunk);
          output += chunk.toString();
          if (readyLines[role].test(output)) {
            clearTimeout(timer);
            resolve();
          }
        });
        started.once('exit', (code, signal) => {
          clearTimeout(timer);
          const tail = fs.readFileSync(logPath, 'utf8').split('\n').slice(-15).join('\n');
          reject(new Error(`${name} exited (${code ?? signal}) before it served:\n${tail}`));
        });
      });
    },
    async kill9() {
      if (!child) return;
      expectingExit = true;
      child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      if (!child) return;
      expectingExit = true;
      const stopping = child;
      stopping.kill('SIGTERM');
      const timer = setTimeout(() => stopping.kill('SIGKILL'), 40_000);
      await exited;
      clearTimeout(timer);
    },
    memory() {
      const pid = child?.pid;
      if (!pid) return undefined;
      try {
        const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
        const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
        return { rssBytes: kib('VmRSS'), peakRssBytes: kib('VmHWM') };
      } catch {
        return undefined;
      }
    },
  };
  return processHandle;
}
