import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionConfig, createPool, isUnavailable, type Pool } from '../../src/db/pool.js';
import { withTransaction } from '../../src/db/transaction.js';
import { eventually } from '../harness/albums.js';
import { capturedLogger, testConfig, testPool } from '../harness/env.js';

describe('a pool client that loses its connection while checked out (PostgreSQL restarting)', () => {
  const config = testConfig();
  let pool: Pool;
  let admin: Pool;

  beforeAll(() => {
    pool = testPool(config, 2);
    admin = testPool(config, 1);
  });

  afterAll(async () => {
    await pool.end();
    await admin.end();
  });

  async function terminateBackend(pid: number): Promise<void> {
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
  }

  it('fails the transaction that holds it instead of crashing the process, and the pool recovers', async () => {
    const failure = await withTransaction(pool, async (client) => {
      const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      // Between two statements, as a dispatcher transaction is while it awaits Temporal.
      await terminateBackend(rows[0]!.pid);
      await eventually(async () => {
        const { rows: alive } = await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [rows[0]!.pid]);
        expect(alive).toEqual([]);
      });
      await new Promise((resolve) => setTimeout(resolve, 100));
      return client.query('SELECT 1');
    }).then(
      () => undefined,
      (err: unknown) => err,
    );

    expect(failure).toBeInstanceOf(Error);
    expect(isUnavailable(failure)).toBe(true);
    const { rows } = await pool.query<{ ok: number }>('SELECT 1 AS ok');
    expect(rows).toEqual([{ ok: 1 }]);
  });
});

describe('an idle pool client that loses its connection', () => {
  const config = testConfig();

  it('is logged as a warning with its error, and the pool gives the next query a fresh connection', async () => {
    const { logger, lines } = capturedLogger('pool', 'warn');
    const pool = createPool(connectionConfig(config.databaseUrl), { max: 1, applicationName: 'albumflow-test', logger });
    const admin = testPool(config, 1);
    try {
      const { rows } = await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
      await eventually(async () => {
        const warning = lines
          .map((line) => JSON.parse(line) as { level: number; msg: string; err?: { code?: string } })
          .find((l) => l.level === 40);
        expect(warning?.msg).toMatch(/idle PostgreSQL connection/);
        expect(warning?.err?.code).toBe('57P01');
      });
      const { rows: again } = await pool.query<{ ok: number }>('SELECT 1 AS ok');
      expect(again).toEqual([{ ok: 1 }]);
    } finally {
      await pool.end();
      await admin.end();
    }
  });
});
