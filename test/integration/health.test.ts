import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../../src/http/app.js';
import type { Client } from '@temporalio/client';
import type { Pool } from '../../src/db/pool.js';
import { testClient, testConfig, testLogger, testPool } from '../helpers/env.js';

describe('health endpoints against the real PostgreSQL and Temporal', () => {
  const config = testConfig();
  let pool: Pool;
  let temporal: Client;
  let app: App;

  beforeAll(async () => {
    pool = testPool(config);
    temporal = await testClient(config);
    app = await buildApp({ config, pool, temporal, wakeDispatcher: () => undefined, logger: testLogger(config) });
  });

  afterAll(async () => {
    await app.close();
    await temporal.connection.close();
    await pool.end();
  });

  it('round-trips a row through the migrated schema', async () => {
    const { rows } = await pool.query<{ reason: string; raw: Buffer }>(
      `INSERT INTO quarantine (workspace, reason, raw) VALUES ($1, $2, $3) RETURNING reason, raw`,
      ['health-ws', 'probe', Buffer.from('{"x":1}')],
    );
    expect(rows[0]?.reason).toBe('probe');
    expect(rows[0]?.raw.toString()).toBe('{"x":1}');
  });

  it('reports ready when both PostgreSQL and Temporal answer', async () => {
    const response = await app.inject({ method: 'GET', url: '/readyz' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ status: 'ready', checks: { database: 'ok', temporal: 'ok' } });
  });

  it('reports unavailable with the failing check when PostgreSQL is unreachable', async () => {
    const deadPool = testPool({ ...config, databaseUrl: 'postgresql://nobody@127.0.0.1:1/none' });
    const broken = await buildApp({ config, pool: deadPool, temporal, wakeDispatcher: () => undefined, logger: testLogger(config) });
    try {
      const response = await broken.inject({ method: 'GET', url: '/readyz' });
      expect(response.statusCode).toBe(503);
      const body = response.json<{ status: string; checks: { database: string; temporal: string } }>();
      expect(body.status).toBe('unavailable');
      expect(body.checks.temporal).toBe('ok');
      expect(body.checks.database).not.toBe('ok');
    } finally {
      await broken.close();
      await deadPool.end();
    }
  });
});
