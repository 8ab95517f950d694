// The files the bench's media server serves: real JPEG, PNG and WebP images (encoded with sharp from
// seeded pixels, so every run serves the same bytes) and MP4-like video files, 100 KB to 3 MB, in a mix
// weighted the way chat albums are: mostly compressed photos, some originals, screenshots and clips; and
// one 50 MB video of weight 0, which only a workload that asks for it by name sends (the media store
// phase, to show that a download streams). Nothing is committed: the files are made when the media
// server starts; each is held as parts whose concatenation is the file (the large video repeats one
// seeded megabyte, so the server holds 1 MB of it, not 50).
import crypto from 'node:crypto';
import sharp from 'sharp';
import { seededRandom } from '../random.js';

/** One file of the catalogue, as the workload sees it (no bytes). */
export interface MediaFile {
  name: string;
  mimeType: string;
  kind: 'image' | 'video';
  bytes: number;
  /** Relative share of the children whose attachment is this file (0: drawn only by a workload that weighs it itself). */
  weight: number;
}

/** A file of the catalogue with its bytes: the concatenation of `parts` (a part may repeat). */
export interface GeneratedMedia extends MediaFile {
  format: Format;
  parts: readonly Buffer[];
}

export type Format = 'jpeg' | 'png' | 'webp' | 'mp4';

interface MediaSpec {
  name: string;
  format: Format;
  targetBytes: number;
  weight: number;
  /** Amplitude of the pixel noise over the smooth picture: the detail that makes a photo large. */
  noise: number;
}

const kB = 1000;

const specs: readonly MediaSpec[] = [
  { name: 'photo-small.jpg', format: 'jpeg', targetBytes: 120 * kB, weight: 8, noise: 40 },
  { name: 'photo.jpg', format: 'jpeg', targetBytes: 250 * kB, weight: 8, noise: 40 },
  { name: 'photo-large.jpg', format: 'jpeg', targetBytes: 600 * kB, weight: 3, noise: 50 },
  { name: 'photo-original.jpg', format: 'jpeg', targetBytes: 2500 * kB, weight: 1, noise: 60 },
  { name: 'screenshot.png', format: 'png', targetBytes: 400 * kB, weight: 2, noise: 12 },
  { name: 'drawing.png', format: 'png', targetBytes: 1500 * kB, weight: 1, noise: 24 },
  { name: 'photo.webp', format: 'webp', targetBytes: 150 * kB, weight: 3, noise: 40 },
  { name: 'photo-large.webp', format: 'webp', targetBytes: 500 * kB, weight: 1, noise: 50 },
  { name: 'clip.mp4', format: 'mp4', targetBytes: 1200 * kB, weight: 1, noise: 0 },
  { name: 'clip-long.mp4', format: 'mp4', targetBytes: 3000 * kB, weight: 1, noise: 0 },
  { name: 'video-50mb.mp4', format: 'mp4', targetBytes: 50_000 * kB, weight: 0, noise: 0 },
];

const mimeTypes: Record<Format, string> = { jpeg: 'image/jpeg', png: 'image/png', webp: 'image/webp', mp4: 'video/mp4' };

/** A smooth, photo-like picture (broad colour waves) with seeded noise on top, as raw RGB. */
function pixels(width: number, height: number, noise: number, random: () => number): Buffer {
  const rgb = Buffer.alloc(width * height * 3);
  let i = 0;
  for (let y = 0; y < height; y++) {
    const v = y / height;
    for (let x = 0; x < width; x++) {
      const u = x / width;
      const base = [120 + 90 * Math.sin(6 * u + 2 * v), 110 + 80 * Math.cos(5 * v - 3 * u), 100 + 70 * Math.sin(4 * (u + v))];
      for (const channel of base) rgb[i++] = Math.max(0, Math.min(255, Math.round(channel + (random() - 0.5) * noise)));
    }
  }
  return rgb;
}

async function encode(format: Exclude<Format, 'mp4'>, width: number, height: number, noise: number, seed: number): Promise<Buffer> {
  const image = sharp(pixels(width, height, noise, seededRandom(seed)), { raw: { width, height, channels: 3 } });
  if (format === 'jpeg') return image.jpeg({ quality: 85 }).toBuffer();
  if (format === 'png') return image.png().toBuffer();
  return image.webp({ quality: 80 }).toBuffer();
}

