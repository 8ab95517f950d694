import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { parseMediaStore } from '../../src/common/config.js';
import { projectRoot } from '../../src/common/paths.js';
import { MediaStoreError, MediaTooLargeError, mediaKey, openMediaStore, thumbnailKey, type MediaStore } from '../../src/media/store.js';
import { s3Environment, testBucket } from '../harness/env.js';
import { startRefusingS3 } from '../harness/servers/refusing-s3.js';
import type { StoreMemoryReport } from '../harness/store-memory.js';

const MiB = 1024 * 1024;
const sha256 = (body: Buffer) => crypto.createHash('sha256').update(body).digest('hex');

async function bytesOf(stream: Readable | null): Promise<Buffer> {
  expect(stream).not.toBeNull();
  const chunks: Buffer[] = [];
  for await (const chunk of stream!) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

interface BackEnd {
  store: MediaStore;
  spoolDir: string;
  /** Where the back end keeps an object as a file (the directory, or the S3 server's posix root). */
  fileOf(key: string): string;
}

function directoryBackEnd(): BackEnd {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-store-'));
  return {
    store: openMediaStore({ dir, store: undefined }),
    spoolDir: path.join(dir, '.tmp'),
    fileOf: (key) => path.join(dir, key),
  };
}

function s3BackEnd(): BackEnd {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-store-spool-'));
  const location = parseMediaStore(testBucket('albums/media'));
  return {
    store: openMediaStore({ dir, store: location }, s3Environment()),
    spoolDir: path.join(dir, '.tmp'),
    fileOf: (key) => path.join(inject('s3Root'), location.bucket, location.prefix, key),
  };
}

const spoolFiles = (backEnd: BackEnd) => (fs.existsSync(backEnd.spoolDir) ? fs.readdirSync(backEnd.spoolDir) : []);

describe.each([
  { name: 'the directory MEDIA_DIR', make: directoryBackEnd },
  { name: 'an S3 bucket (the Versity S3 Gateway)', make: s3BackEnd },
])('the media store on $name', ({ make }) => {
  const backEnd = make();
  const { store } = backEnd;
  afterAll(() => store.close());

  it(`keeps a file under <prefix>/sha256/<2 hex>/<sha256> with its type, and answers its size and type`, async () => {
    const body = crypto.randomBytes(100_000);
    const written = await store.write(Readable.from([body.subarray(0, 1000), body.subarray(1000)]), {
      maxBytes: body.length,
      contentType: 'image/jpeg',
    });
    expect(written).toEqual({ sha256: sha256(body), bytes: body.length, uploaded: true });
    expect(mediaKey(written.sha256)).toBe(`sha256/${written.sha256.slice(0, 2)}/${written.sha256}`);
    expect(fs.readFileSync(backEnd.fileOf(mediaKey(written.sha256))).equals(body)).toBe(true);
    expect(await store.stat(written.sha256)).toEqual({ bytes: body.length, contentType: 'image/jpeg' });
    expect(await bytesOf(await store.read(mediaKey(written.sha256)))).toEqual(body);
    expect(spoolFiles(backEnd)).toEqual([]);
  });

  it('does not upload an object that is there already', async () => {
    const body = crypto.randomBytes(5_000);
    const first = await store.write(Readable.from([body]), { maxBytes: body.length, contentType: 'image/png' });
    const file = backEnd.fileOf(mediaKey(first.sha256));
    const writtenAt = fs.statSync(file).mtimeMs;
    await new Promise((resolve) => setTimeout(resolve, 20));
    const second = await store.write(Readable.from([body]), { maxBytes: body.length, contentType: 'image/png' });
    expect(second).toEqual({ ...first, uploaded: false });
    expect(fs.statSync(file).mtimeMs).toBe(writtenAt);
    expect(spoolFiles(backEnd)).toEqual([]);
  });

  it('reads a byte range', async () => {
    const body = crypto.randomBytes(10_000);
    const { sha256: digest } = await store.write(Readable.from([body]), { maxBytes: body.length, contentType: null });
    expect(await bytesOf(await store.read(mediaKey(digest), { start: 100, end: 199 }))).toEqual(body.subarray(100, 200));
    expect(await bytesOf(await store.read(mediaKey(digest), { start: 9_990, end: 9_999 }))).toEqual(body.subarray(9_990));
  });

  it('says when it holds no such object', async () => {
    const absent = 'e'.repeat(64);
    expect(await store.stat(absent)).toBeNull();
    expect(await store.read(mediaKey(absent))).toBeNull();
    expect(await store.withLocalFile(mediaKey(absent), async () => 'used')).toBeNull();
  });

  it('refuses a file over the size limit, announced or streamed, and keeps nothing of it', async () => {
    const body = crypto.randomBytes(2_000);
    let read = false;
    const announced = new Readable({
      read() {
        read = true;
        this.push(null);
      },
    });
    await expect(store.write(announced, { maxBytes: 1_000, contentType: null, declaredBytes: 2_000 })).rejects.toBeInstanceOf(
      MediaTooLargeError,
    );
    expect(read).toBe(false);
    await expect(
      store.write(Readable.from([body.subarray(0, 900), body.subarray(900)]), { maxBytes: 1_000, contentType: null }),
    ).rejects.toThrow('larger than MEDIA_MAX_BYTES (1000 bytes)');
    expect(await store.stat(sha256(body))).toBeNull();
    expect(spoolFiles(backEnd)).toEqual([]);
  });

  it('hands an object over as a local file, and keeps no copy of it afterwards', async () => {
    const body = crypto.randomBytes(3_000);
    const { sha256: digest } = await store.write(Readable.from([body]), { maxBytes: body.length, contentType: null });
    const seen = await store.withLocalFile(mediaKey(digest), async (file) => fs.readFileSync(file));
    expect(seen).toEqual(body);
    expect(spoolFiles(backEnd)).toEqual([]);
  });

  it('removes a file with its thumbnails, and leaves the other files and their thumbnails', async () => {
    const body = crypto.randomBytes(3_000);
    const other = crypto.randomBytes(3_001);
    const written = await store.write(Readable.from([body]), { maxBytes: body.length, contentType: 'image/jpeg' });
    const kept = await store.write(Readable.from([other]), { maxBytes: other.length, contentType: 'image/jpeg' });
    for (const [sha, variant] of [
      [written.sha256, 'w320'],
      [written.sha256, 'w1280'],
      [kept.sha256, 'w320'],
    ] as const) {
      const file = await store.tempFile('thumb-');
      fs.writeFileSync(file, `${sha}-${variant}`);
      await store.putFile(thumbnailKey(sha, variant), file, 'image/webp');
    }
    expect(await store.remove(written.sha256)).toBe(body.length);
    expect(await store.stat(written.sha256)).toBeNull();
    expect(fs.existsSync(backEnd.fileOf(mediaKey(written.sha256)))).toBe(false);
    expect(await store.head(thumbnailKey(written.sha256, 'w320'))).toBeNull();
    expect(await store.head(thumbnailKey(written.sha256, 'w1280'))).toBeNull();
    expect(await store.stat(kept.sha256)).toEqual({ bytes: other.length, contentType: 'image/jpeg' });
    expect(await store.head(thumbnailKey(kept.sha256, 'w320'))).not.toBeNull();
    // Removing it again (a collector retried after a crash) finds nothing and fails nothing.
    expect(await store.remove(written.sha256)).toBeNull();
  });

  it('answers a ping', async () => {
    await expect(store.ping()).resolves.toBeUndefined();
  });
});

describe.each([
  { store: 'the directory MEDIA_DIR', location: () => '' },
  { store: 'an S3 bucket', location: () => testBucket() },
])('streaming into $store', ({ location }) => {
  it('holds no whole file in memory: four 50 MB files at once add less than one to the resident memory', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-store-memory-'));
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--expose-gc', '--import', 'tsx', path.join(projectRoot, 'test/harness/store-memory.ts'), dir, location(), '4', '50'],
      { cwd: projectRoot, env: { ...process.env }, timeout: 240_000 },
    );
    const report = JSON.parse(stdout) as StoreMemoryReport;
    const growth = report.peakRss - report.baselineRss;
    console.log(
      `RSS ${Math.round(report.baselineRss / MiB)} MiB before, peak ${Math.round(report.peakRss / MiB)} MiB (+${Math.round(growth / MiB)} MiB)`,
    );
    expect(report.files).toHaveLength(4);
    for (const file of report.files) expect(file.stored).toBe(file.sent);
    expect(growth).toBeLessThan(50 * MiB);
    fs.rmSync(dir, { recursive: true, force: true });
  }, 300_000);
});

