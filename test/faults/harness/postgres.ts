import { execFile as execFileCallback, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../../src/temporal/devserver.js';

const execFile = promisify(execFileCallback);

/** A PostgreSQL cluster of its own (own data directory, port and socket directory), so restarting it disturbs nobody else. */
export interface PrivateCluster {
  /** DATABASE_URL of the `albumflow` database on this cluster (created by the service on first start). */
  databaseUrl: string;
  port: number;
  start(): Promise<void>;
  /** Fast shutdown: connections are closed, in-flight transactions rolled back. */
  stop(): Promise<void>;
  /** Stops the cluster and deletes its directory. */
  remove(): Promise<void>;
}

const osUser = 'postgres';

function binDir(): string {
  const fromPgConfig = (() => {
    try {
      return execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim();
    } catch {
      return undefined;
    }
  })();
  const candidates = [
    ...(fromPgConfig ? [fromPgConfig] : []),
    ...(fs.existsSync('/usr/lib/postgresql')
      ? fs
          .readdirSync('/usr/lib/postgresql')
          .sort((a, b) => Number(b) - Number(a))
          .map((version) => `/usr/lib/postgresql/${version}/bin`)
      : []),
  ];
  const found = candidates.find((dir) => fs.existsSync(path.join(dir, 'initdb')) && fs.existsSync(path.join(dir, 'pg_ctl')));
  if (!found) throw new Error('initdb and pg_ctl were not found (install the PostgreSQL server package)');
  return found;
}

/** PostgreSQL refuses to run as root: as root, its commands run as the `postgres` OS user. */
function asServerUser(command: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0 ? ['runuser', ['-u', osUser, '--', command, ...args]] : [command, args];
}

async function run(command: string, args: string[]): Promise<void> {
  const [file, argv] = asServerUser(command, args);
  try {
    await execFile(file, argv, { encoding: 'utf8' });
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} failed: ${(err as Error).message}\n${stdout ?? ''}${stderr ?? ''}`);
  }
}

export async function startPrivateCluster(): Promise<PrivateCluster> {
  const bin = binDir();
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-faults-pg-'));
  const dataDir = path.join(root, 'data');
  const socketDir = path.join(root, 'socket');
  fs.mkdirSync(socketDir);
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', osUser], { encoding: 'utf8' }));
    const gid = Number(execFileSync('id', ['-g', osUser], { encoding: 'utf8' }));
    for (const dir of [root, socketDir]) fs.chownSync(dir, uid, gid);
  }
  const port = await freePort();
  await run(path.join(bin, 'initdb'), ['-D', dataDir, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  const serverOptions = [
    `-p ${port}`,
    `-k ${socketDir}`,
    '-c listen_addresses=127.0.0.1',
    '-c max_connections=300',
    '-c fsync=off',
    '-c full_page_writes=off',
  ].join(' ');
  const pgCtl = (...args: string[]) => run(path.join(bin, 'pg_ctl'), ['-D', dataDir, ...args]);
  let running = false;
  const cluster: PrivateCluster = {
    databaseUrl: `postgresql://postgres@127.0.0.1:${port}/albumflow`,
    port,
    async start() {
      await pgCtl('-o', serverOptions, '-l', path.join(root, 'server.log'), '-w', '-t', '60', 'start');
      running = true;
    },
    async stop() {
      await pgCtl('-m', 'fast', '-w', '-t', '60', 'stop');
      running = false;
    },
    async remove() {
      if (running) await cluster.stop().catch(() => undefined);
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
  await cluster.start();
  return cluster;
}
