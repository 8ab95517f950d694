import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Pool } from '../../../src/db/pool.js';
import { startEmbeddedServer, type EmbeddedServer, type EmbeddedStatus } from '../../../src/embedded/server.js';
import { buildApp, type App } from '../../../src/process/app.js';
import { eventually } from '../../harness/albums.js';
import { testClient, testConfig, testLogger, testPool } from '../../harness/env.js';

// The supervisor of the embedded servers (src/embedded/server.ts) with a tiny server of its own: a
// node process listening on a port, which a test can kill with kill -9 and keep from coming back.

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-supervision-'));
const messages: string[] = [];
const log = { info: (message: string) => messages.push(message), warn: (message: string) => messages.push(message) };

afterAll(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

/** Resolves once something accepts connections on the port. */
async function listening(port: number, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    const accepted = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (accepted) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

interface FakeServer {
  server: EmbeddedServer<readonly [number]>;
  /** While closed, a start of the server waits before it counts as serving. */
  gate: { close: () => void; open: () => void };
  /** Makes every later start fail, as a server whose binary or data became unusable. */
  breakIt: () => void;
  /** The error albumflow was told it cannot go on with. */
  failed: Promise<Error>;
}

async function startFakeServer(name: string): Promise<FakeServer> {
  const broken = path.join(root, `${name}.broken`);
  let opened: Promise<void> = Promise.resolve();
  let open = () => undefined as void;
  let fail: (err: Error) => void = () => undefined;
  const failed = new Promise<Error>((resolve) => (fail = resolve));
  const script = (port: number) =>
    `if (require('node:fs').existsSync(${JSON.stringify(broken)})) { console.error('cannot read its data'); process.exit(3); }
     require('node:net').createServer().listen(${port}, '127.0.0.1');`;
  const server = await startEmbeddedServer({
    id: name,
    name: `the fake server ${name}`,
    command: process.execPath,
    args: ([port]) => ['-e', script(port)],
    ports: [0] as const,
    stopSignal: 'SIGTERM',
    waitUntilServing: async ([port], _output, signal) => {
      await opened;
      await listening(port, signal);
    },
    log,
    onFailed: fail,
  });
  return {
    server,
    gate: {
      close: () => void (opened = new Promise<void>((resolve) => (open = resolve))),
      open: () => open(),
    },
    breakIt: () => fs.writeFileSync(broken, ''),
    failed,
  };
}

describe('an embedded server killed under albumflow', () => {
  let pool: Pool;
  let temporal: Client;

  beforeAll(async () => {
    const config = testConfig();
    pool = testPool(config);
    temporal = await testClient(config);
  });

  afterAll(async () => {
    await temporal.connection.close();
    await pool.end();
  });

  const adminToken = 'supervision-admin-token';

  /** `/readyz` as an admin token sees it: with each server's pid and restarts. */
  async function readiness(app: App): Promise<{ code: number; body: { status: string; embedded: Record<string, EmbeddedStatus> } }> {
    const response = await app.inject({ method: 'GET', url: '/readyz', headers: { authorization: `Bearer ${adminToken}` } });
    return { code: response.statusCode, body: response.json() };
  }

  /** `/readyz` as anyone sees it. */
  async function openReadiness(app: App): Promise<{ code: number; body: { status: string; embedded: Record<string, unknown> } }> {
    const response = await app.inject({ method: 'GET', url: '/readyz' });
    return { code: response.statusCode, body: response.json() };
  }

  async function appWith(server: EmbeddedServer): Promise<App> {
    const config = testConfig();
    return buildApp({
      config,
      pool,
      temporal,
      wakeDispatcher: () => undefined,
      logger: testLogger(config),
      embeddedServers: [server],
      tokens: new Map([[adminToken, ['*']]]),
    });
  }

  it('makes /readyz unavailable, naming it as restarting, while it is down, and ready again once it is back', async () => {
    const { server, gate } = await startFakeServer('restarted');
    const app = await appWith(server);
    try {
      const before = await readiness(app);
      expect(before.code).toBe(200);
      expect(before.body.embedded.restarted).toMatchObject({ state: 'running', restarts: 0 });
      expect(before.body.embedded.restarted?.pid).toBe(server.status().pid);
      // Open to anyone, it says whether the server runs, not its pid.
      expect(await openReadiness(app)).toEqual({
        code: 200,
        body: {
          status: 'ready',
          checks: { database: 'ok', temporal: 'ok', mediaStore: 'ok' },
          embedded: { restarted: { state: 'running' } },
        },
      });

      gate.close();
      const killed = server.status().pid!;
      process.kill(killed, 'SIGKILL');
      const down = await eventually(async () => {
        const ready = await readiness(app);
        expect(ready.code).toBe(503);
        return ready;
      });
      expect(down.body.status).toBe('unavailable');
      // No pid while it is down: the one killed is gone and the next has not served yet.
      expect(down.body.embedded).toEqual({ restarted: { state: 'restarting', restarts: 0 } });
      expect((await openReadiness(app)).body.embedded).toEqual({ restarted: { state: 'restarting' } });
      expect(messages).toContain(
        `the fake server restarted (pid ${killed}) was killed (SIGKILL) while albumflow runs; restarting it on the same state`,
      );

      gate.open();
      const back = await eventually(async () => {
        const ready = await readiness(app);
        expect(ready.code).toBe(200);
        return ready;
      });
      expect(back.body).toMatchObject({ status: 'ready', embedded: { restarted: { state: 'running', restarts: 1 } } });
      expect(back.body.embedded.restarted?.pid).not.toBe(killed);
    } finally {
      await app.close();
      await server.stop();
    }
  });

  it('gives up when it cannot be restarted: albumflow is told why, and /readyz says it failed', async () => {
    const { server, breakIt, failed } = await startFakeServer('unusable');
    const app = await appWith(server);
    try {
      breakIt();
      process.kill(server.status().pid!, 'SIGKILL');
      const err = await failed;
      expect(err.message).toMatch(
        /^the fake server unusable could not be restarted \(6 attempts; the last: the fake server unusable exited with code 3 before it served:\ncannot read its data\)$/,
      );
      expect(server.status()).toEqual({ state: 'failed', pid: undefined, restarts: 0 });
      const ready = await readiness(app);
      expect(ready.code).toBe(503);
      expect(ready.body.status).toBe('unavailable');
      expect(ready.body.embedded).toEqual({ unusable: { state: 'failed', restarts: 0 } });
    } finally {
      await app.close();
      await server.stop();
    }
  }, 60_000);
});

describe('an embedded server that cannot be started', () => {
  it('says its directory is gone when that is why, not that its command is missing', async () => {
    const gone = path.join(root, 'deleted-data');
    fs.mkdirSync(gone);
    fs.rmSync(gone, { recursive: true });
    const started = startEmbeddedServer({
      id: 'homeless',
      name: 'the fake server homeless',
      command: process.execPath,
      args: () => ['-e', ''],
      ports: [0] as const,
      cwd: gone,
      stopSignal: 'SIGTERM',
      waitUntilServing: () => new Promise<void>(() => undefined),
      log,
    });
    await expect(started).rejects.toThrow(
      `the fake server homeless could not be started (its directory ${gone} does not exist) before it served`,
    );
  });
});
