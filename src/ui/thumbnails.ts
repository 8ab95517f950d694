// Thumbnails of downloaded media, made once per file and kept in the media store, content-addressed.
// Files come from senders: a file is decoded only when its first bytes say it is an image format
// on the list below (never because of a declared content type or name), only with a pixel limit
// that refuses decompression bombs before any pixel is decoded, and a few at a time, within a
// memory budget that the decodes under way share.
import fs from 'node:fs/promises';
import { fileTypeFromFile } from 'file-type';
import sharp, { type Metadata } from 'sharp';
import { mediaKey, thumbnailKey, type MediaStore } from '../media/store.js';
import type { FastifyBaseLogger } from 'fastify';

export interface ThumbnailLimits {
  /** The longest side of a thumbnail, px. */
  size: number;
  /** An image with more pixels than this is not decoded. */
  maxInputPixels: number;
  /**
   * Bytes the decodes under way may hold together (by `decodeCost`): a thumbnail waits until its
   * decode fits beside those running, and an image whose decode alone would not fit gets none.
   */
  memoryBudget: number;
  /** Thumbnails made at once in this process. */
  concurrency: number;
}

const MiB = 1024 * 1024;

export const thumbnailLimits: ThumbnailLimits = {
  size: 400,
  // The full frame of a 50 MP phone sensor, so a phone photo fits; an image from a sender that claims
  // more pixels is rarely a photo and may be a decompression bomb. The pixel count alone cannot bound
  // memory: what a decode holds depends as much on the format (decodeCost).
  maxInputPixels: 8192 * 6144,
  // What thumbnails may add to an ingress beside what it holds at the bench's load, so that the
  // process stays within its memory target (BENCHMARKS.md) while an album's thumbnails are made.
  memoryBudget: 128 * MiB,
  concurrency: 2,
};

/** What a decode holds whatever the image's size: the thumbnail, its encoder, libvips' buffers. */
const decodeOverhead = 8 * MiB;

function sampleBytes(depth: Metadata['depth']): number {
  if (depth === 'uchar' || depth === 'char') return 1;
  if (depth === 'ushort' || depth === 'short') return 2;
  return depth === 'double' || depth === 'dpcomplex' ? 8 : 4;
}

/** DCT samples per pixel of a JPEG: full-resolution luma (and black), chroma at its subsampling. */
function jpegSamplesPerPixel(channels: number, subsampling: string | undefined): number {
  if (channels < 3) return channels;
  const chroma = subsampling?.startsWith('4:2:0') ? 0.25 : 1;
  return channels - 2 + 2 * chroma;
}

/**
 * The most memory decoding this image into a thumbnail holds at once, bytes, from its header. Some
 * decoders stream: a baseline JPEG is shrunk by the decoder as it is read, a PNG without interlacing
 * and a WebP are read a band at a time. Others hold the whole image and more until they finish: a
 * progressive JPEG keeps every DCT coefficient (two bytes a sample) until its last scan, an
 * interlaced PNG every pixel until its last pass, a GIF a full RGBA frame beside its palette
 * indexes, and AVIF/HEIF the AV1 decoder's frames and planes beside the converted pixels. Each
 * factor is an upper bound, with a margin, of what its decoder holds; test/integration/console-thumbnails.test.ts
 * makes the largest image of each kind the budget admits and measures the process.
 */
export function decodeCost(
  meta: Pick<Metadata, 'format' | 'width' | 'height' | 'channels' | 'depth' | 'isProgressive' | 'chromaSubsampling'>,
): number {
  const pixels = (meta.width ?? 0) * (meta.height ?? 0);
  const bytesPerSample = sampleBytes(meta.depth);
  const pixelBytes = meta.channels * bytesPerSample;
  let perPixel: number;
  switch (meta.format) {
    case 'jpeg':
      perPixel = meta.isProgressive ? 2 * jpegSamplesPerPixel(meta.channels, meta.chromaSubsampling) * 1.25 : 0.25;
      break;
    case 'png':
      perPixel = pixelBytes * (meta.isProgressive ? 1.5 : 0.5);
      break;
    case 'webp':
      perPixel = pixelBytes * 0.5;
      break;
    case 'gif':
      perPixel = 6;
      break;
    case 'heif':
      perPixel = bytesPerSample > 1 ? 30 : 22;
      break;
    default:
      perPixel = pixelBytes * 2;
  }
  return decodeOverhead + Math.ceil(pixels * perPixel);
}

