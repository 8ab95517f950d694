import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Pool } from '../../src/db/pool.js';
import { maxAttachmentsPerActivity, maxDownloadsInFlight } from '../../workflows/downloads.js';
import { albumWorkflowId } from '../../src/domain/keys.js';
import { eventually, newAlbumKey, signalAlbum, storeAlbumChildren } from '../harness/albums.js';
import { startTestWorker, testClient, testConfig, testPool, type TestWorker } from '../harness/env.js';
import { unique } from '../harness/random.js';
import { attachments, decisions } from '../harness/rows.js';
import { sendBody, startMediaServer, type MediaServer } from '../harness/servers/media.js';

describe('an album with more attachments than downloads allowed in flight', () => {
  const config = testConfig({ MAX_WAIT_MS: '60000', QUIET_PERIOD_MS: '60000' });
  const children = maxDownloadsInFlight + 40;
  let pool: Pool;
  let client: Client;
  let worker: TestWorker;
  let media: MediaServer;
  let requests = 0;
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));

  beforeAll(async () => {
    pool = testPool(config);
    client = await testClient(config);
    worker = await startTestWorker(config, pool);
    media = await startMediaServer({
      fallback: (req, res, hit) => {
        requests += 1;
        void released.then(() => sendBody('photo')(req, res, hit));
      },
    });
  });

  afterAll(async () => {
    release();
    await media?.close();
    await worker?.stop();
    await client?.connection.close();
    await pool?.end();
  });

  it(`keeps at most ${maxDownloadsInFlight} attachments downloading, ${maxAttachmentsPerActivity} per activity, and downloads every attachment`, async () => {
    const key = newAlbumKey(unique('bounded'));
    const arrivals = await storeAlbumChildren(
      pool,
      key,
      Array.from({ length: children }, (_, i) => ({ messageId: `m${i}`, index: i, total: children, urls: [media.url(`/m${i}.jpg`)] })),
    );
    const handle = await signalAlbum(client, config, key, arrivals);

    const pendingDownloads = async () =>
      (await handle.describe()).raw.pendingActivities?.filter((a) => a.activityType?.name === 'downloadAttachments').length ?? 0;
    const activities = maxDownloadsInFlight / maxAttachmentsPerActivity;
    await eventually(async () => {
      expect(await pendingDownloads()).toBe(activities);
      expect(requests).toBe(maxDownloadsInFlight);
    });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await pendingDownloads()).toBe(activities);
    expect(requests).toBe(maxDownloadsInFlight);

    release();
    await eventually(async () => {
      const downloaded = await attachments.count(pool, { workspace: key.workspace, status: 'downloaded' });
      expect(downloaded).toBe(children);
    }, 120_000);
    expect(await decisions.read(pool, { workflowId: albumWorkflowId(key) }, ['trigger'])).toEqual([{ trigger: 'expected_count_reached' }]);
    await handle.terminate('test done').catch(() => undefined);
  }, 180_000);
});
