import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RecordAndNotifyInput, RecordAndNotifyResult } from '../../workflows/activity-types.js';
import { createActivities } from '../../activities/index.js';
import type { Config } from '../../src/common/config.js';
import type { Pool } from '../../src/db/pool.js';
import { albumWorkflowId } from '../../src/domain/keys.js';
import type { AlbumView } from '../../src/domain/types.js';
import { newAlbumKey, storeAlbumChildren } from '../harness/albums.js';
import { testConfig, testLogger, testPool } from '../harness/env.js';
import { unique } from '../harness/random.js';
import { albums, decisions, notifications } from '../harness/rows.js';
import { startNotifyReceiver, type NotifyReceiver } from '../harness/servers/notify.js';

interface Delivery {
  type: string;
  /** Decisions of the album in PostgreSQL when the request arrived. */
  recordedDecisions: number;
}

describe('recordAndNotify: one activity records a decision and sends its notifications, in order', () => {
  let pool: Pool;
  let config: Config;
  let receiver: NotifyReceiver;
  const deliveries: Delivery[] = [];
  let workflowIdOfTest = '';

  beforeAll(async () => {
    receiver = await startNotifyReceiver({
      path: '/hook',
      onRequest: async (request) => {
        const { type } = JSON.parse(request.body.toString()) as { type: string };
        deliveries.push({ type, recordedDecisions: await decisions.count(pool, { workflowId: workflowIdOfTest }) });
      },
    });
    config = testConfig({ NOTIFY_URL: receiver.url, NOTIFY_SECRET: 'record-notify-secret' });
    pool = testPool(config);
  });

  afterAll(async () => {
    await receiver.close();
    await pool.end();
  });

  async function newAlbum(): Promise<RecordAndNotifyInput> {
    const key = newAlbumKey(unique('record-notify'));
    const workflowId = albumWorkflowId(key);
    workflowIdOfTest = workflowId;
    deliveries.length = 0;
    await storeAlbumChildren(pool, key, [
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

  function recordAndNotify(input: RecordAndNotifyInput): Promise<RecordAndNotifyResult> {
    const activities = createActivities({ pool, config, logger: testLogger(config) });
    const env = new MockActivityEnvironment({ attempt: 1 }, { logger: new DefaultLogger('ERROR') });
    return env.run(activities.recordAndNotify, input);
  }

  async function stored(workflowId: string) {
    return {
      decisions: await decisions.read(pool, { workflowId }, ['seq', 'child_message_ids']),
      notifications: await notifications.read(pool, { workflowId }, ['id', 'status'], { orderBy: ['id'] }),
      albumState: (await albums.read(pool, { workflowId }, ['state']))[0]?.state,
    };
  }

  it('stores the decision before album.ready, then sends album.media_settled with the same body', async () => {
    const input = await newAlbum();

    await expect(recordAndNotify(input)).resolves.toEqual({ refused: [] });

    expect(deliveries).toEqual([
      { type: 'album.ready', recordedDecisions: 1 },
      { type: 'album.media_settled', recordedDecisions: 1 },
    ]);
    expect(await stored(input.workflowId)).toEqual({
      decisions: [{ seq: 1, child_message_ids: ['m0', 'm1'] }],
      notifications: [
        { id: `${input.workflowId}/1`, status: 'delivered' },
        { id: `${input.workflowId}/1/album.media_settled`, status: 'delivered' },
      ],
      albumState: 'processed',
    });
  });

  it('goes on after a notification refused for good, and a retry repeats nothing that took effect', async () => {
    const input = await newAlbum();
    receiver.answers.push(400, 503);

    const failure = await recordAndNotify(input).then(
      () => expect.fail('a 503 must fail the attempt'),
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect((failure as ApplicationFailure).nonRetryable).toBe(false);
    expect(deliveries.map((d) => d.type)).toEqual(['album.ready', 'album.media_settled']);

    const retried = await recordAndNotify(input);

    expect(retried.refused.map(({ type, seq }) => ({ type, seq }))).toEqual([{ type: 'album.ready', seq: 1 }]);
    expect(retried.refused[0]?.error).toContain('HTTP 400');
    // The retry asked the receiver only for the notification that had failed for a while, not the refused one.
    expect(deliveries.map((d) => d.type)).toEqual(['album.ready', 'album.media_settled', 'album.media_settled']);
    expect(await stored(input.workflowId)).toMatchObject({
      decisions: [{ seq: 1 }],
      notifications: [
        { id: `${input.workflowId}/1`, status: 'failed' },
        { id: `${input.workflowId}/1/album.media_settled`, status: 'delivered' },
      ],
    });
  });
});
