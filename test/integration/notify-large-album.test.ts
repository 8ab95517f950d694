import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNotifyActivities } from '../../activities/notify.js';
import type { NotifyInput } from '../../workflows/activity-types.js';
import type { Pool } from '../../src/db/pool.js';
import { albumStatusFromDatabase, findAlbum } from '../../src/db/status.js';
import { albumWorkflowId } from '../../src/domain/keys.js';
import { newAlbumKey, storeAlbumChildren } from '../harness/albums.js';
import { testConfig, testLogger, testPool } from '../harness/env.js';
import { unique } from '../harness/random.js';
import { notifications } from '../harness/rows.js';
import { albumProfileOf } from '../../src/platforms/index.js';

describe('a notification whose album body is too large to pass through Temporal', () => {
  const config = testConfig();
  let pool: Pool;

  beforeAll(() => {
    pool = testPool(config);
  });

  afterAll(async () => {
    await pool.end();
  });

  it('carries the album body the notify activity reads from PostgreSQL', async () => {
    const key = newAlbumKey(unique('large'));
    const workflowId = albumWorkflowId(key);
    await storeAlbumChildren(pool, key, [
      { messageId: 'm0', index: 0, total: 2, caption: 'first', urls: ['https://media.example/0.jpg'] },
      { messageId: 'm1', index: 1, total: 2, urls: [null] },
    ]);
    const decision = {
      seq: 1,
      trigger: 'expected_count_reached' as const,
      childMessageIds: ['m0', 'm1'],
      decidedAt: new Date().toISOString(),
    };
    await pool.query(`INSERT INTO decisions (workflow_id, seq, trigger, child_message_ids, decided_at) VALUES ($1, 1, $2, $3, $4)`, [
      workflowId,
      decision.trigger,
      decision.childMessageIds,
      decision.decidedAt,
    ]);
    const input: NotifyInput = { workflowId, seq: 1, type: 'album.ready', albumKey: key, decision };

    const { notify } = createNotifyActivities({ pool, config, logger: testLogger(config) });
    const env = new MockActivityEnvironment({ attempt: 1 }, { logger: new DefaultLogger('ERROR') });
    const outcome = await env.run(notify, input);

    expect(outcome).toEqual({ id: `${workflowId}/1`, outcome: 'recorded' });
    const rows = (await notifications.read(pool, { id: `${workflowId}/1` }, ['payload'])) as Array<{
      payload: { album: unknown; decision: unknown };
    }>;
    const album = (await findAlbum(pool, key))!;
    const expected = await albumStatusFromDatabase(pool, album, key, { childOrder: albumProfileOf(album.source).childOrder });
    expect(rows[0]!.payload.album).toEqual(JSON.parse(JSON.stringify(expected)));
    expect(expected).toMatchObject({ distinctChildren: 2, decisions: [{ seq: 1, childMessageIds: ['m0', 'm1'] }] });
    expect(rows[0]!.payload.decision).toEqual(decision);
  });
});
