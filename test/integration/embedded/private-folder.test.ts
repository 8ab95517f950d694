import { execFile as execFileCallback, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { adminToken, clusterDirOf, interrupt, removeOutsideCluster, serve, serverRecord, type Serving } from './instance.js';
import { userEnvironment } from '../../harness/environment.js';
import { makeClone } from './private-clone.js';

const execFile = promisify(execFileCallback);

// As root, a clone in a folder only root may enter (root's home is 0700 on Debian), as the most common
// first try on a rented server: `npm start` and `npm test` from there. The embedded PostgreSQL runs as the
// `postgres` OS user, who can reach neither the clone's binaries nor its `.data`.

const asRoot = process.getuid?.() === 0;
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-home-'));
fs.chmodSync(home, 0o700);
const clone = path.join(home, 'albumflow');
const dataDir = path.join(clone, '.data');
const postgresUid = asRoot ? Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })) : -1;

let instance: Serving | undefined;
let output = '';

beforeAll(() => {
  makeClone(clone);
});

afterAll(async () => {
  if (instance) await interrupt(instance);
  removeOutsideCluster(dataDir);
  fs.rmSync(home, { recursive: true, force: true });
});

describe.runIf(asRoot)('as root, from a clone in a folder other users cannot enter', () => {
  it('npm start is ready, its PostgreSQL kept where the postgres user reaches it, and the banner says where', async () => {
    const env = { ...userEnvironment(), PORT: '0', TEMPORAL_PORT: '0', TEMPORAL_UI_PORT: '0', LOG_LEVEL: 'info' };
    instance = await serve(clone, env, dataDir);
    output = instance.output();
    const response = await fetch(`${instance.url}/readyz`, { headers: { authorization: `Bearer ${adminToken(dataDir)}` } });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ status: 'ready', embedded: { postgres: { state: 'running' } } });

    const cluster = clusterDirOf(output);
    expect(cluster.startsWith(`${home}/`)).toBe(false);
    const stat = fs.statSync(cluster);
    expect([stat.uid, stat.mode & 0o777]).toEqual([postgresUid, 0o700]);
    // The password stays with root, in the data directory.
    expect(output).toContain(`password in ${dataDir}/postgres.password`);
    expect(fs.statSync(`${dataDir}/postgres.password`).mode & 0o777).toBe(0o600);
    // The postmaster runs binaries outside the private folder, whose permissions are left as they were.
    const executable = fs.readlinkSync(`/proc/${serverRecord(dataDir, 'postgres').pid}/exe`);
    expect(executable.startsWith(`${home}/`)).toBe(false);
    expect(fs.statSync(home).mode & 0o777).toBe(0o700);

    expect(await interrupt(instance)).toBe(0);
    instance = undefined;
  }, 300_000);

  it("npm test's global setup starts its embedded PostgreSQL", async () => {
    // Against the run's Temporal server: the setup's own embedded PostgreSQL is what is tried here.
    const env = { ...userEnvironment(), TEMPORAL_ADDRESS: inject('temporalAddress') };
    const script = `const { default: setup } = await import('./test/setup/global.ts');
      const teardown = await setup({ provide: () => undefined });
      await teardown();
      console.log('set up and torn down');`;
    const { stdout } = await execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: clone,
      env,
      timeout: 240_000,
    });
    expect(stdout).toContain('set up and torn down');
  }, 300_000);
});
