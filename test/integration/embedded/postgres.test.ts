import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen } from '../../../src/db/listen.js';
import { connectionConfig, createPool, ensureDatabase, isUnavailable, standaloneClient, type Pool } from '../../../src/db/pool.js';
import { identify, isRunning } from '../../../src/embedded/ownership.js';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../../src/embedded/postgres.js';
import { eventually } from '../../harness/albums.js';
import { leaveOrphan } from './orphan.js';

// The embedded PostgreSQL itself, whatever server the rest of the suite uses: what albumflow relies on
// behaves as on any server, and the server survives what happens to its owner.

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-embedded-pg-'));
// As root, the embedded PostgreSQL runs as the postgres user, which must reach its directory.
fs.chmodSync(root, 0o755);
const messages: string[] = [];
const log = { info: (message: string) => messages.push(message), warn: (message: string) => messages.push(message) };

let server: EmbeddedPostgres;
let pool: Pool;

beforeAll(async () => {
  server = await startEmbeddedPostgres({ dataDir: path.join(root, 'main'), log });
  await ensureDatabase(connectionConfig(server.url));
  pool = createPool(connectionConfig(server.url), { max: 4 });
  await pool.query('CREATE TABLE jobs (id int PRIMARY KEY)');
  await pool.query('INSERT INTO jobs SELECT generate_series(1, 3)');
}, 120_000);

afterAll(async () => {
  await pool.end();
  await server.stop();
  fs.rmSync(root, { recursive: true, force: true });
});

