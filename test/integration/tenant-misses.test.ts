// Lookups that miss (an unknown workspace, a signature no secret matches, an unknown token) read the tenant
// tables again, so that an entry another process just added is found; a flood of them must not keep the
// database busy with reads back to back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry as metrics } from '../../src/common/metrics.js';
import { generateKey, KeyRing } from '../../src/common/secret-key.js';
import type { Pool } from '../../src/db/pool.js';
import { createRegistry, type TenantRegistry } from '../../src/tenants/registry.js';
import { freshDatabase, testConfig, testLogger, testPool } from '../harness/env.js';
import { unique } from '../harness/random.js';

let pool: Pool;
let tenants: TenantRegistry;

async function reloads(reason: string): Promise<number> {
  const metric = await metrics.getSingleMetric('albumflow_tenant_reloads_total')!.get();
  return metric.values.find((value) => value.labels.reason === reason)?.value ?? 0;
}

/** Adds a workspace without the notification a change sends: only a read of the tables finds it. */
async function addQuietly(name: string): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query(`SET session_replication_role = replica`);
    await client.query(`INSERT INTO workspaces (name) VALUES ($1)`, [name]);
  } finally {
    await client.query(`RESET session_replication_role`);
    client.release();
  }
}

beforeAll(async () => {
  const config = testConfig({ DATABASE_URL: await freshDatabase() });
  pool = testPool(config);
  // The backstop out of the way: every read in this file is one that misses asked for.
  tenants = createRegistry({
    config,
    pool,
    logger: testLogger(config),
    tokens: new Map(),
    tokenLabel: 'API_TOKENS',
    keys: new KeyRing([generateKey()]),
    reloadIntervalMs: 3_600_000,
  });
  await tenants.start();
});

afterAll(async () => {
  await tenants?.close();
  await pool?.end();
});

describe('lookups that miss', () => {
  it('read the tables at most four times a second under a flood, and still find an entry added just before', async () => {
    const before = await reloads('miss');
    const floodMs = 2_000;
    const started = Date.now();
    let lookups = 0;
    // 32 senders of lookups that miss, each asking again as soon as it is answered.
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (Date.now() - started < floodMs) {
          await tenants.find(() => tenants.workspace(unique('nobody')));
          lookups += 1;
        }
      }),
    );
    const elapsedMs = Date.now() - started;
    const reads = (await reloads('miss')) - before;
    expect(lookups).toBeGreaterThan(reads * 4);
    // One read every 250 ms at most, the first at once.
    expect(reads).toBeLessThanOrEqual(Math.floor(elapsedMs / 250) + 1);
    expect(reads).toBeGreaterThanOrEqual(2);

    // Still: an entry committed before a lookup is found by it, though nothing told this registry.
    const name = unique('quiet-ws');
    await addQuietly(name);
    expect(await tenants.find(() => tenants.workspace(name))).toMatchObject({ name, source: 'database' });
  });
});