describe('the directory store', () => {
  it('finds a file of the layout before the store (<MEDIA_DIR>/<2 hex>/<sha256>) where it is', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-store-legacy-'));
    const body = crypto.randomBytes(1_000);
    const digest = sha256(body);
    fs.mkdirSync(path.join(dir, digest.slice(0, 2)));
    fs.writeFileSync(path.join(dir, digest.slice(0, 2), digest), body);
    const store = openMediaStore({ dir, store: undefined });
    expect(await store.stat(digest)).toEqual({ bytes: 1_000, contentType: null });
    expect(await bytesOf(await store.read(mediaKey(digest), { start: 0, end: 9 }))).toEqual(body.subarray(0, 10));
    // Found, so not written again.
    expect((await store.write(Readable.from([body]), { maxBytes: 1_000, contentType: null })).uploaded).toBe(false);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describe('the S3 store', () => {
  const spool = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-store-spool-'));

  it('fails with a MediaStoreError that names no credential when the keys are wrong, and stores nothing', async () => {
    const location = parseMediaStore(testBucket());
    const store = openMediaStore({ dir: spool, store: location }, { ...s3Environment(), AWS_SECRET_ACCESS_KEY: 'not-the-secret-key' });
    const body = crypto.randomBytes(1_000);
    const failed = await store.write(Readable.from([body]), { maxBytes: 1_000, contentType: null }).catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(MediaStoreError);
    expect((failed as Error).message).not.toContain('not-the-secret-key');
    await expect(store.ping()).rejects.toBeInstanceOf(MediaStoreError);
    expect(fs.existsSync(path.join(inject('s3Root'), location.bucket, location.prefix))).toBe(false);
    expect(fs.readdirSync(path.join(spool, '.tmp'))).toEqual([]);
    store.close();
  });

  it('writes a file held in memory with one conditional PUT, and one a store answers 501 to with a HEAD first', async () => {
    const proxy = await startRefusingS3(inject('s3Endpoint'));
    const location = parseMediaStore(testBucket());
    const store = openMediaStore({ dir: spool, store: location }, { ...s3Environment(), AWS_ENDPOINT_URL_S3: proxy.endpoint });
    const write = (body: Buffer) =>
      store.write(Readable.from([body]), { maxBytes: body.length, declaredBytes: body.length, contentType: 'image/jpeg' });
    const key = (body: Buffer) => `/${location.bucket}/${location.prefix}/${mediaKey(sha256(body))}`;
    try {
      const body = crypto.randomBytes(50_000);
      expect(await write(body)).toEqual({ sha256: sha256(body), bytes: body.length, uploaded: true });
      // There already: the store answers the condition 412, and nothing is written.
      expect(await write(body)).toEqual({ sha256: sha256(body), bytes: body.length, uploaded: false });
      expect(proxy.requests).toEqual([`PUT? ${key(body)}`, `PUT? ${key(body)}`]);
      expect(await store.stat(sha256(body))).toEqual({ bytes: body.length, contentType: 'image/jpeg' });

      proxy.refuseConditionalWrites(true);
      proxy.requests.length = 0;
      const other = crypto.randomBytes(50_000);
      expect(await write(other)).toMatchObject({ uploaded: true });
      expect(await write(other)).toMatchObject({ uploaded: false });
      expect(proxy.requests).toEqual([`PUT? ${key(other)}`, `HEAD ${key(other)}`, `PUT ${key(other)}`, `HEAD ${key(other)}`]);
      expect(await bytesOf(await store.read(mediaKey(sha256(other))))).toEqual(other);
    } finally {
      store.close();
      await proxy.close();
    }
  });

  it('fails its ping when the bucket does not exist', async () => {
    const store = openMediaStore({ dir: spool, store: parseMediaStore('s3://no-such-bucket-here/media') }, s3Environment());
    await expect(store.ping()).rejects.toBeInstanceOf(MediaStoreError);
    store.close();
  });
});
