import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Pool } from '../../src/db/pool.js';
import { maxAttachmentsPerActivity, maxDownloadsInFlight } from '../../workflows/downloads.js';
import { albumWorkflowId } from '../../src/domain/keys.js';
import { eventually, newAlbumKey, signalAlbum, storeAlbumChildren } from '../helpers/albums.js';
import { startTestWorker, testClient, testConfig, testPool, unique, type TestWorker } from '../helpers/env.js';

describe('an album with more attachments than downloads allowed in flight', () => {
  const config = testConfig({ MAX_WAIT_MS: '60000', QUIET_PERIOD_MS: '60000' });
  const children = maxDownloadsInFlight + 40;
  let pool: Pool;
  let client: Client;
  let worker: TestWorker;
  let server: http.Server;
  let base = '';
  let requests = 0;
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));

  beforeAll(async () => {
    pool = testPool(config);
    client = await testClient(config);
    worker = await startTestWorker(config, pool);
    server = http.createServer((_req, res) => {
      requests += 1;
      void released.then(() => res.writeHead(200, { 'content-type': 'image/jpeg' }).end('photo'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    release();
    server.closeAllConnections();
    server.close();
    await worker?.stop();
    await client?.connection.close();
    await pool?.end();
  });

  it(`keeps at most ${maxDownloadsInFlight} attachments downloading, ${maxAttachmentsPerActivity} per activity, and downloads every attachment`, async () => {
    const key = newAlbumKey(unique('bounded'));
    const arrivals = await storeAlbumChildren(
      pool,
      key,
      Array.from({ length: children }, (_, i) => ({ messageId: `m${i}`, index: i, total: children, urls: [`${base}/m${i}.jpg`] })),
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
      const { rows } = await pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM attachments a JOIN messages m ON m.id = a.message_pk
          WHERE m.workspace = $1 AND a.status = 'downloaded'`,
        [key.workspace],
      );
      expect(rows[0]!.n).toBe(children);
    }, 120_000);
    const { rows: decisions } = await pool.query<{ trigger: string }>(`SELECT trigger FROM decisions WHERE workflow_id = $1`, [
      albumWorkflowId(key),
    ]);
    expect(decisions).toEqual([{ trigger: 'expected_count_reached' }]);
    await handle.terminate('test done').catch(() => undefined);
  }, 180_000);
});
