import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RecordAndNotifyInput } from '../../workflows/activity-types.js';
import { createActivities } from '../../activities/index.js';
import { albumWorkflowId } from '../../src/domain/keys.js';
import type { AlbumView } from '../../src/domain/types.js';
import { eventually, newAlbumKey, storeAlbumChildren } from '../harness/albums.js';
import { deliveryTestbed, type Testbed } from '../harness/delivery.js';
import { testConfig, testLogger } from '../harness/env.js';
import { unique } from '../harness/random.js';
import { albums, decisions, notifications } from '../harness/rows.js';

describe('recordAndNotify: one activity records each decision with its notification, and outbound delivery sends them', () => {
  let bed: Testbed;
  let recordAndNotify: (input: RecordAndNotifyInput) => Promise<void>;

  beforeAll(async () => {
    bed = await deliveryTestbed({ DELIVERY_SCHEDULE: '0s,1s,1s,1s' });
    const config = testConfig({ DATABASE_URL: bed.databaseUrl });
    const activities = createActivities({ pool: bed.pool, config, logger: testLogger(config) });
    const env = new MockActivityEnvironment({ attempt: 1 }, { logger: new DefaultLogger('ERROR') });
    recordAndNotify = (input) => env.run(activities.recordAndNotify, input);
  });

  afterAll(() => bed.close());

  async function newAlbum(): Promise<RecordAndNotifyInput> {
    const key = newAlbumKey(unique('record-notify'));
    const workflowId = albumWorkflowId(key);
    await storeAlbumChildren(bed.pool, key, [
      { messageId: 'm0', index: 0, total: 2 },
      { messageId: 'm1', index: 1, total: 2 },
    ]);
    const decision = {
      seq: 1,
      trigger: 'expected_count_reached' as const,
      childMessageIds: ['m0', 'm1'],
      decidedAt: new Date().toISOString(),
    };
    const album = { workflowId, key, distinctChildren: 2, children: [] } as unknown as AlbumView;
    return {
      workflowId,
      body: { album },
      steps: [
        { type: 'album.ready', decision, record: { reviewReasons: [], reviewResolved: null } },
        { type: 'album.media_settled', decision, notice: 1 },
      ],
    };
  }

  async function stored(workflowId: string) {
    return {
      decisions: await decisions.read(bed.pool, { workflowId }, ['seq', 'child_message_ids']),
      notifications: (await notifications.read(bed.pool, { workflowId }, ['id'])).map(({ id }) => id),
      albumState: (await albums.read(bed.pool, { workflowId }, ['state']))[0]?.state,
    };
  }

  it('records the decision with album.ready, then album.media_settled, and returns while the receiver is down', async () => {
    const input = await newAlbum();
    const workspace = input.workflowId.split(':')[1]!;
    let down = true;
    await bed.endpoint(workspace, `${workspace}-hook`, {}, () => ({ status: down ? 503 : 204 }));
    await bed.startEngine();

    await recordAndNotify(input);

    expect(await stored(input.workflowId)).toEqual({
      decisions: [{ seq: 1, child_message_ids: ['m0', 'm1'] }],
      notifications: [`${input.workflowId}/1`, `${input.workflowId}/1/album.media_settled`],
      albumState: 'processed',
    });
    down = false;
    await eventually(() =>
      expect(bed.receiver.received(`${workspace}-hook`).map((request) => request.body.type)).toEqual(
        expect.arrayContaining(['album.ready', 'album.media_settled']),
      ),
    );
    // In order: album.media_settled waits while album.ready is pending.
    const types = bed.receiver.received(`${workspace}-hook`).map((request) => request.body.type);
    expect(types.lastIndexOf('album.ready')).toBeLessThan(types.indexOf('album.media_settled'));
  });

  it('repeats nothing that took effect when it is retried', async () => {
    const input = await newAlbum();
    await recordAndNotify(input);
    await recordAndNotify(input);
    const { rows } = await bed.pool.query<{ feed: number }>(
      `SELECT count(*)::int AS feed FROM feed WHERE notification_id LIKE $1 || '/%'`,
      [input.workflowId],
    );
    expect(await stored(input.workflowId)).toMatchObject({
      decisions: [{ seq: 1 }],
      notifications: [`${input.workflowId}/1`, `${input.workflowId}/1/album.media_settled`],
    });
    expect(rows[0]!.feed).toBe(2);
  });
});