describe('the embedded PostgreSQL', () => {
  it('listens on 127.0.0.1 with a password, outside the range of ports the OS hands out', async () => {
    const [port] = server.ports;
    expect(server.url).toMatch(new RegExp(`^postgresql://postgres:[^@]+@127\\.0\\.0\\.1:${port}/albumflow$`));
    expect(server.displayUrl).toBe(`postgresql://postgres@127.0.0.1:${port}/albumflow`);
    const wrongPassword = connectionConfig(server.url.replace(/:[^:@]+@/, ':wrong@'));
    await expect(ensureDatabase(wrongPassword)).rejects.toThrow(/password authentication failed/);
    expect(fs.statSync(`${path.join(root, 'main')}.password`).mode & 0o077).toBe(0);
  });

  it('delivers NOTIFY to a LISTEN on another connection', async () => {
    let notified = 0;
    const listener = listen({ config: connectionConfig(server.url), channel: 'jobs', onNotification: () => (notified += 1) });
    try {
      await eventually(() => expect(notified).toBe(1)); // once on connecting
      await pool.query(`NOTIFY jobs`);
      await eventually(() => expect(notified).toBe(2));
    } finally {
      await listener.close();
    }
  });

  it('skips rows another transaction has locked (FOR UPDATE SKIP LOCKED)', async () => {
    const holder = await pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT id FROM jobs WHERE id = 1 FOR UPDATE');
      const { rows } = await pool.query<{ id: number }>('SELECT id FROM jobs ORDER BY id FOR UPDATE SKIP LOCKED');
      expect(rows.map((row) => row.id)).toEqual([2, 3]);
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
  });

  it('gives an advisory lock to one session at a time', async () => {
    const [first, second] = [await pool.connect(), await pool.connect()];
    try {
      const tryLock = async (client: typeof first) =>
        (await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock(42) AS locked')).rows[0]?.locked;
      expect(await tryLock(first)).toBe(true);
      expect(await tryLock(second)).toBe(false);
      await first.query('SELECT pg_advisory_unlock(42)');
      expect(await tryLock(second)).toBe(true);
      await second.query('SELECT pg_advisory_unlock(42)');
    } finally {
      first.release();
      second.release();
    }
  });

  it('is restarted on the same data when it is killed, and nothing committed is lost', async () => {
    await pool.query('INSERT INTO jobs VALUES (4)');
    const killed = server.status().pid!;
    process.kill(killed, 'SIGKILL');
    await eventually(() => expect(server.status()).toMatchObject({ state: 'running', restarts: 1 }), 60_000);
    expect(server.status().pid).not.toBe(killed);
    const { rows } = await eventually(() => pool.query<{ id: number }>('SELECT id FROM jobs ORDER BY id'), 30_000);
    expect(rows.map((row) => row.id)).toEqual([1, 2, 3, 4]);
    expect(messages).toContain(
      `the embedded PostgreSQL (pid ${killed}) was killed (SIGKILL) while albumflow runs; restarting it on the same state`,
    );
  }, 90_000);

  it('stops without crashing a pool that is still ending or a connection outside any pool (57P01)', async () => {
    const own = await startEmbeddedPostgres({ dataDir: path.join(root, 'stopping'), log });
    const config = connectionConfig(own.url.replace(/\/albumflow$/, '/postgres'));
    const ending = createPool(config, { max: 3 });
    const [busy, idle] = [await ending.connect(), await ending.connect()];
    idle.release();
    const query = busy.query('SELECT pg_sleep(30)').then(
      () => undefined,
      (err: unknown) => err,
    );
    const ended = ending.end();
    const outside = standaloneClient(config);
    await outside.connect();

    await own.stop();

    const failure = await query;
    expect(isUnavailable(failure)).toBe(true);
    expect((failure as { code?: string }).code).toBe('57P01');
    busy.release();
    await ended;
    await outside.end().catch(() => undefined);
  }, 60_000);

  it('keeps its port for its data across a clean stop and start, so the URL it printed goes on working', async () => {
    const dataDir = path.join(root, 'kept-port');
    const first = await startEmbeddedPostgres({ dataDir, log });
    const url = first.url;
    await first.stop();
    const second = await startEmbeddedPostgres({ dataDir, log });
    try {
      expect(second.ports).toEqual(first.ports);
      expect(second.url).toBe(url);
      await ensureDatabase(connectionConfig(url));
    } finally {
      await second.stop();
    }
  }, 120_000);

  it('stops the server an owner killed with kill -9 left running, and starts on the same data', async () => {
    const dataDir = path.join(root, 'orphan');
    const { owner, orphan } = await leaveOrphan('startEmbeddedPostgres', { dataDir }, `${dataDir}.pid`);
    expect(isRunning(orphan)).toBe(true);

    const next = await startEmbeddedPostgres({ dataDir, log });
    try {
      expect(messages).toContain(
        `stopping the embedded PostgreSQL (pid ${orphan.pid}) left running by albumflow pid ${owner}, which is gone`,
      );
      expect(isRunning(orphan)).toBe(false);
      await ensureDatabase(connectionConfig(next.url));
    } finally {
      await next.stop();
    }
  }, 120_000);

  it('finds by its postmaster.pid a server left running with no albumflow record, and stops it only when no live albumflow claims the data', async () => {
    const dataDir = path.join(root, 'unrecorded', 'postgres');
    const claimFile = path.join(root, 'unrecorded', 'albumflow.pid');
    // One the postgres user may enter, as `root` (albumflow creates a missing one 0700).
    fs.mkdirSync(path.dirname(claimFile));
    fs.chmodSync(path.dirname(claimFile), 0o755);
    const { owner, orphan } = await leaveOrphan('startEmbeddedPostgres', { dataDir }, `${dataDir}.pid`);
    // As if its albumflow had been killed between starting it and writing the record.
    fs.rmSync(`${dataDir}.pid`);
    expect(isRunning(orphan)).toBe(true);

    // The data directory claimed by a live albumflow (here, the process that runs this test file).
    fs.writeFileSync(claimFile, JSON.stringify(identify(process.ppid)));
    await expect(startEmbeddedPostgres({ dataDir, log })).rejects.toThrow(
      `albumflow (pid ${process.ppid}) is already running on ${path.dirname(dataDir)}`,
    );
    expect(isRunning(orphan)).toBe(true);

    // Claimed by an albumflow that is gone: the server is stopped, saying so, and a new one serves the same data.
    fs.writeFileSync(claimFile, JSON.stringify({ pid: owner }));
    const next = await startEmbeddedPostgres({ dataDir, log });
    try {
      expect(messages).toContain(
        `stopping the embedded PostgreSQL (pid ${orphan.pid}) that ${dataDir}/postmaster.pid names: albumflow has no record of it, ` +
          `and the albumflow that ran on ${path.dirname(dataDir)} (pid ${owner}) is gone`,
      );
      expect(isRunning(orphan)).toBe(false);
      await ensureDatabase(connectionConfig(next.url));
    } finally {
      await next.stop();
    }
  }, 120_000);

  it.runIf(process.getuid?.() === 0)(
    'as root, says what to do when the postgres user can reach neither the data directory nor the place for its cluster',
    async () => {
      const locked = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-locked-'));
      fs.chmodSync(locked, 0o700);
      // The binaries' copy goes where postgres may enter, so that the cluster is what it cannot reach even
      // when this clone itself sits in a folder only root may enter.
      const open = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-open-'));
      fs.chmodSync(open, 0o755);
      try {
        const systemDirs = { state: path.join(locked, 'state'), cache: path.join(open, 'cache') };
        await expect(startEmbeddedPostgres({ dataDir: path.join(locked, 'data', 'postgres'), systemDirs, log })).rejects.toThrow(
          `as root, the embedded PostgreSQL runs as the OS user "postgres", which cannot reach ${path.join(locked, 'data', 'postgres')} ` +
            `(nor ${path.join(locked, 'state', 'postgres')}). Set DATABASE_URL to a PostgreSQL server, or run albumflow as a user other ` +
            'than root, or put the clone in a folder every user may enter (e.g. /srv/albumflow) and run `npm ci` there again',
        );
      } finally {
        fs.rmSync(locked, { recursive: true, force: true });
        fs.rmSync(open, { recursive: true, force: true });
      }
    },
  );

  it('refuses to take over a server whose owner still runs', async () => {
    await expect(startEmbeddedPostgres({ dataDir: path.join(root, 'main'), log })).rejects.toThrow(
      `albumflow (pid ${process.pid}) is already running on ${root}`,
    );
    expect(server.status().state).toBe('running');
  });
});
