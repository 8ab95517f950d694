// Thumbnails of downloaded media, made once per file and kept beside it, content-addressed.
// Files come from senders: a file is decoded only when its first bytes say it is an image format
// on the list below (never because of a declared content type or name), only with a pixel limit
// that refuses decompression bombs before any pixel is decoded, and a few at a time.
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileTypeFromFile } from 'file-type';
import pLimit from 'p-limit';
import sharp from 'sharp';
import { mediaPath } from '../../activities/download.js';
import type { FastifyBaseLogger } from 'fastify';

export interface ThumbnailLimits {
  /** The longest side of a thumbnail, px. */
  size: number;
  /** An image with more pixels than this is not decoded. */
  maxInputPixels: number;
  /** Thumbnails made at once in this process. */
  concurrency: number;
}

export const thumbnailLimits: ThumbnailLimits = { size: 400, maxInputPixels: 100_000_000, concurrency: 2 };

/** What stands in for a file that gets no thumbnail. */
export type IconName = 'video' | 'audio' | 'image' | 'file' | 'unreadable';

export type Thumbnail = { file: string } | { icon: IconName };

/** Formats whose real type (sniffed) sharp may decode. */
const decodable = new Set(['image/jpeg', 'image/png', 'image/webp', 'image/gif', 'image/avif']);

function iconFor(mime: string | undefined): IconName {
  if (mime?.startsWith('video/')) return 'video';
  if (mime?.startsWith('audio/')) return 'audio';
  if (mime?.startsWith('image/')) return 'image';
  return 'file';
}

async function exists(file: string): Promise<boolean> {
  return fs.access(file).then(
    () => true,
    () => false,
  );
}

export interface Thumbnailer {
  /** The thumbnail of a downloaded file, or the icon that stands in for it; null when the file is not in MEDIA_DIR. */
  thumbnail(sha256: string): Promise<Thumbnail | null>;
  /** Changes with anything that changes what `thumbnail` makes (for ETags). */
  readonly variant: string;
}

export function createThumbnailer(mediaDir: string, logger: FastifyBaseLogger): Thumbnailer {
  const limits = thumbnailLimits;
  // Memory stays bounded by the images being made: libvips keeps no cache of earlier operations,
  // and each image is processed on one thread (the concurrency limit is the parallelism).
  sharp.cache(false);
  sharp.concurrency(1);
  const limit = pLimit(limits.concurrency);
  const variant = `w${limits.size}`;
  const thumbnailsDir = path.join(mediaDir, 'thumbnails');
  const inFlight = new Map<string, Promise<Thumbnail | null>>();

  async function render(source: string, target: string): Promise<void> {
    await fs.mkdir(path.dirname(target), { recursive: true });
    const partial = `${target}.${crypto.randomBytes(6).toString('hex')}.part`;
    try {
      await sharp(source, { limitInputPixels: limits.maxInputPixels, sequentialRead: true, failOn: 'error', autoOrient: true })
        .resize({ width: limits.size, height: limits.size, fit: 'inside', withoutEnlargement: true })
        .webp({ quality: 78 })
        .toFile(partial);
      await fs.rename(partial, target);
    } finally {
      await fs.rm(partial, { force: true });
    }
  }

  async function make(sha256: string): Promise<Thumbnail | null> {
    const target = path.join(thumbnailsDir, sha256.slice(0, 2), `${sha256}-${variant}.webp`);
    if (await exists(target)) return { file: target };
    const source = mediaPath(mediaDir, sha256);
    if (!(await exists(source))) return null;
    const sniffed = await fileTypeFromFile(source);
    if (!sniffed || !decodable.has(sniffed.mime)) return { icon: iconFor(sniffed?.mime) };
    try {
      await limit(() => render(source, target));
      return { file: target };
    } catch (err) {
      logger.warn({ err, sha256, type: sniffed.mime }, 'no thumbnail for this image');
      return { icon: 'unreadable' };
    }
  }

  return {
    variant,
    thumbnail(sha256) {
      let pending = inFlight.get(sha256);
      if (!pending) {
        pending = make(sha256).finally(() => inFlight.delete(sha256));
        inFlight.set(sha256, pending);
      }
      return pending;
    },
  };
}
