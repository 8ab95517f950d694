import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { thumbnailLimits } from '../../src/ui/thumbnails.js';
import { unique } from '../helpers/env.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { settled, testAlbum, workspaceInbox } from '../browser/albums.js';
import { startMediaServer, variant, type MediaServer } from '../browser/media-files.js';

const photos = 100;
const MiB = 1024 * 1024;

describe(`thumbnails of a ${photos}-photo album, all asked for at once`, () => {
  let stack: Stack;
  let media: MediaServer;
  const workspace = unique('ws-thumbnails');
  const token = unique('thumbnails-token');
  let hashes: string[] = [];

  beforeAll(async () => {
    stack = await startStack({
      QUIET_PERIOD_MS: '200',
      MAX_WAIT_MS: '120000',
      WORKSPACE_SECRETS: JSON.stringify({ [workspace]: ['thumbnails-secret'] }),
      API_TOKENS: JSON.stringify({ [token]: [workspace] }),
    });
    media = await startMediaServer();
    // A 12-megapixel phone photo with a photo's entropy; each child gets a copy with its own bytes.
    const photo = await sharp({ create: { width: 4000, height: 3000, channels: 3, background: '#789', noise: { type: 'gaussian', mean: 128, sigma: 8 } } })
      .jpeg({ quality: 80 })
      .toBuffer();
    const album = testAlbum(workspaceInbox(stack, workspace, 'thumbnails-secret'), unique('alb'));
    for (let i = 0; i < photos; i++) {
      const url = media.file(variant(photo, `photo ${i}`), 'image/jpeg');
      await album.send({ messageId: `m${i}`, index: i, total: photos, attachments: [{ type: 'image', url, mime_type: 'image/jpeg' }] });
    }
    const status = await album.until((s) => {
      settled(s);
      expect(s.media.downloaded).toBe(photos);
    }, 170_000);
    hashes = status.children.map((child) => child.attachments[0]!.sha256!);
  }, 180_000);

  afterAll(async () => {
    await media?.close();
    await stack?.close();
  });

  it('makes them a few at a time and keeps the memory they take bounded', async () => {
    expect(new Set(hashes).size).toBe(photos);
    const before = process.memoryUsage().rss;
    let peakRss = before;
    let peakInProcess = 0;
    const sampler = setInterval(() => {
      peakRss = Math.max(peakRss, process.memoryUsage().rss);
      peakInProcess = Math.max(peakInProcess, sharp.counters().process);
    }, 5);
    const responses = await Promise.all(
      hashes.map((sha256) =>
        stack.app.inject({
          method: 'GET',
          url: `/workspaces/${encodeURIComponent(workspace)}/media/${sha256}/thumbnail`,
          headers: { authorization: `Bearer ${token}` },
        }),
      ),
    );
    clearInterval(sampler);

    expect(responses.map((r) => [r.statusCode, r.headers['content-type']])).toEqual(hashes.map(() => [200, 'image/webp']));
    expect(await sharp(responses[0]!.rawPayload).metadata()).toMatchObject({ width: 400, height: 300 });
    expect(peakInProcess).toBeGreaterThan(0);
    expect(peakInProcess).toBeLessThanOrEqual(thumbnailLimits.concurrency);
    const growth = (peakRss - before) / MiB;
    console.log(`RSS ${Math.round(before / MiB)} MiB before, peak ${Math.round(peakRss / MiB)} MiB (+${Math.round(growth)} MiB) for ${photos} thumbnails`);
    expect(growth).toBeLessThan(150);
  }, 120_000);
});
