import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { afterAll, describe, expect, it } from 'vitest';
import { isRunning } from '../../../src/embedded/ownership.js';
import { startDevServer } from '../../../src/embedded/temporal.js';
import { projectRoot } from '../../../src/common/paths.js';
import { downloadWithSdk, locateTemporalCli } from '../../../src/embedded/temporal-cli.js';
import { eventually } from '../../harness/albums.js';
import { leaveOrphan } from './orphan.js';

// The embedded Temporal dev server on its own: its ports, its owner, and the SDK's download of it.

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-embedded-temporal-'));
const messages: string[] = [];
const log = { info: (message: string) => messages.push(message), warn: (message: string) => messages.push(message) };

afterAll(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

async function serves(address: string): Promise<boolean> {
  const connection = await Connection.connect({ address, connectTimeout: 2_000 });
  try {
    await connection.workflowService.getSystemInfo({});
    return true;
  } finally {
    await connection.close();
  }
}

describe('the embedded Temporal dev server', () => {
  it('asked for any port, gets one below the range the OS hands out for port 0, so no other server can take it between restarts', async () => {
    const server = await startDevServer({ uiPort: false, log });
    try {
      const ephemeral = await new Promise<number>((resolve) => {
        const probe = net.createServer().listen(0, '127.0.0.1', () => {
          const { port } = probe.address() as net.AddressInfo;
          probe.close(() => resolve(port));
        });
      });
      expect(server.ports[0]).toBeLessThan(ephemeral);
    } finally {
      await server.stop();
    }
  }, 60_000);

  it('says what to do when the frontend port it is given is taken', async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const { port } = holder.address() as net.AddressInfo;
    try {
      await expect(startDevServer({ port, uiPort: false, log })).rejects.toThrow(
        `the Temporal frontend port 127.0.0.1:${port} is already in use. Is another Temporal server running? Stop it, set TEMPORAL_ADDRESS=127.0.0.1:${port} to use it, or TEMPORAL_PORT=0 for any free port.`,
      );
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  });

  it('refuses to start on a state file whose server runs for a live albumflow, and leaves that server serving', async () => {
    const dbFile = path.join(root, 'live', 'temporal.db');
    const first = await startDevServer({ dbFile, uiPort: false, log });
    try {
      await expect(startDevServer({ dbFile, uiPort: false, log })).rejects.toThrow(`albumflow (pid ${process.pid}) is already running`);
      expect(first.status()).toMatchObject({ state: 'running', restarts: 0 });
      expect(await serves(first.address)).toBe(true);
    } finally {
      await first.stop();
    }
  }, 60_000);

  it('keeps its state file in write-ahead-log mode, synced at every commit', async () => {
    const dbFile = path.join(root, 'wal', 'temporal.db');
    const server = await startDevServer({ dbFile, uiPort: false, log });
    try {
      // Bytes 18 and 19 of an SQLite file's header are its write and read versions: 1 with a rollback
      // journal, 2 in WAL mode (sqlite.org/fileformat.html).
      const header = Buffer.alloc(20);
      const file = fs.openSync(dbFile, 'r');
      fs.readSync(file, header, 0, 20, 0);
      fs.closeSync(file);
      expect(header.subarray(0, 16).toString('latin1')).toBe('SQLite format 3\0');
      expect([header[18], header[19]]).toEqual([2, 2]);
      expect(fs.existsSync(`${dbFile}-wal`)).toBe(true);
      // synchronous is not kept in the file: the server is told it on its command line each start.
      const args = fs.readFileSync(`/proc/${server.status().pid}/cmdline`, 'utf8').split('\0');
      expect(args).toEqual(expect.arrayContaining(['--sqlite-pragma', 'journal_mode=wal', 'synchronous=full']));
    } finally {
      await server.stop();
    }
  }, 60_000);

  it('is restarted on the same port and state when it is killed', async () => {
    const server = await startDevServer({ dbFile: path.join(root, 'killed', 'temporal.db'), uiPort: false, log });
    try {
      const killed = server.status().pid!;
      process.kill(killed, 'SIGKILL');
      await eventually(() => expect(server.status()).toMatchObject({ state: 'running', restarts: 1 }), 60_000);
      expect(await serves(server.address)).toBe(true);
    } finally {
      await server.stop();
    }
  }, 90_000);

  it('stops the server an owner killed with kill -9 left running on its state file', async () => {
    const dbFile = path.join(root, 'orphan', 'temporal.db');
    const { owner, orphan } = await leaveOrphan('startDevServer', { dbFile, uiPort: false }, `${dbFile}.pid`);
    expect(isRunning(orphan)).toBe(true);

    const next = await startDevServer({ dbFile, uiPort: false, log });
    try {
      expect(messages).toContain(
        `stopping the embedded Temporal dev server (pid ${orphan.pid}) left running by albumflow pid ${owner}, which is gone`,
      );
      expect(isRunning(orphan)).toBe(false);
      expect(await serves(next.address)).toBe(true);
    } finally {
      await next.stop();
    }
  }, 90_000);

  it('runs the Temporal SDK download of the dev server as the CLI, from the tool cache', async () => {
    const located = await locateTemporalCli({ allowBuild: false });
    // Without the network, the download the SDK keeps from an earlier run stands in for a fresh one.
    if (located.kind !== 'binary') throw new Error('this test needs a Temporal CLI to stand in for the SDK download');
    const cacheHome = path.join(root, 'cache');
    const downloads = path.join(cacheHome, 'albumflow', 'bin');
    fs.mkdirSync(downloads, { recursive: true });
    const sdkVersion = (
      JSON.parse(fs.readFileSync(path.join(projectRoot, 'node_modules/@temporalio/testing/package.json'), 'utf8')) as { version: string }
    ).version;
    fs.copyFileSync(located.path, path.join(downloads, `temporal-sdk-typescript-${sdkVersion}`));

    const cli = await downloadWithSdk(() => undefined, { ...process.env, XDG_CACHE_HOME: cacheHome });
    expect(cli).toBe(path.join(downloads, 'temporal'));
    expect(fs.readdirSync(downloads)).toEqual(['temporal']);
    expect(execFileSync(cli, ['--version'], { encoding: 'utf8' })).toMatch(/temporal version/);
  }, 90_000);
});
