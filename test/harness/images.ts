// Real image files, drawn as SVG and rasterised by sharp: for the console's tests, and the photos the
// fake Bot API serves in the Telegram demo; a variant of a photo as another file, and a decompression bomb.
// No test runner is needed to make them.
import { once } from 'node:events';
import zlib from 'node:zlib';
import sharp from 'sharp';

/** A landscape to look at (sky, sun, hills, sea) in colours taken from `hue`, drawn as SVG and rasterised by sharp. */
function scene(width: number, height: number, hue: number) {
  const horizon = Math.round(height * 0.62);
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
    <defs>
      <linearGradient id="sky" x1="0" y1="0" x2="0" y2="1">
        <stop offset="0" stop-color="hsl(${hue}, 70%, 45%)"/><stop offset="1" stop-color="hsl(${hue + 40}, 85%, 78%)"/>
      </linearGradient>
      <linearGradient id="sea" x1="0" y1="0" x2="0" y2="1">
        <stop offset="0" stop-color="hsl(${hue + 180}, 45%, 40%)"/><stop offset="1" stop-color="hsl(${hue + 200}, 55%, 18%)"/>
      </linearGradient>
    </defs>
    <rect width="100%" height="100%" fill="url(#sky)"/>
    <circle cx="${width * 0.68}" cy="${horizon - height * 0.12}" r="${Math.min(width, height) * 0.11}" fill="hsl(${hue + 50}, 95%, 88%)"/>
    <path d="M0 ${horizon} Q ${width * 0.25} ${horizon - height * 0.18} ${width * 0.5} ${horizon} T ${width} ${horizon - height * 0.05} V ${horizon} Z" fill="hsl(${hue + 120}, 30%, 30%)"/>
    <rect y="${horizon}" width="100%" height="${height - horizon}" fill="url(#sea)"/>
  </svg>`;
  return sharp(Buffer.from(svg));
}

/** A JPEG photo of `width` × `height`; different hues give different files. */
export function jpeg(width: number, height: number, hue: number): Promise<Buffer> {
  return scene(width, height, hue).jpeg({ quality: 85 }).toBuffer();
}

/**
 * An MP4 file as players and file-type sniff it (an `ftyp` box, then an `mdat` box of bytes drawn from
 * `seed`), `bytes` long: what the fake Bot API serves for a video. Not playable; never decoded by albumflow.
 */
export function mp4(bytes: number, seed: number): Buffer {
  const box = (type: string, payload: Buffer) => {
    const header = Buffer.alloc(8);
    header.writeUInt32BE(8 + payload.length, 0);
    header.write(type, 4, 'latin1');
    return Buffer.concat([header, payload]);
  };
  const ftyp = box(
    'ftyp',
    Buffer.concat([Buffer.from('isom', 'latin1'), Buffer.from([0, 0, 2, 0]), Buffer.from('isomiso2avc1mp41', 'latin1')]),
  );
  const payload = Buffer.alloc(Math.max(0, bytes - ftyp.length - 8));
  let state = seed >>> 0 || 1;
  for (let i = 0; i < payload.length; i++) {
    // xorshift32: the same bytes for the same seed, a different file for another.
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    payload[i] = state & 0xff;
  }
  return Buffer.concat([ftyp, box('mdat', payload)]);
}

/** A PNG with transparency. */
export function png(width: number, height: number, hue: number): Promise<Buffer> {
  return scene(width, height, hue).removeAlpha().ensureAlpha(0.85).png().toBuffer();
}

/** The same photo as another file: a JPEG comment (COM segment) after SOI makes its bytes and hash differ. */
export function variant(photo: Buffer, label: string): Buffer {
  const text = Buffer.from(label);
  const segment = Buffer.alloc(4);
  segment.writeUInt16BE(0xfffe, 0);
  segment.writeUInt16BE(text.length + 2, 2);
  return Buffer.concat([photo.subarray(0, 2), segment, text, photo.subarray(2)]);
}

function pngChunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'ascii');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(zlib.crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

/**
 * A decompression bomb: a valid 1-bit greyscale PNG of `side` × `side` pixels, all zero, so that a
 * file of about `side`² / 8000 bytes (110 KB for 30,000) decodes to `side`² pixels.
 */
export async function pngBomb(side: number): Promise<Buffer> {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(side, 0);
  header.writeUInt32BE(side, 4);
  header.writeUInt8(1, 8); // bit depth 1, colour type 0 (greyscale), default compression, filter, no interlace
  const deflate = zlib.createDeflate({ level: 9 });
  const compressed = (async () => {
    const parts: Buffer[] = [];
    for await (const chunk of deflate) parts.push(chunk as Buffer);
    return Buffer.concat(parts);
  })();
  const row = Buffer.alloc(1 + Math.ceil(side / 8));
  for (let y = 0; y < side; y++) if (!deflate.write(row)) await once(deflate, 'drain');
  deflate.end();
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', header),
    pngChunk('IDAT', await compressed),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}
