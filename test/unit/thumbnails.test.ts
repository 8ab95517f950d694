import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pino } from 'pino';
import sharp from 'sharp';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { openMediaStore, thumbnailKey } from '../../src/media/store.js';
import { createThumbnailer, decodeCost, thumbnailLimits, type Thumbnailer } from '../../src/ui/thumbnails.js';
import { jpeg, pngBomb } from '../harness/images.js';

/** Every input sharp was handed in this file (the thumbnailer's and the test's own), in order. */
const sharpInputs = vi.hoisted((): unknown[] => []);

vi.mock('sharp', async (importOriginal) => {
  const actual = (await importOriginal<typeof import('sharp')>()).default;
  const opened = (...args: unknown[]) => {
    sharpInputs.push(args[0]);
    return (actual as (...args: unknown[]) => unknown)(...args);
  };
  return { default: Object.assign(opened, actual) };
});

/** The first bytes of an MP4 file: enough for its type to be told from its content. */
const mp4 = Buffer.concat([
  Buffer.from([0, 0, 0, 0x18]),
  Buffer.from('ftypmp42'),
  Buffer.alloc(4),
  Buffer.from('mp42isom'),
  Buffer.alloc(256),
]);

describe('thumbnails', () => {
  const mediaDir = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-thumbnails-'));
  const warnings: string[] = [];
  let thumbnailer: Thumbnailer;
  const stored: Record<string, string> = {};

  const mediaStore = openMediaStore({ dir: mediaDir, store: undefined });
  /** Where the directory store keeps a file. */
  const objectFile = (sha256: string) => path.join(mediaDir, 'sha256', sha256.slice(0, 2), sha256);

  async function store(name: string, body: Buffer) {
    const { sha256 } = await mediaStore.write(Readable.from([body]), { maxBytes: body.length, contentType: null });
    expect(sha256).toBe(crypto.createHash('sha256').update(body).digest('hex'));
    stored[name] = sha256;
  }

  beforeAll(async () => {
    const logger = pino(
      { level: 'warn' },
      new Writable({ write: (chunk: Buffer, _encoding, done) => (warnings.push(chunk.toString()), done()) }),
    );
    thumbnailer = createThumbnailer(mediaStore, logger);
    await store('photo', await jpeg(1200, 900, 40));
    await store('text', Buffer.from('not an image, whatever its name or content type says'));
    await store('video', mp4);
    await store('bomb', await pngBomb(30_000));
    // Formats sharp decodes but the thumbnailer does not take: told by their bytes, never opened.
    await store(
      'tiff',
      await sharp({ create: { width: 64, height: 48, channels: 3, background: '#369' } })
        .tiff()
        .toBuffer(),
    );
    await store(
      'svg',
      Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="64" height="48"><rect width="64" height="48" fill="#369"/></svg>'),
    );
    // Within the pixel limit, but an interlaced 16-bit PNG is decoded whole: beyond the memory budget.
    await store(
      'deep',
      await sharp({ create: { width: 4000, height: 4000, channels: 4, background: '#369' } })
        .toColourspace('rgb16')
        .png({ progressive: true, compressionLevel: 1 })
        .toBuffer(),
    );
  });

  /** The inputs sharp was handed that are the stored file `name`. */
  const opened = (name: string) => sharpInputs.filter((input) => input === objectFile(stored[name]!));

  it('are made once per file, content-addressed in the media store, however many ask at once', async () => {
    const [first, second] = await Promise.all([thumbnailer.thumbnail(stored.photo!), thumbnailer.thumbnail(stored.photo!)]);
    expect(first).toEqual({ key: thumbnailKey(stored.photo!, 'w400') });
    expect(second).toEqual(first);
    const file = path.join(mediaDir, 'thumbnails', stored.photo!.slice(0, 2), `${stored.photo}-w400.webp`);
    expect(await sharp(file).metadata()).toMatchObject({ format: 'webp', width: 400, height: 300 });
    const madeAt = fs.statSync(file).mtimeMs;
    expect(await thumbnailer.thumbnail(stored.photo!)).toEqual(first);
    expect(fs.statSync(file).mtimeMs).toBe(madeAt);
  });

  it('give a file its icon by the type its bytes show, without trying to decode what is not an image', async () => {
    expect(await thumbnailer.thumbnail(stored.text!)).toEqual({ icon: 'file' });
    expect(await thumbnailer.thumbnail(stored.video!)).toEqual({ icon: 'video' });
    expect(await thumbnailer.thumbnail(stored.tiff!)).toEqual({ icon: 'image' });
    expect(await thumbnailer.thumbnail(stored.svg!)).toEqual({ icon: 'file' });
    expect(warnings.join('')).not.toMatch(new RegExp(`${stored.text}|${stored.video}|${stored.tiff}|${stored.svg}`));
    for (const name of ['text', 'video', 'tiff', 'svg']) expect(opened(name), `sharp opened the ${name}`).toEqual([]);
    // What sharp is handed is seen here: the photo it made a thumbnail of.
    expect(opened('photo').length).toBeGreaterThan(0);
  });

  it('refuse a 30,000 × 30,000 PNG of 110 KB by its pixel count, before decoding it', async () => {
    expect(await thumbnailer.thumbnail(stored.bomb!)).toEqual({ icon: 'unreadable' });
    expect(warnings.find((line) => line.includes(stored.bomb!))).toMatch(/pixel limit/);
  });

  it('refuse an image whose decode would hold more memory than thumbnails may use, from its header alone', async () => {
    const before = opened('deep').length;
    expect(await thumbnailer.thumbnail(stored.deep!)).toEqual({ icon: 'unreadable' });
    expect(warnings.find((line) => line.includes(stored.deep!))).toMatch(/more memory than thumbnails may use/);
    // One opening, for the header: the render would have opened it again.
    expect(opened('deep').length - before).toBe(1);
    expect(fs.existsSync(path.join(mediaDir, 'thumbnails', stored.deep!.slice(0, 2), `${stored.deep}-w400.webp`))).toBe(false);
  });

  it('count what each decoder holds: the whole image for interlaced, progressive, GIF and AVIF files, a part for the others', () => {
    const photo = { width: 8160, height: 6120, channels: 3, depth: 'uchar', isProgressive: false } as const;
    const cost = (meta: Partial<Parameters<typeof decodeCost>[0]>) => decodeCost({ ...photo, format: 'jpeg', ...meta });
    // A 50 MP phone photo (a baseline JPEG, or a PNG or WebP read a band at a time) fits the budget…
    for (const meta of [{}, { format: 'png' }, { format: 'webp', channels: 4 }] as const)
      expect(cost(meta)).toBeLessThan(thumbnailLimits.memoryBudget);
    // …the same pixels held whole do not.
    for (const meta of [
      { isProgressive: true, chromaSubsampling: '4:2:0' },
      { format: 'png', isProgressive: true },
      { format: 'gif' },
      { format: 'heif' },
    ] as const) {
      expect(cost(meta), JSON.stringify(meta)).toBeGreaterThan(thumbnailLimits.memoryBudget);
    }
    expect(cost({ isProgressive: true, chromaSubsampling: '4:4:4' })).toBeGreaterThan(
      cost({ isProgressive: true, chromaSubsampling: '4:2:0' }),
    );
    expect(cost({ format: 'png', isProgressive: true, depth: 'ushort' })).toBeGreaterThan(cost({ format: 'png', isProgressive: true }));
    expect(cost({ format: 'heif', depth: 'ushort' })).toBeGreaterThan(cost({ format: 'heif' }));
  });

  it('say when the file is not in MEDIA_DIR', async () => {
    expect(await thumbnailer.thumbnail('f'.repeat(64))).toBeNull();
  });
});
