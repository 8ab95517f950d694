import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { searchAttributes } from '../../workflows/definitions.js';
import { installHint, locateTemporalCli } from './cli.js';
import { dynamicConfigFlags } from './dynamic-config.js';

export interface DevServer {
  /** gRPC frontend, host:port. */
  address: string;
  uiUrl: string | undefined;
  stop(): Promise<void>;
}

export interface DevServerOptions {
  /** File that keeps workflow histories across restarts; in memory when unset. */
  dbFile?: string;
  ip?: string;
  /** Frontend port; 0 picks a free one. */
  port?: number;
  /** Web UI port, or false for a headless server. */
  uiPort?: number | false;
  namespace?: string;
  log?: (message: string) => void;
}

const searchAttributeFlags = Object.values(searchAttributes).map((key) => {
  const type = { KEYWORD: 'Keyword', BOOL: 'Bool', INT: 'Int' }[key.type];
  return `${key.name}=${type}`;
});

/** Starts `temporal server start-dev` with albumflow's search attributes registered. */
export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  const log = options.log ?? (() => undefined);
  const ip = options.ip ?? '127.0.0.1';
  const port = options.port === 0 || options.port === undefined ? await freePort(ip) : options.port;
  const uiPort = options.uiPort === false ? undefined : options.uiPort === 0 || options.uiPort === undefined ? await freePort(ip) : options.uiPort;
  if (options.dbFile) fs.mkdirSync(path.dirname(options.dbFile), { recursive: true });
  const pidFile = options.dbFile ? `${options.dbFile}.pid` : undefined;
  if (pidFile) await stopOrphan(pidFile, log);
  await assertPortFree(ip, port, 'Temporal frontend');
  if (uiPort !== undefined) await assertPortFree(ip, uiPort, 'Temporal UI');

  const cli = await locateTemporalCli({ log });
  const address = `${ip}:${port}`;
  const uiUrl = uiPort === undefined ? undefined : `http://${ip === '0.0.0.0' ? 'localhost' : ip}:${uiPort}`;

  if (cli.kind === 'sdk-download') {
    try {
      const env = await TestWorkflowEnvironment.createLocal({
        server: {
          ip,
          port,
          ui: uiPort !== undefined,
          ...(uiPort !== undefined ? { uiPort } : {}),
          ...(options.dbFile ? { dbFilename: options.dbFile } : {}),
          ...(options.namespace ? { namespace: options.namespace } : {}),
          searchAttributes: Object.values(searchAttributes),
          extraArgs: dynamicConfigFlags(),
        },
      });
      return { address: env.address, uiUrl, stop: () => env.teardown() };
    } catch (err) {
      throw new Error(`could not download the Temporal dev server: ${(err as Error).message}\n${installHint()}`);
    }
  }

  const args = ['server', 'start-dev', '--ip', ip, '--port', String(port), '--log-level', 'warn', ...dynamicConfigFlags()];
  args.push(...(uiPort === undefined ? ['--headless'] : ['--ui-port', String(uiPort)]));
  if (options.dbFile) args.push('--db-filename', options.dbFile);
  if (options.namespace && options.namespace !== 'default') args.push('--namespace', options.namespace);
  for (const flag of searchAttributeFlags) args.push('--search-attribute', flag);

  // Own process group: a Ctrl-C in the terminal reaches only us, and we stop the server after the
  // worker has drained.
  const child = spawn(cli.path, args, { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  if (pidFile && child.pid) fs.writeFileSync(pidFile, String(child.pid));
  const stop = async () => {
    await stopProcess(child, exited);
    if (pidFile) fs.rmSync(pidFile, { force: true });
  };
  try {
    await waitUntilServing(address, exited, () => stderr);
  } catch (err) {
    await stop();
    throw err;
  }
  return { address, uiUrl, stop };
}

/**
 * A dev server left running by a process that was killed (its pid file survived) holds the port and
 * the state file; stop it before starting a new one on the same state.
 */
async function stopOrphan(pidFile: string, log: (message: string) => void): Promise<void> {
  let pid: number;
  try {
    pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
  } catch {
    return;
  }
  const isOurServer = (() => {
    try {
      const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      return cmdline.includes('start-dev') && cmdline.includes(pidFile.slice(0, -'.pid'.length));
    } catch {
      return false;
    }
  })();
  if (Number.isInteger(pid) && pid > 0 && isOurServer) {
    log(`stopping the dev server (pid ${pid}) left running by an earlier albumflow`);
    process.kill(pid, 'SIGTERM');
    for (let waited = 0; waited < 10_000 && fs.existsSync(`/proc/${pid}`); waited += 100) {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  fs.rmSync(pidFile, { force: true });
}

async function waitUntilServing(address: string, exited: Promise<number | null>, stderr: () => string): Promise<void> {
  const deadline = Date.now() + 60_000;
  let died: number | null | undefined;
  void exited.then((code) => (died = code));
  for (;;) {
    if (died !== undefined) throw new Error(`Temporal dev server exited (code ${died}) before serving:\n${stderr().trim()}`);
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1_000 });
      try {
        await connection.workflowService.getSystemInfo({});
        return;
      } finally {
        await connection.close();
      }
    } catch {
      if (Date.now() > deadline) throw new Error(`Temporal dev server at ${address} did not start within 60 s:\n${stderr().trim()}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

async function stopProcess(child: ChildProcess, exited: Promise<number | null>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function assertPortFree(host: string, port: number, what: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const server = net.createServer();
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new Error(
          err.code === 'EADDRINUSE'
            ? `${what} port ${host}:${port} is already in use. Is another Temporal server running? ` +
                `Stop it, or set TEMPORAL_ADDRESS=${host}:${port} to use it.`
            : `${what} port ${host}:${port}: ${err.message}`,
        ),
      ),
    );
    server.listen(port, host, () => server.close(() => resolve()));
  });
}
