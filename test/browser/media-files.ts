// Real image files for the console's tests, made with sharp, and a media server that serves them
// to the download activity the way a platform's CDN would.
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { unique } from '../harness/random.js';

export { jpeg, png } from '../harness/images.js';

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

interface Route {
  status: number;
  contentType: string;
  body: Buffer;
}

export interface MediaServer {
  /** A URL that answers 200 with `body` and `contentType`. */
  file(body: Buffer, contentType: string): string;
  /** A URL that answers `status` with no file, until `serve` is called for it. */
  failing(status: number): string;
  /** From now on, `url` answers 200 with `body`. */
  serve(url: string, body: Buffer, contentType: string): void;
  close(): Promise<void>;
}

export async function startMediaServer(): Promise<MediaServer> {
  const routes = new Map<string, Route>();
  const server = http.createServer((req, res) => {
    const route = routes.get(req.url ?? '');
    if (!route) res.writeHead(404).end();
    else if (route.status !== 200) res.writeHead(route.status).end();
    else res.writeHead(200, { 'content-type': route.contentType, 'content-length': route.body.length }).end(route.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const add = (route: Route) => {
    const path = `/${unique('media')}`;
    routes.set(path, route);
    return `${base}${path}`;
  };
  return {
    file: (body, contentType) => add({ status: 200, contentType, body }),
    failing: (status) => add({ status, contentType: 'text/plain', body: Buffer.alloc(0) }),
    serve(url, body, contentType) {
      routes.set(new URL(url).pathname, { status: 200, contentType, body });
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
