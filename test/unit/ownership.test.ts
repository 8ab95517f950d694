import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { claimDataDir, identify, InstanceRunningError, isRunning } from '../../src/embedded/ownership.js';
import { pickPort } from '../../src/embedded/ports.js';

const dirs: string[] = [];
function dataDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-claim-'));
  dirs.push(dir);
  return dir;
}
const claimFile = (dir: string) => path.join(dir, 'albumflow.pid');

afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** The pid of a process that has exited. */
function deadPid(): number {
  const { pid } = spawnSync(process.execPath, ['-e', '']);
  return pid;
}

describe('claimDataDir', () => {
  it('makes this process the owner until it releases the claim', () => {
    const dir = dataDir();
    const claim = claimDataDir(dir);
    expect(JSON.parse(fs.readFileSync(claimFile(dir), 'utf8'))).toEqual(identify(process.pid));
    claim.release();
    expect(fs.existsSync(claimFile(dir))).toBe(false);
  });

  it('refuses a second owner while the first runs, naming its pid', () => {
    const dir = dataDir();
    const claim = claimDataDir(dir);
    expect(() => claimDataDir(dir)).toThrow(InstanceRunningError);
    expect(() => claimDataDir(dir)).toThrow(`albumflow (pid ${process.pid}) is already running on ${dir}`);
    claim.release();
  });

  it('takes over the claim of an owner that died', () => {
    const dir = dataDir();
    fs.writeFileSync(claimFile(dir), JSON.stringify({ pid: deadPid() }));
    claimDataDir(dir).release();
  });

  it.runIf(process.platform === 'linux')('takes over a claim whose pid now belongs to another process (it started at another time)', () => {
    const dir = dataDir();
    const reused = { pid: process.pid, startTime: '1' };
    fs.writeFileSync(claimFile(dir), JSON.stringify(reused));
    expect(isRunning(reused)).toBe(false);
    claimDataDir(dir).release();
  });
});

/**
 * A process that has exited and that its parent has not reaped: a zombie, as an albumflow killed with
 * kill -9 is until its parent (npm, or the init process once npm is gone too) waits for it. Its parent
 * here is the shell turned into `sleep 60` before its child exits, and `sleep` never waits.
 */
async function zombie(): Promise<{ pid: number; end: () => void }> {
  const parent = spawn('sh', ['-c', 'sleep 0.3 & echo $!; exec sleep 60'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const pid = await new Promise<number>((resolve) => parent.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString()))));
  const state = () => {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
  };
  await vi.waitFor(() => expect(state()).toBe('Z'), { timeout: 20_000, interval: 20 });
  return { pid, end: () => parent.kill('SIGKILL') };
}

describe.runIf(process.platform === 'linux')('isRunning', () => {
  it('does not count a process that has exited but is not reaped yet (a zombie)', async () => {
    const dead = await zombie();
    try {
      expect(isRunning({ pid: dead.pid })).toBe(false);
      expect(isRunning(identify(dead.pid))).toBe(false);
    } finally {
      dead.end();
    }
  }, 30_000);

  it('lets a claim whose owner is a zombie be taken over', async () => {
    const dir = dataDir();
    const dead = await zombie();
    try {
      fs.writeFileSync(claimFile(dir), JSON.stringify(identify(dead.pid)));
      claimDataDir(dir).release();
    } finally {
      dead.end();
    }
  }, 30_000);
});

describe('pickPort', () => {
  it('picks a free port below the range the OS hands out for port 0', async () => {
    const ephemeral = await new Promise<number>((resolve) => {
      const server = net.createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as net.AddressInfo;
        server.close(() => resolve(port));
      });
    });
    const port = await pickPort();
    expect(port).toBeLessThan(ephemeral);
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', resolve));
    await new Promise((resolve) => server.close(resolve));
  });
});
