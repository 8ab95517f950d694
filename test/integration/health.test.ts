import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../../src/process/app.js';
import type { Client } from '@temporalio/client';
import type { Pool } from '../../src/db/pool.js';
import { parseMediaStore } from '../../src/common/config.js';
import { openMediaStore } from '../../src/media/store.js';
import { testBucket, testClient, testConfig, testLogger, testPool } from '../harness/env.js';

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

  it('reports ready when PostgreSQL, Temporal and the media store answer', async () => {
    const response = await app.inject({ method: 'GET', url: '/readyz' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ status: 'ready', checks: { database: 'ok', temporal: 'ok', mediaStore: 'ok' } });
  });

  it('tells only an admin token why PostgreSQL is unreachable: the open answer is a reason code, without the driver’s message', async () => {
    const adminToken = 'health-admin-token';
    const scopedToken = 'health-scoped-token';
    const tokens = new Map([
      [adminToken, ['*']],
      [scopedToken, ['health-ws']],
    ]);
    const deadPool = testPool({ ...config, databaseUrl: 'postgresql://nobody@127.0.0.1:1/none' });
    const broken = await buildApp({
      config,
      pool: deadPool,
      temporal,
      wakeDispatcher: () => undefined,
      logger: testLogger(config),
      tokens,
    });
    const readiness = async (headers: Record<string, string> = {}) => {
      const response = await broken.inject({ method: 'GET', url: '/readyz', headers });
      expect(response.statusCode).toBe(503);
      return response;
    };
    try {
      const notAdmin: Array<Record<string, string>> = [
        {},
        { authorization: `Bearer ${scopedToken}` },
        { authorization: 'Bearer not-a-token' },
      ];
      for (const headers of notAdmin) {
        const response = await readiness(headers);
        expect(response.json()).toEqual({ status: 'unavailable', checks: { database: 'unreachable', temporal: 'ok', mediaStore: 'ok' } });
        expect(response.body).not.toMatch(/127\.0\.0\.1|ECONNREFUSED/);
      }
      const admin = (await readiness({ authorization: `Bearer ${adminToken}` })).json<{ checks: object; details: { database: string } }>();
      expect(admin.checks).toEqual({ database: 'unreachable', temporal: 'ok', mediaStore: 'ok' });
      expect(admin.details.database).toMatch(/ECONNREFUSED 127\.0\.0\.1:1/);
    } finally {
      await broken.close();
      await deadPool.end();
    }
  });

  it('names the media store: unreachable when nothing answers at its endpoint, failed when it refuses the keys', async () => {
    const bucket = testBucket();
    const stores = {
      unreachable: openMediaStore(
        { dir: config.media.dir, store: parseMediaStore(bucket) },
        { ...process.env, AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:1' },
      ),
      failed: openMediaStore(
        { dir: config.media.dir, store: parseMediaStore(bucket) },
        { ...process.env, AWS_SECRET_ACCESS_KEY: 'wrong-secret' },
      ),
      ok: openMediaStore({ dir: config.media.dir, store: parseMediaStore(bucket) }),
    };
    for (const [reason, store] of Object.entries(stores)) {
      const withStore = await buildApp({ config, pool, temporal, wakeDispatcher: () => undefined, logger: testLogger(config), store });
      try {
        const response = await withStore.inject({ method: 'GET', url: '/readyz' });
        expect(response.statusCode, reason).toBe(reason === 'ok' ? 200 : 503);
        expect(response.json(), reason).toEqual({
          status: reason === 'ok' ? 'ready' : 'unavailable',
          checks: { database: 'ok', temporal: 'ok', mediaStore: reason },
        });
        expect(response.body).not.toContain('wrong-secret');
      } finally {
        await withStore.close();
        store.close();
      }
    }
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
