import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { workflowTypes } from '../../workflows/definitions.js';
import type { PurgeCounts } from '../../src/domain/lifetime.js';
import { parseMediaStore } from '../../src/common/config.js';
import { collectObject, type RemovalFailure } from '../../src/db/media-collector.js';
import { MediaStoreError, openMediaStore, type MediaStore } from '../../src/media/store.js';
import { eventually, settled, testAlbum, workspaceInbox, type TestAlbum } from '../harness/albums.js';
import { s3Environment, testBucket } from '../harness/env.js';
import { jpeg } from '../harness/images.js';
import { unique } from '../harness/random.js';
import { startMediaServer, type MediaServer } from '../harness/servers/media.js';
import { startRefusingS3, type RefusingS3 } from '../harness/servers/refusing-s3.js';
import { startStack, type Stack } from '../harness/stack.js';

const sha256 = (body: Buffer) => crypto.createHash('sha256').update(body).digest('hex');

interface QueuedObject {
  failures: number;
  last_error: string | null;
  /** Seconds from now; null when not set aside. */
  retry_in: number | null;
  failing: boolean;
}

// The stack's S3 clients go through a proxy in front of the run's S3 server (the Versity S3 Gateway) that
// answers the deletes the test names 403 AccessDenied, as a bucket does to credentials without
// s3:DeleteObject or to an object under an object lock. The test reads the bucket straight from the server.
describe('a store that refuses to delete an object', () => {
  let proxy: RefusingS3;
  let stack: Stack;
  let media: MediaServer;
  let direct: MediaStore;
  let proxied: MediaStore;
  const token = unique('refused-token');
  const adminToken = unique('refused-admin');

  beforeAll(async () => {
    const bucket = testBucket('media');
    proxy = await startRefusingS3(inject('s3Endpoint'));
    // This test process's S3 clients of a MEDIA_STORE (the stack's worker and app) use the proxy.
    process.env.AWS_ENDPOINT_URL_S3 = proxy.endpoint;
    stack = await startStack((workspace) => ({
      MEDIA_STORE: bucket,
      QUIET_PERIOD_MS: '200',
      LATE_WINDOW_MS: '300',
      API_TOKENS: JSON.stringify({ [token]: [workspace], [adminToken]: ['*'] }),
    }));
    media = await startMediaServer();
    const spool = () => fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-refused-'));
    direct = openMediaStore({ dir: spool(), store: parseMediaStore(bucket) }, s3Environment());
    proxied = openMediaStore({ dir: spool(), store: parseMediaStore(bucket) }, { ...s3Environment(), AWS_ENDPOINT_URL_S3: proxy.endpoint });
  });

  afterAll(async () => {
    direct?.close();
    proxied?.close();
    await media?.close();
    await stack?.close();
    await proxy?.close();
  });

  const queued = async (sha: string): Promise<QueuedObject | undefined> => {
    const { rows } = await stack.pool.query<QueuedObject>(
      `SELECT failures, last_error, extract(epoch FROM retry_at - now())::float AS retry_in, failing_since IS NOT NULL AS failing
         FROM media_garbage WHERE sha256 = $1`,
      [sha],
    );
    return rows[0];
  };
  const deleteFailuresMetric = async () => {
    const response = await stack.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${adminToken}` } });
    expect(response.statusCode).toBe(200);
    return Number(/^albumflow_media_delete_failures (\d+)$/m.exec(response.body)?.[1]);
  };
  const albumsPage = async (as: string) =>
    (await stack.app.inject({ method: 'GET', url: '/ui', headers: { authorization: `Bearer ${as}`, accept: 'text/html' } })).body;
  const retentionRun = () =>
    stack.client.workflow.execute(workflowTypes.retention, {
      workflowId: unique('retention-run'),
      taskQueue: stack.config.temporal.taskQueue,
      args: [{}],
    }) as Promise<PurgeCounts>;

  /** An album of one photo, closed; `messageId` unique within its conversation. */
  async function closedAlbum(album: TestAlbum, messageId: string, body: Buffer): Promise<void> {
    const attachments = [{ type: 'image', url: media.file(body, 'image/jpeg'), mime_type: 'image/jpeg' }];
    await album.send({ messageId, index: 0, total: 1, attachments });
    await album.until((status) => {
      settled(status);
      expect(status.state).toBe('closed');
      expect(status.media.downloaded).toBe(1);
    });
  }

  it('an erasure sets the refused object aside, removes the next one in the same pass and is done; a later pass removes it once the store allows it', async () => {
    const inbox = workspaceInbox(stack, stack.workspace, stack.secret);
    const conversationId = unique('conv');
    const bodies = [await jpeg(64, 48, 20), await jpeg(64, 48, 200)];
    // The collector takes objects queued together in the order of their hashes: the refused one first.
    const [refusedBody, removedBody] = [...bodies].sort((a, b) => (sha256(a) < sha256(b) ? -1 : 1)) as [Buffer, Buffer];
    const refused = sha256(refusedBody);
    const removed = sha256(removedBody);
    await closedAlbum(testAlbum(inbox, unique('alb-refused'), conversationId), 'm-refused', refusedBody);
    await closedAlbum(testAlbum(inbox, unique('alb-removed'), conversationId), 'm-removed', removedBody);
    expect(await direct.stat(refused)).not.toBeNull();
    expect(await direct.stat(removed)).not.toBeNull();
    proxy.refuseDeletes((key) => key.includes(refused));

    const startedAt = Date.now();
    const erase = await stack.app.inject({
      method: 'DELETE',
      url: `/workspaces/${stack.workspace}/conversations/whatsapp/acc_1/${conversationId}`,
      headers: { authorization: `Bearer ${token}` },
    });
    expect(erase.statusCode, erase.body).toBe(202);
    const { id } = erase.json<{ id: string }>();
    // Done in its usual time (a pause of 5 s before its last pass): the refusal holds nothing up.
    const receipt = await eventually(async () => {
      const response = await stack.app.inject({
        method: 'GET',
        url: `/workspaces/${stack.workspace}/erasures/${id}`,
        headers: { authorization: `Bearer ${token}` },
      });
      const body = response.json<{ state: string; counts: Record<string, number> }>();
      expect(body.state).toBe('done');
      return body;
    }, 45_000);
    expect(Date.now() - startedAt).toBeLessThan(45_000);
    expect(receipt.counts).toMatchObject({ albums: 2, messages: 2, attachments: 2, mediaObjects: 1, mediaFailed: 1 });
    expect(proxy.refused.some((key) => key.includes(refused))).toBe(true);
    expect(await direct.stat(refused)).not.toBeNull();
    expect(await direct.stat(removed)).toBeNull();

    // Kept in the queue, set aside for an hour with the store's answer (no credential in it).
    const setAside = await queued(refused);
    expect(setAside).toMatchObject({ failures: 1, failing: false });
    expect(setAside!.last_error).toMatch(/^the media store could not remove an object: .*Access ?Denied.*HTTP 403/);
    const { accessKeyId, secretAccessKey } = inject('s3Credentials');
    expect(setAside!.last_error).not.toContain(secretAccessKey);
    expect(setAside!.last_error).not.toContain(accessKeyId);
    expect(setAside!.retry_in).toBeGreaterThan(3_500);
    expect(setAside!.retry_in).toBeLessThanOrEqual(3_600);
    expect(await queued(removed)).toBeUndefined();

    // Visible: the metric, and the albums page of a token that reaches every workspace.
    expect(await deleteFailuresMetric()).toBe(1);
    expect(await albumsPage(adminToken)).toMatch(/data-figure="media-delete-failures">1 media file the store refused to delete/);
    expect(await albumsPage(token)).not.toContain('media-delete-failures');

    // A collector pass before its time passes it by.
    const early = await retentionRun();
    expect(early).toMatchObject({ mediaObjects: 0, mediaFailed: 0 });
    expect(await queued(refused)).toMatchObject({ failures: 1 });
    expect(await direct.stat(refused)).not.toBeNull();

    // The store allows the delete again (the permission granted, the lock expired), and its time has come.
    proxy.refuseDeletes(null);
    await stack.pool.query(`UPDATE media_garbage SET retry_at = now() WHERE sha256 = $1`, [refused]);
    const later = await retentionRun();
    expect(later).toMatchObject({ mediaObjects: 1, mediaBytes: refusedBody.length, mediaFailed: 0 });
    expect(await direct.stat(refused)).toBeNull();
    expect(await queued(refused)).toBeUndefined();
    expect(await deleteFailuresMetric()).toBe(0);
    expect(await albumsPage(adminToken)).not.toContain('media-delete-failures');
  }, 180_000);

  it('tells a refusal (403) from a store that does not answer (503), and sets the latter aside only after the grace', async () => {
    const body = crypto.randomBytes(3000);
    const { sha256: sha } = await direct.write(Readable.from([body]), { maxBytes: body.length, contentType: 'image/jpeg' });
    await stack.pool.query(`INSERT INTO media_garbage (sha256) VALUES ($1)`, [sha]);
    const failureOf = (err: unknown): RemovalFailure | null =>
      err instanceof MediaStoreError ? { refused: err.refused, error: err.message } : null;
    const collect = (outageGraceMs: number) => collectObject(stack.pool, sha, () => proxied.remove(sha), { failureOf, outageGraceMs });

    proxy.refuseDeletes((key) => key.includes(sha), 'unavailable');
    // Within the grace: not set aside, due again at once; the caller may try again.
    expect(await collect(60_000)).toMatchObject({ removed: false, failure: { refused: false }, setAside: false });
    expect(await queued(sha)).toMatchObject({ failures: 0, retry_in: null, failing: true });
    expect(await collect(60_000)).toMatchObject({ setAside: false });
    // The store has not answered for this object for longer than the grace: set aside.
    await stack.pool.query(`UPDATE media_garbage SET failing_since = now() - interval '2 minutes' WHERE sha256 = $1`, [sha]);
    const down = await collect(60_000);
    expect(down).toMatchObject({ removed: false, failure: { refused: false }, setAside: true });
    expect((down as { failure: RemovalFailure }).failure.error).toMatch(/ServiceUnavailable|HTTP 503/);
    const afterOutage = await queued(sha);
    expect(afterOutage).toMatchObject({ failures: 1, failing: false });
    expect(afterOutage!.retry_in).toBeGreaterThan(3_500);

    // Refused on its next try: set aside at once, for twice as long.
    await stack.pool.query(`UPDATE media_garbage SET retry_at = now() WHERE sha256 = $1`, [sha]);
    proxy.refuseDeletes((key) => key.includes(sha), 'denied');
    expect(await collect(60_000)).toMatchObject({ failure: { refused: true }, setAside: true });
    const afterRefusal = await queued(sha);
    expect(afterRefusal).toMatchObject({ failures: 2 });
    expect(afterRefusal!.retry_in).toBeGreaterThan(7_100);
    expect(await direct.stat(sha)).not.toBeNull();

    proxy.refuseDeletes(null);
    expect(await collect(60_000)).toEqual({ removed: true, bytes: body.length });
    expect(await queued(sha)).toBeUndefined();
    expect(await direct.stat(sha)).toBeNull();
  });
});
