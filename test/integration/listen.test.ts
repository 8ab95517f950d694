import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { listen, type Listener } from '../../src/db/listen.js';
import { connectionConfig, type Pool } from '../../src/db/pool.js';
import { testConfig, testPool } from '../harness/env.js';
import { unique } from '../harness/random.js';

const config = testConfig();
let pool: Pool;

beforeAll(() => {
  pool = testPool(config);
});

afterAll(async () => {
  await pool.end();
});

const eventually = { timeout: 30_000, interval: 100 };

async function notify(channel: string) {
  await pool.query('SELECT pg_notify($1, $2)', [channel, '']);
}

describe('listen', () => {
  it('calls back on each notification of its channel and reconnects after PostgreSQL drops the connection', async () => {
    const channel = unique('chan').replace('-', '_');
    let calls = 0;
    let losses = 0;
    const listener: Listener = listen({
      config: connectionConfig(config.databaseUrl),
      channel,
      onNotification: () => void calls++,
      onConnectionLost: () => void losses++,
      reconnectDelayMs: () => 100,
    });
    try {
      await vi.waitFor(() => expect(calls).toBe(1), eventually);

      await notify(channel);
      await vi.waitFor(() => expect(calls).toBe(2), eventually);
      await notify(`${channel}_other`);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(calls).toBe(2);

      const { rows } = await pool.query<{ terminated: boolean }>(
        `SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity WHERE query = $1`,
        [`LISTEN "${channel}"`],
      );
      expect(rows).toEqual([{ terminated: true }]);
      await vi.waitFor(() => expect(losses).toBeGreaterThanOrEqual(1), eventually);
      await vi.waitFor(() => expect(calls).toBe(3), eventually);

      await notify(channel);
      await vi.waitFor(() => expect(calls).toBe(4), eventually);
    } finally {
      await listener.close();
    }
    const { rows } = await pool.query(`SELECT 1 FROM pg_stat_activity WHERE query = $1`, [`LISTEN "${channel}"`]);
    expect(rows).toEqual([]);
    await notify(channel);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(calls).toBe(4);
  });

  it('keeps retrying while PostgreSQL refuses connections', async () => {
    let losses = 0;
    const listener = listen({
      config: { connectionString: 'postgresql://nobody@127.0.0.1:1/none' },
      channel: 'never',
      onNotification: () => undefined,
      onConnectionLost: () => void losses++,
      reconnectDelayMs: () => 20,
    });
    await vi.waitFor(() => expect(losses).toBeGreaterThanOrEqual(3), eventually);
    await listener.close();
    const after = losses;
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(losses).toBe(after);
  });
});
