import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import sharp from 'sharp';
import { beforeAll, describe, expect, it } from 'vitest';
import { mediaPath } from '../../activities/download.js';
import { createThumbnailer, type Thumbnailer } from '../../src/ui/thumbnails.js';
import { jpeg, pngBomb } from '../browser/media-files.js';

/** The first bytes of an MP4 file: enough for its type to be told from its content. */
const mp4 = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypmp42'), Buffer.alloc(4), Buffer.from('mp42isom'), Buffer.alloc(256)]);

describe('thumbnails', () => {
  const mediaDir = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-thumbnails-'));
  const warnings: string[] = [];
  let thumbnailer: Thumbnailer;
  const stored: Record<string, string> = {};

  function store(name: string, body: Buffer) {
    const sha256 = crypto.createHash('sha256').update(body).digest('hex');
    fs.mkdirSync(path.dirname(mediaPath(mediaDir, sha256)), { recursive: true });
    fs.writeFileSync(mediaPath(mediaDir, sha256), body);
    stored[name] = sha256;
  }

  beforeAll(async () => {
    const logger = pino({ level: 'warn' }, new Writable({ write: (chunk: Buffer, _encoding, done) => (warnings.push(chunk.toString()), done()) }));
    thumbnailer = createThumbnailer(mediaDir, logger);
    store('photo', await jpeg(1200, 900, 40));
    store('text', Buffer.from('not an image, whatever its name or content type says'));
    store('video', mp4);
    store('bomb', await pngBomb(30_000));
  });

  it('are made once per file, content-addressed beside the media, however many ask at once', async () => {
    const [first, second] = await Promise.all([thumbnailer.thumbnail(stored.photo!), thumbnailer.thumbnail(stored.photo!)]);
    expect(first).toEqual({ file: path.join(mediaDir, 'thumbnails', stored.photo!.slice(0, 2), `${stored.photo}-w400.webp`) });
    expect(second).toEqual(first);
    const file = (first as { file: string }).file;
    expect(await sharp(file).metadata()).toMatchObject({ format: 'webp', width: 400, height: 300 });
    const madeAt = fs.statSync(file).mtimeMs;
    expect(await thumbnailer.thumbnail(stored.photo!)).toEqual(first);
    expect(fs.statSync(file).mtimeMs).toBe(madeAt);
  });

  it('give a file its icon by the type its bytes show, without trying to decode what is not an image', async () => {
    expect(await thumbnailer.thumbnail(stored.text!)).toEqual({ icon: 'file' });
    expect(await thumbnailer.thumbnail(stored.video!)).toEqual({ icon: 'video' });
    expect(warnings.join('')).not.toMatch(new RegExp(`${stored.text}|${stored.video}`));
  });

  it('refuse a 30,000 × 30,000 PNG of 110 KB by its pixel count, before decoding it', async () => {
    expect(await thumbnailer.thumbnail(stored.bomb!)).toEqual({ icon: 'unreadable' });
    expect(warnings.find((line) => line.includes(stored.bomb!))).toMatch(/pixel limit/);
  });

  it('say when the file is not in MEDIA_DIR', async () => {
    expect(await thumbnailer.thumbnail('f'.repeat(64))).toBeNull();
  });
});