/**
 * Runs tasks at most `concurrency` at a time and only while the costs of those running fit in
 * `budget`, in the order they came (a large image waits for room rather than being passed over).
 * A task's cost must not exceed the budget.
 */
function admission(concurrency: number, budget: number) {
  let running = 0;
  let used = 0;
  const waiting: Array<{ cost: number; start: () => void }> = [];
  function admit() {
    for (let head = waiting[0]; head && running < concurrency && used + head.cost <= budget; head = waiting[0]) {
      waiting.shift();
      running++;
      used += head.cost;
      head.start();
    }
  }
  return async function run<T>(cost: number, task: () => Promise<T>): Promise<T> {
    await new Promise<void>((start) => {
      waiting.push({ cost, start });
      admit();
    });
    try {
      return await task();
    } finally {
      running--;
      used -= cost;
      admit();
    }
  };
}

/** What stands in for a file that gets no thumbnail. */
export type IconName = 'video' | 'audio' | 'image' | 'file' | 'unreadable';

/** A thumbnail in the store (under `key`), or the icon that stands in for one. */
export type Thumbnail = { key: string } | { icon: IconName };

/** Formats whose real type (sniffed) sharp may decode. */
const decodable = new Set(['image/jpeg', 'image/png', 'image/webp', 'image/gif', 'image/avif']);

function iconFor(mime: string | undefined): IconName {
  if (mime?.startsWith('video/')) return 'video';
  if (mime?.startsWith('audio/')) return 'audio';
  if (mime?.startsWith('image/')) return 'image';
  return 'file';
}

export interface Thumbnailer {
  /** The thumbnail of a downloaded file, or the icon that stands in for it; null when the store does not hold the file. */
  thumbnail(sha256: string): Promise<Thumbnail | null>;
  /** Changes with anything that changes what `thumbnail` makes (for ETags). */
  readonly variant: string;
}

/**
 * `written` runs after a thumbnail was put into the store: the wiring queues the file for the collector
 * when no attachment references it any more (a collector pass may have removed the file meanwhile).
 */
export function createThumbnailer(
  store: MediaStore,
  logger: FastifyBaseLogger,
  written?: (sha256: string) => Promise<unknown>,
): Thumbnailer {
  const limits = thumbnailLimits;
  // Memory stays bounded by the images being made: libvips keeps no cache of earlier operations,
  // and each image is processed on one thread (the concurrency limit is the parallelism).
  sharp.cache(false);
  sharp.concurrency(1);
  const admitted = admission(limits.concurrency, limits.memoryBudget);
  const variant = `w${limits.size}`;
  const inFlight = new Map<string, Promise<Thumbnail | null>>();

  const input = (source: string) =>
    sharp(source, { limitInputPixels: limits.maxInputPixels, sequentialRead: true, failOn: 'error', autoOrient: true });

  /** Renders the thumbnail into the spool, then puts it into the store under `key`. */
  async function render(source: string, key: string): Promise<void> {
    const partial = await store.tempFile('thumbnail-');
    try {
      await input(source)
        .resize({ width: limits.size, height: limits.size, fit: 'inside', withoutEnlargement: true })
        .webp({ quality: 78 })
        .toFile(partial);
      await store.putFile(key, partial, 'image/webp');
    } finally {
      await fs.rm(partial, { force: true });
    }
  }

  /** From the file as a local file (the directory store's own, or a copy of the bucket's object). */
  async function makeFrom(sha256: string, source: string, key: string): Promise<Thumbnail> {
    const sniffed = await fileTypeFromFile(source);
    if (!sniffed || !decodable.has(sniffed.mime)) return { icon: iconFor(sniffed?.mime) };
    try {
      // The header only: its pixel count is checked before anything else is read.
      const meta = await input(source).metadata();
      const cost = decodeCost(meta);
      if (cost > limits.memoryBudget) {
        const { format, width, height, isProgressive } = meta;
        logger.warn(
          { sha256, type: sniffed.mime, format, width, height, isProgressive, cost },
          'no thumbnail for this image: decoding it would take more memory than thumbnails may use',
        );
        return { icon: 'unreadable' };
      }
      await admitted(cost, () => render(source, key));
      await written?.(sha256);
      return { key };
    } catch (err) {
      logger.warn({ err, sha256, type: sniffed.mime }, 'no thumbnail for this image');
      return { icon: 'unreadable' };
    }
  }

  async function make(sha256: string): Promise<Thumbnail | null> {
    const key = thumbnailKey(sha256, variant);
    if (await store.head(key)) return { key };
    return store.withLocalFile(mediaKey(sha256), (source) => makeFrom(sha256, source, key));
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
