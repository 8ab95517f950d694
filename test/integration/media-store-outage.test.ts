import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { albumWorkflowId } from '../../src/domain/keys.js';
import { mediaLinksFor } from '../../src/media/links.js';
import { eventually, testAlbum, workspaceInbox } from '../harness/albums.js';
import { unique } from '../harness/random.js';
import { attachments, storedNotifications } from '../harness/rows.js';
import { startMediaServer, type MediaServer } from '../harness/servers/media.js';
import { s3Server, type S3Server } from '../harness/servers/s3.js';
import { startStack, type Stack } from '../harness/stack.js';

const sha256 = (body: Buffer) => crypto.createHash('sha256').update(body).digest('hex');

// A store server of this file's own (the run's is shared with the other files), stopped while an album
// arrives and started again: the album is decided as usual, its attachments stay pending and its
// media_settled waits, /readyz names the store; once it is back every file is stored.
describe('the S3 store down while an album arrives', () => {
  let s3: S3Server;
  let stack: Stack;
  let media: MediaServer;
  const bucket = `outage-${crypto.randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    s3 = await s3Server({ root: fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-s3-outage-')) });
    s3.createBucket(bucket);
    await s3.start();
    // This test process's S3 clients talk to this server (test files run in processes of their own).
    Object.assign(process.env, s3.env());
    stack = await startStack({ MEDIA_STORE: `s3://${bucket}/media`, QUIET_PERIOD_MS: '300' });
    media = await startMediaServer();
  });

  afterAll(async () => {
    await media?.close();
    await stack?.close();
    await s3?.stop();
  });

  const readiness = async () => {
    const response = await stack.app.inject({ method: 'GET', url: '/readyz' });
    return { status: response.statusCode, checks: response.json<{ checks: Record<string, string> }>().checks };
  };

  it('decides the album, keeps its attachments pending and media_settled waiting, then stores every file once the store is back', async () => {
    expect(await readiness()).toEqual({ status: 200, checks: { database: 'ok', temporal: 'ok', mediaStore: 'ok' } });
    await s3.stop();
    expect(await readiness()).toEqual({ status: 503, checks: { database: 'ok', temporal: 'ok', mediaStore: 'unreachable' } });

    const album = testAlbum(workspaceInbox(stack, stack.workspace, stack.secret), unique('alb'));
    const workflowId = albumWorkflowId(album.key);
    const bodies = [0, 1, 2].map(() => crypto.randomBytes(30_000));
    const urls = bodies.map((body) => media.file(body, 'image/jpeg'));
    for (const [index, url] of urls.entries()) {
      await album.send({ messageId: `m${index}`, index, total: 3, attachments: [{ type: 'image', url }] });
    }

    // Decided as usual, while every attachment stays pending with the store's failure as its last error.
    const decided = await album.until((status) => {
      expect(status.decisions.map((d) => d.trigger)).toEqual(['expected_count_reached']);
      expect(status.media).toMatchObject({ total: 3, pending: 3, downloaded: 0 });
    });
    expect(decided.state).toBe('processed');
    await eventually(async () => {
      const rows = await attachments.read(stack.pool, { workspace: stack.workspace, conversationId: album.key.conversationId }, [
        'status',
        'error',
      ]);
      expect(rows).toHaveLength(3);
      for (const row of rows) {
        expect(row.status).toBe('pending');
        expect(row.error).toMatch(/^the media store could not/);
      }
    });
    // Long enough for several tries of each file against the stopped store.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const types = async () => (await storedNotifications(stack.pool, workflowId)).map((n) => n.type);
    expect(await types()).toEqual(['album.ready']);
    expect((await album.status())!.media.pending).toBe(3);

    await s3.start();
    expect((await readiness()).checks.mediaStore).toBe('ok');
    const stored = await album.until((status) => expect(status.media).toMatchObject({ total: 3, downloaded: 3, pending: 0 }), 90_000);
    for (const [index, body] of bodies.entries()) {
      const child = stored.children.find((c) => c.messageId === `m${index}`)!;
      const digest = sha256(body);
      expect(child.attachments[0]).toMatchObject({ status: 'downloaded', sha256: digest, bytes: body.length });
      const object = path.join(s3.root, bucket, 'media', 'sha256', digest.slice(0, 2), digest);
      expect(fs.readFileSync(object).equals(body)).toBe(true);
    }
    await eventually(async () => expect(await types()).toEqual(['album.ready', 'album.media_settled']), 60_000);

    // A stored file while the store is down: the media route says so (503), and serves it once it is back.
    const link = new URL(await mediaLinksFor(stack.config, stack.pool).url(stack.workspace, sha256(bodies[0]!)));
    const fetchFile = () => stack.app.inject({ method: 'GET', url: `${link.pathname}${link.search}` });
    await s3.stop();
    const down = await fetchFile();
    expect(down.statusCode).toBe(503);
    expect(down.json<{ error: { code: string } }>().error.code).toBe('media_store_unavailable');
    await s3.start();
    const up = await fetchFile();
    expect(up.statusCode).toBe(200);
    expect(up.rawPayload.equals(bodies[0]!)).toBe(true);
  }, 180_000);
});
