import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findProcess, isRunning, type ServerRecord } from '../../../src/embedded/ownership.js';
import { pickPort } from '../../../src/embedded/ports.js';
import { projectRoot } from '../../../src/common/paths.js';
import { eventually } from '../../harness/albums.js';
import { adminToken, interrupt, removeOutsideCluster, serve, serverRecord, type Serving } from './instance.js';
import { userEnvironment } from '../../harness/environment.js';

// `npm start` on a data directory it creates, killed as a whole with kill -9 (its process group: npm and
// albumflow) and started again at once, on fixed Temporal ports as a user who leaves TEMPORAL_PORT at 7233.

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-kill-'));
fs.chmodSync(root, 0o755);
const dataDir = path.join(root, 'data');
/** Every embedded server an instance of this file started, stopped in the end whatever happened. */
const started = new Map<number, ServerRecord>();

let instance: Serving | undefined;

async function start(env: NodeJS.ProcessEnv): Promise<Serving> {
  const next = await serve(projectRoot, env, dataDir);
  for (const name of ['postgres', 'temporal.db'] as const) {
    const record = serverRecord(dataDir, name);
    started.set(record.pid, record);
  }
  return next;
}

async function ready(url: string): Promise<number> {
  const response = await fetch(`${url}/readyz`, { headers: { authorization: `Bearer ${adminToken(dataDir)}` } });
  return response.status;
}

/** SIGKILL to npm's whole process group, as `kill -9 -<pgid>` or a supervisor that gives up waiting. */
function killGroup(serving: Serving): void {
  process.kill(-serving.npm.pid!, 'SIGKILL');
}

afterAll(async () => {
  if (instance) await interrupt(instance);
  for (const record of started.values()) if (isRunning(record)) process.kill(record.pid, 'SIGKILL');
  removeOutsideCluster(dataDir);
  fs.rmSync(root, { recursive: true, force: true });
});

describe('npm start killed with kill -9', () => {
  let frontend = 0;
  let env: NodeJS.ProcessEnv = {};
  beforeAll(async () => {
    frontend = await pickPort();
    env = {
      ...userEnvironment(),
      DATA_DIR: dataDir,
      PORT: '0',
      TEMPORAL_PORT: String(frontend),
      TEMPORAL_UI_PORT: String(await pickPort()),
    };
  });

  it('creates its data directory, media directory and state files readable by their owner only', async () => {
    instance = await start(env);
    const mode = (file: string) => fs.statSync(file).mode & 0o777;
    expect(mode(dataDir)).toBe(0o700);
    expect(mode(path.join(dataDir, 'media'))).toBe(0o700);
    expect(mode(path.join(dataDir, 'admin-token'))).toBe(0o600);
    const state = fs.readdirSync(dataDir).filter((name) => name.startsWith('temporal.db') || name.endsWith('.pid'));
    expect(state).toEqual(expect.arrayContaining(['temporal.db', 'temporal.db.pid', 'postgres.pid', 'albumflow.pid']));
    expect(state.filter((name) => mode(path.join(dataDir, name)) !== 0o600)).toEqual([]);
  }, 240_000);

  it('starts again at once after its process group is killed, every time, stopping the servers the dead one left', async () => {
    for (let round = 1; round <= 3; round += 1) {
      const dead = instance!;
      const servers = [serverRecord(dataDir, 'postgres'), serverRecord(dataDir, 'temporal.db')];
      killGroup(dead);
      instance = undefined;
      instance = await start(env);
      await dead.exited;
      expect(servers.filter(isRunning)).toEqual([]);
      expect(await ready(instance.url)).toBe(200);
      expect(instance.output()).toContain(`Temporal          127.0.0.1:${frontend} `);
    }
  }, 600_000);

  it('leaves no embedded server running for long after its process group is killed and nothing starts it again', async () => {
    const dead = instance ?? (await start(env));
    const servers = [serverRecord(dataDir, 'postgres'), serverRecord(dataDir, 'temporal.db')];
    expect(servers.every(isRunning)).toBe(true);
    killGroup(dead);
    instance = undefined;
    await dead.exited;
    await eventually(() => expect(servers.filter(isRunning)).toEqual([]), 30_000);
    // Their watchdogs end too: at once, or once their grace period is over when the server is a zombie nobody reaps.
    const watchdogs = () => servers.map((server) => findProcess((args) => args.includes(`albumflow-watchdog-${server.pid}`)));
    await eventually(() => expect(watchdogs()).toEqual([undefined, undefined]), 30_000);
  }, 120_000);
});
