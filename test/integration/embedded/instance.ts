import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import type { ProcessIdentity, ServerRecord } from '../../../src/embedded/ownership.js';
import { outsideClusterDir } from '../../../src/embedded/postgres.js';
import { eventually } from '../../harness/albums.js';

// `npm start` in a child process, in a process group of its own as in a terminal.

export interface Instance {
  /** npm's process, the leader of the instance's process group. */
  npm: ChildProcess;
  output: () => string;
  /** Resolves with npm's exit code, or the signal's name. */
  exited: Promise<number | string>;
}

export function startInstance(cwd: string, env: NodeJS.ProcessEnv): Instance {
  const npm = spawn('npm', ['start'], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  npm.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  npm.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | string>((resolve) => npm.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  return { npm, output: () => output, exited };
}

/** The albumflow process that owns the data directory (npm runs it as its child). */
export function ownerOf(dataDir: string): ProcessIdentity {
  return JSON.parse(fs.readFileSync(path.join(dataDir, 'albumflow.pid'), 'utf8')) as ProcessIdentity;
}

export type Serving = Instance & { url: string; pid: number };

/** Starts an instance and waits for its banner; returns it with its HTTP address and the pid of its albumflow. */
export async function serve(cwd: string, env: NodeJS.ProcessEnv, dataDir: string): Promise<Serving> {
  const instance = startInstance(cwd, env);
  const url = await Promise.race([
    eventually(() => {
      const match = /webhook\s+POST (http:\/\/\S+?)\/webhooks\//.exec(instance.output());
      expect(match, instance.output()).not.toBeNull();
      return match![1]!;
    }, 180_000),
    instance.exited.then((how) => {
      throw new Error(`albumflow exited (${how}) before it served:\n${instance.output()}`);
    }),
  ]);
  return { ...instance, url, pid: ownerOf(dataDir).pid };
}

/** Ctrl-C in a terminal: SIGINT to the whole process group, and npm relays it to albumflow once more. */
export async function interrupt(instance: Serving): Promise<number | string> {
  process.kill(-instance.npm.pid!, 'SIGINT');
  await new Promise((resolve) => setTimeout(resolve, 200));
  process.kill(instance.pid, 'SIGINT');
  return instance.exited;
}

export function serverRecord(dataDir: string, name: 'postgres' | 'temporal.db'): ServerRecord {
  return JSON.parse(fs.readFileSync(path.join(dataDir, `${name}.pid`), 'utf8')) as ServerRecord;
}

export function adminToken(dataDir: string): string {
  return fs.readFileSync(path.join(dataDir, 'admin-token'), 'utf8').trim();
}

/** Where the banner says the embedded PostgreSQL keeps its data. */
export function clusterDirOf(output: string): string {
  const dir = /PostgreSQL\s+\S+ \(embedded, data in (\S+?),/.exec(output)?.[1];
  expect(dir, output).toBeDefined();
  return dir!;
}

/** Removes the cluster albumflow may have kept outside the data directory (as root, where the postgres user reaches it). */
export function removeOutsideCluster(dataDir: string): void {
  if (fs.existsSync(dataDir)) fs.rmSync(outsideClusterDir(path.join(dataDir, 'postgres')), { recursive: true, force: true });
}