/**
 * An image of about `targetBytes`: the encoded size grows with the pixel count, so the picture is
 * rescaled by the ratio of the target to what the last encoding gave (twice, which lands within a few
 * per cent).
 */
async function image(spec: MediaSpec & { format: Exclude<Format, 'mp4'> }, seed: number): Promise<Buffer> {
  let width = 640;
  let height = 480;
  let body = await encode(spec.format, width, height, spec.noise, seed);
  for (let pass = 0; pass < 2; pass++) {
    const scale = Math.sqrt(spec.targetBytes / body.length);
    width = Math.max(16, Math.round(width * scale));
    height = Math.max(12, Math.round(height * scale));
    body = await encode(spec.format, width, height, spec.noise, seed);
  }
  return body;
}

function box(type: string, payload: Buffer): Buffer {
  const header = Buffer.alloc(8);
  header.writeUInt32BE(8 + payload.length, 0);
  header.write(type, 4, 'latin1');
  return Buffer.concat([header, payload]);
}

/** Payloads above this repeat one seeded block of this size instead of drawing every byte. */
const blockBytes = 1024 * 1024;

/**
 * An ISO BMFF file as MP4 players sniff it (an `ftyp` box, then an `mdat` of seeded bytes), exactly `bytes`
 * long, as parts: the two box headers, then the payload (one block repeated when it is over a block).
 */
function mp4(bytes: number, seed: number): Buffer[] {
  const ftyp = box(
    'ftyp',
    Buffer.concat([Buffer.from('isom', 'latin1'), Buffer.from([0, 0, 2, 0]), Buffer.from('isomiso2avc1mp41', 'latin1')]),
  );
  const random = seededRandom(seed);
  const payloadBytes = bytes - ftyp.length - 8;
  const block = Buffer.alloc(Math.min(payloadBytes, blockBytes));
  for (let i = 0; i < block.length; i++) block[i] = Math.floor(random() * 256);
  const mdatHeader = Buffer.alloc(8);
  mdatHeader.writeUInt32BE(8 + payloadBytes, 0);
  mdatHeader.write('mdat', 4, 'latin1');
  const parts = [ftyp, mdatHeader];
  for (let left = payloadBytes; left > 0; left -= block.length) parts.push(left >= block.length ? block : block.subarray(0, left));
  return parts;
}

/** Makes every file of the catalogue (a few seconds of CPU, before anything is measured). */
export async function generateMedia(seed: number): Promise<GeneratedMedia[]> {
  const files: GeneratedMedia[] = [];
  for (const [index, spec] of specs.entries()) {
    const fileSeed = seed + index;
    const parts = spec.format === 'mp4' ? mp4(spec.targetBytes, fileSeed) : [await image({ ...spec, format: spec.format }, fileSeed)];
    files.push({
      name: spec.name,
      mimeType: mimeTypes[spec.format],
      kind: spec.format === 'mp4' ? 'video' : 'image',
      bytes: parts.reduce((sum, part) => sum + part.length, 0),
      weight: spec.weight,
      format: spec.format,
      parts,
    });
  }
  return files;
}

/**
 * The file with bytes of its own for `tag` (a child's id), still a valid file of its format: a JPEG gets a
 * comment segment after its start-of-image marker, an MP4 the tag's SHA-256 over the first bytes of its
 * `mdat` payload. Null for the formats it does not vary (PNG, WebP).
 */
export function uniqueParts(file: GeneratedMedia, tag: string): Buffer[] | null {
  const digest = crypto.createHash('sha256').update(tag).digest();
  if (file.format === 'jpeg') {
    const [first, ...rest] = file.parts;
    const text = Buffer.from(`albumflow ${digest.toString('hex')}`, 'latin1');
    const segment = Buffer.alloc(4 + text.length);
    segment.writeUInt16BE(0xfffe, 0);
    segment.writeUInt16BE(2 + text.length, 2);
    text.copy(segment, 4);
    return [first!.subarray(0, 2), segment, first!.subarray(2), ...rest];
  }
  if (file.format === 'mp4') {
    const [ftyp, mdatHeader, payload, ...rest] = file.parts;
    const head = Buffer.concat([digest, payload!.subarray(0, Math.min(payload!.length, 64 * 1024) - digest.length)]);
    const tail = payload!.subarray(head.length);
    return [ftyp!, mdatHeader!, head, ...(tail.length > 0 ? [tail] : []), ...rest];
  }
  return null;
}
