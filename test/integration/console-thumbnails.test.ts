import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import sharp, { type Sharp } from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/common/paths.js';
import { openMediaStore } from '../../src/media/store.js';
import { decodeCost, thumbnailLimits } from '../../src/ui/thumbnails.js';
import { composeAllocatorEnvironment } from '../harness/environment.js';
import { unique } from '../harness/random.js';
import { startStack, type Stack } from '../harness/stack.js';
import type { ThumbnailMemoryReport } from '../harness/thumbnail-memory.js';
import { settled, testAlbum, workspaceInbox } from '../harness/albums.js';
import { pngBomb, variant } from '../harness/images.js';
import { startMediaServer, type MediaServer } from '../harness/servers/media.js';

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
    const photo = await sharp({
      create: { width: 4000, height: 3000, channels: 3, background: '#789', noise: { type: 'gaussian', mean: 128, sigma: 8 } },
    })
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
    console.log(
      `RSS ${Math.round(before / MiB)} MiB before, peak ${Math.round(peakRss / MiB)} MiB (+${Math.round(growth)} MiB) for ${photos} thumbnails`,
    );
    expect(growth).toBeLessThan(150);
  }, 120_000);
});

/** The bench's memory target for each albumflow process (BENCHMARKS.md). */
const targetRss = 400e6;

/**
 * What thumbnails may add to a process, the bound the 100-photo album above is held to: an ingress
 * at the bench's load holds the rest of the target.
 */
const thumbnailGrowth = 150 * MiB;

/** An image of one colour (what the decoders hold does not depend on what the pixels show). */
function plain(width: number, height: number, channels: 3 | 4): Sharp {
  return sharp({ limitInputPixels: false, create: { width, height, channels, background: { r: 120, g: 130, b: 140, alpha: 0.8 } } });
}

describe('thumbnails of the images hardest to decode, at the limits, all asked for at once', () => {
  const mediaDir = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-thumbnail-memory-'));
  // The largest photo the pixel limit admits (a 50 MP phone sensor's frame).
  const [fullWidth, fullHeight] = [8160, 6120];
  const images: Array<{ name: string; make: () => Promise<Buffer>; gets: 'file' | 'unreadable'; atBudget?: true }> = [
    { name: 'a 50 MP baseline JPEG', make: () => plain(fullWidth, fullHeight, 3).jpeg({ quality: 80 }).toBuffer(), gets: 'file' },
    { name: 'a 50 MP PNG', make: () => plain(fullWidth, fullHeight, 3).png({ compressionLevel: 1 }).toBuffer(), gets: 'file' },
    {
      name: 'a 50 MP WebP with alpha',
      make: () => plain(fullWidth, fullHeight, 4).webp({ lossless: true, effort: 0 }).toBuffer(),
      gets: 'file',
    },
    // Decoders that hold the whole image, each as large as the memory budget admits.
    {
      name: 'an interlaced PNG',
      make: () => plain(4500, 4500, 4).png({ progressive: true, compressionLevel: 1 }).toBuffer(),
      gets: 'file',
      atBudget: true,
    },
    {
      name: 'a progressive JPEG',
      make: () => plain(6600, 5000, 3).jpeg({ progressive: true, quality: 80 }).toBuffer(),
      gets: 'file',
      atBudget: true,
    },
    { name: 'a GIF', make: () => plain(4500, 4500, 3).gif({ effort: 1 }).toBuffer(), gets: 'file', atBudget: true },
    { name: 'an AVIF', make: () => plain(2300, 2300, 3).avif({ effort: 0, quality: 40 }).toBuffer(), gets: 'file', atBudget: true },
    // Within the pixel limit, beyond the memory budget.
    {
      name: 'a 50 MP interlaced PNG',
      make: () => plain(fullWidth, fullHeight, 4).png({ progressive: true, compressionLevel: 1 }).toBuffer(),
      gets: 'unreadable',
    },
    { name: 'a 12 MP AVIF', make: () => plain(4000, 3000, 3).avif({ effort: 0, quality: 40 }).toBuffer(), gets: 'unreadable' },
    // Beyond the pixel limit: a few KB that would decode to 900 megapixels.
    { name: 'a 30,000 × 30,000 PNG bomb', make: () => pngBomb(30_000), gets: 'unreadable' },
  ];
  const hashes: string[] = [];

  beforeAll(async () => {
    for (const image of images) {
      const body = await image.make();
      const { sha256 } = await openMediaStore({ dir: mediaDir, store: undefined }).write(Readable.from([body]), {
        maxBytes: body.length,
        contentType: null,
      });
      hashes.push(sha256);
      if (image.atBudget) {
        const cost = decodeCost(await sharp(body).metadata());
        expect(cost, image.name).toBeLessThanOrEqual(thumbnailLimits.memoryBudget);
        expect(cost, image.name).toBeGreaterThan(0.9 * thumbnailLimits.memoryBudget);
      }
    }
  }, 240_000);

  afterAll(() => fs.rmSync(mediaDir, { recursive: true, force: true }));

  it('refuses what would take too much memory and keeps the process within its target while making the rest', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--expose-gc', '--import', 'tsx', path.join(projectRoot, 'test/harness/thumbnail-memory.ts'), mediaDir, ...hashes],
      { cwd: projectRoot, env: { ...process.env, ...composeAllocatorEnvironment('ingress') }, timeout: 240_000 },
    );
    const report = JSON.parse(stdout) as ThumbnailMemoryReport;
    const growth = report.peakRss - report.baselineRss;
    console.log(
      `RSS ${Math.round(report.baselineRss / MiB)} MiB before, peak ${Math.round(report.peakRss / MiB)} MiB (+${Math.round(growth / MiB)} MiB) ` +
        `for ${images.length} images at the limits (${report.results.join(', ')})`,
    );
    expect(Object.fromEntries(images.map((image, i) => [image.name, report.results[i]]))).toEqual(
      Object.fromEntries(images.map((image) => [image.name, image.gets])),
    );
    expect(report.peakRenders).toBeGreaterThan(0);
    expect(report.peakRenders).toBeLessThanOrEqual(thumbnailLimits.concurrency);
    expect(growth).toBeLessThan(thumbnailGrowth);
    expect(report.peakRss).toBeLessThan(targetRss);
  }, 300_000);
});
