// albumflow as on several machines that share only PostgreSQL, the real Temporal server and an S3 bucket:
// two ingresses and two workers, each with a DATA_DIR and MEDIA_DIR of its own, MEDIA_STORE on the run's S3
// server. Under signed load with a download per child, every photo must end up in the bucket exactly once,
// be served by either ingress, and be fetchable by the media_url of its notification without a token;
// no process keeps a photo on its own disk.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { mediaRoutePath } from '../../src/media/links.js';
import { consolePaths } from '../../src/ui/paths.js';
import { eventually } from '../harness/albums.js';
import { LoadGenerator } from '../harness/load.js';
import { attachments } from '../harness/rows.js';
import { startProcessStack, type ProcessStack } from '../harness/stack.js';

/** Every file under a directory, recursively. */
function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .flatMap((entry) => (entry.isFile() ? [path.join(entry.parentPath, entry.name)] : []));
}

const sha256 = (bytes: Buffer) => crypto.createHash('sha256').update(bytes).digest('hex');

describe('two ingresses and two workers on separate directories, sharing an S3 bucket', () => {
  let stack: ProcessStack;
  const token = crypto.randomBytes(24).toString('base64url');
  const bucket = `two-machines-${crypto.randomBytes(3).toString('hex')}`;

  beforeAll(async () => {
    expect(inject('s3Unavailable')).toBe('');
    fs.mkdirSync(path.join(inject('s3Root'), bucket));
    const { accessKeyId, secretAccessKey } = inject('s3Credentials');
    stack = await startProcessStack({
      temporal: { address: process.env.TEMPORAL_ADDRESS! },
      ingresses: 2,
      workers: 2,
      ownDirectories: true,
      media: { bytes: 48 * 1024, durationMs: () => 50 + Math.random() * 200 },
      notifyDelayMs: () => 10,
      env: {
        API_TOKENS: JSON.stringify({ [token]: ['*'] }),
        MEDIA_STORE: `s3://${bucket}/media`,
        AWS_ENDPOINT_URL_S3: inject('s3Endpoint'),
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: accessKeyId,
        AWS_SECRET_ACCESS_KEY: secretAccessKey,
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      },
    });
  }, 300_000);

  afterAll(async () => {
    await stack?.teardown();
  }, 120_000);

  it('keeps every photo in the bucket once, served by either ingress and by its media_url', { timeout: 600_000 }, async () => {
    const load = new LoadGenerator({
      workspace: stack.workspace,
      secret: stack.secret,
      targets: stack.ingressUrls,
      mediaUrl: (p) => stack.media.url(p),
      albumsPerSecond: 3,
      maxInFlight: 16,
    });
    load.phase = 'load';
    load.start();
    await new Promise((resolve) => setTimeout(resolve, 15_000));
    load.stopGenerating();
    await load.drain(180_000);
    const withMedia = [...load.children.values()].filter((child) => child.attachmentPath !== null);
    expect(withMedia.length).toBeGreaterThan(20);

    // Every attachment with a URL downloaded, into the store.
    const rows = await eventually(async () => {
      const read = await attachments.read(stack.pool, { workspace: stack.workspace }, ['status', 'sha256', 'url']);
      expect(read.filter((row) => row.url !== null && row.status !== 'downloaded')).toEqual([]);
      expect(read.filter((row) => row.url !== null).length).toBe(withMedia.length);
      return read.filter((row) => row.url !== null);
    }, 180_000);
    const hashes = new Set(rows.map((row) => row.sha256!));

    // In the bucket once each: one object per distinct content (the posix back end keeps each as a file).
    const objects = filesUnder(path.join(inject('s3Root'), bucket, 'media', 'sha256')).filter((file) => !file.includes('.sgwtmp'));
    expect(objects.map((file) => path.basename(file)).sort()).toEqual([...hashes].sort());

    // No process kept a photo on its own disk: nothing but (empty) partial-file folders in any MEDIA_DIR.
    for (const name of ['ingress-1', 'ingress-2', 'worker-1', 'worker-2'])
      expect(filesUnder(path.join(stack.dir, name, 'media'))).toEqual([]);

    // Served by either ingress, the bytes of their hash.
    for (const hash of hashes) {
      for (const url of stack.ingressUrls) {
        const response = await fetch(`${url}${mediaRoutePath(stack.workspace, hash)}`, { headers: { authorization: `Bearer ${token}` } });
        expect(response.status).toBe(200);
        expect(sha256(Buffer.from(await response.arrayBuffer()))).toBe(hash);
      }
    }

    // Every photo is in a notification with a media_url that needs no token (album.media_settled, message.ready).
    const links = new Map<string, string>();
    const collect = (value: unknown): void => {
      if (Array.isArray(value)) value.forEach(collect);
      else if (value && typeof value === 'object') {
        const { sha256: hash, media_url: link } = value as { sha256?: unknown; media_url?: unknown };
        if (typeof hash === 'string' && typeof link === 'string') links.set(hash, link);
        Object.values(value).forEach(collect);
      }
    };
    for (const request of stack.receiver.requests()) collect(request.body);
    expect([...hashes].filter((hash) => !links.has(hash))).toEqual([]);
    // The links name the default listen address (PUBLIC_URL is unset): their path and signature work on either ingress.
    for (const [hash, link] of links) {
      const { origin, pathname, search } = new URL(link);
      expect([origin, search]).toEqual(['http://127.0.0.1:3000', expect.stringMatching(/^\?expires=\d+&sig=/)]);
      for (const url of stack.ingressUrls) {
        const response = await fetch(`${url}${pathname}${search}`);
        expect(response.status).toBe(200);
        expect(sha256(Buffer.from(await response.arrayBuffer()))).toBe(hash);
      }
      const forged = await fetch(
        `${stack.ingressUrls[0]}${pathname}${search.replace(/sig=./, (m) => (m.endsWith('A') ? 'sig=B' : 'sig=A'))}`,
      );
      expect(forged.status).toBe(403);
    }
    // The console of either ingress shows every photo of every album (its album page, one image per child).
    const albumsOf = new Map<string, string[]>();
    for (const child of withMedia)
      if (child.albumKey) albumsOf.set(child.albumKey, [...(albumsOf.get(child.albumKey) ?? []), child.messageId]);
    expect(albumsOf.size).toBeGreaterThan(5);
    let page = 0;
    for (const [albumKey, messageIds] of albumsOf) {
      const [workspace, provider, accountId, conversationId, albumId] = albumKey.split(':').map(decodeURIComponent) as [
        string,
        string,
        string,
        string,
        string,
      ];
      const url = stack.ingressUrls[page++ % 2]!;
      const response = await fetch(`${url}${consolePaths.album({ workspace, provider, accountId, conversationId, albumId })}`, {
        headers: { authorization: `Bearer ${token}`, accept: 'text/html' },
      });
      expect(response.status).toBe(200);
      const shown = [...(await response.text()).matchAll(/alt="[^"]* of message ([^"]+)"/g)].map((match) => match[1]);
      expect(shown.sort()).toEqual([...messageIds].sort());
    }
    console.log(
      `${load.children.size} children, ${withMedia.length} attachments, ${hashes.size} objects in the bucket, ${links.size} media_url links fetched`,
    );
  });
});
