// The notify activity records a notification for outbound delivery and sends nothing itself: the engine
// (src/delivery/) sends it the Standard Webhooks way, with its media links minted at each attempt.
import crypto from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNotifyActivities } from '../../activities/notify.js';
import { notificationsTotal } from '../../src/common/metrics.js';
import type { AlbumView } from '../../src/domain/types.js';
import type { NotifyInput, NotifyOutcome } from '../../workflows/activity-types.js';
import { eventually } from '../harness/albums.js';
import { deliveryTestbed, type Testbed } from '../harness/delivery.js';
import { testConfig, testLogger } from '../harness/env.js';
import { unique } from '../harness/random.js';
import { notifications } from '../harness/rows.js';
import type { Pool } from '../../src/db/pool.js';

const attachment = (status: 'downloaded' | 'pending', sha256: string | null) => ({
  position: 0,
  status,
  contentType: sha256 ? 'image/jpeg' : null,
  bytes: sha256 ? 1234 : null,
  sha256,
  error: null,
});

/** An album.ready of two children, one with its file downloaded, of an album stored (notifications are recorded only while it is). */
async function albumReady(pool: Pool, workspace: string) {
  const workflowId = `album:${workspace}:whatsapp:acc_1:conv_1:alb_1`;
  const sha256 = crypto.randomBytes(32).toString('hex');
  const album = {
    workflowId,
    key: { workspace, provider: 'whatsapp', accountId: 'acc_1', conversationId: 'conv_1', albumId: 'alb_1' },
    distinctChildren: 2,
    children: [
      { messageId: 'm1', attachments: [attachment('downloaded', sha256)] },
      { messageId: 'm2', attachments: [attachment('pending', null)] },
    ],
    media: { total: 2, downloaded: 1, pending: 1 },
  } as unknown as AlbumView;
  const decision = {
    seq: 1,
    trigger: 'expected_count_reached' as const,
    childMessageIds: ['m1', 'm2'],
    decidedAt: '2026-09-29T10:00:00.000Z',
  };
  const input: NotifyInput = { workflowId, seq: 1, type: 'album.ready', album, decision };
  await pool.query(
    `INSERT INTO albums (workspace, provider, account_id, conversation_id, album_id, workflow_id) VALUES ($1, 'whatsapp', 'acc_1', 'conv_1', 'alb_1', $2)`,
    [workspace, workflowId],
  );
  return { id: `${workflowId}/1`, workflowId, sha256, album, decision, input };
}

async function recordedCount(outcome: NotifyOutcome): Promise<number> {
  const metric = await notificationsTotal.get();
  return metric.values.find((v) => v.labels.type === 'album.ready' && v.labels.outcome === outcome)?.value ?? 0;
}

describe('the notify activity records for outbound delivery, and the engine delivers', () => {
  let bed: Testbed;
  let notify: (input: NotifyInput) => Promise<{ id: string; outcome: NotifyOutcome }>;

  beforeAll(async () => {
    bed = await deliveryTestbed({ DELIVERY_SCHEDULE: '0s,1s,1s,1s' });
    const config = testConfig({ DATABASE_URL: bed.databaseUrl });
    const activities = createNotifyActivities({ pool: bed.pool, config, logger: testLogger(config) });
    const env = new MockActivityEnvironment({ attempt: 1 }, { logger: new DefaultLogger('ERROR') });
    notify = (input) => env.run(activities.notify, input);
  });

  afterAll(() => bed.close());

  it('records it once, without links; the engine sends it signed, its media_url minted at the attempt', async () => {
    const workspace = unique('ws');
    const n = await albumReady(bed.pool, workspace);
    await bed.endpoint(workspace, `${workspace}-hook`);
    const before = await recordedCount('recorded');

    expect(await notify(n.input)).toEqual({ id: n.id, outcome: 'recorded' });
    expect(await notify(n.input)).toEqual({ id: n.id, outcome: 'already' });
    expect(await recordedCount('recorded')).toBe(before + 1);
    const [row] = await notifications.read(bed.pool, { id: n.id }, ['workspace', 'payload']);
    expect(row).toEqual({ workspace, payload: { album: n.album, decision: n.decision } });

    await bed.startEngine();
    await eventually(() => expect(bed.receiver.received(`${workspace}-hook`)).toHaveLength(1));
    const [request] = bed.receiver.received(`${workspace}-hook`);
    const linked = expect.stringMatching(
      new RegExp(`^https://albums\\.example/workspaces/${workspace}/media/${n.sha256}\\?expires=\\d+&sig=`),
    ) as string;
    expect(request!.body).toEqual({
      type: 'album.ready',
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) as string,
      data: {
        id: n.id,
        album: {
          ...n.album,
          children: [{ messageId: 'm1', attachments: [{ ...attachment('downloaded', n.sha256), media_url: linked }] }, n.album.children[1]],
        },
        decision: n.decision,
      },
    });
  });

  it('does not wait for a receiver that is down: recorded at once, delivered once it answers, under one webhook-id', async () => {
    const workspace = unique('ws');
    const n = await albumReady(bed.pool, workspace);
    const answers = [503, 503];
    await bed.endpoint(workspace, `${workspace}-down`, {}, () => ({ status: answers.shift() ?? 204 }));

    expect(await notify(n.input)).toEqual({ id: n.id, outcome: 'recorded' });
    await eventually(() => expect(bed.receiver.received(`${workspace}-down`)).toHaveLength(3), 30_000);
    expect(new Set(bed.receiver.received(`${workspace}-down`).map((request) => request.webhookId)).size).toBe(1);
  });

  it('records it with its feed entry and no delivery when no endpoint takes its workspace', async () => {
    const n = await albumReady(bed.pool, unique('ws'));
    expect(await notify(n.input)).toEqual({ id: n.id, outcome: 'recorded' });
    const { rows } = await bed.pool.query<{ feed: number; deliveries: number }>(
      `SELECT (SELECT count(*) FROM feed WHERE notification_id = $1)::int AS feed,
              (SELECT count(*) FROM deliveries WHERE notification_id = $1)::int AS deliveries`,
      [n.id],
    );
    expect(rows[0]).toEqual({ feed: 1, deliveries: 0 });
  });
});
