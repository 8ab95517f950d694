// The bench's media server, run as its own process by the bench: it serves the catalogue's files
// (bench/media/catalogue.ts) as a platform's file CDN would, with a time to first byte and a throughput
// per response, so a download takes as long as a real one of its size and holds its connection as long.
// GET /media/<name>[?…] serves a file (the query is ignored: each child has a URL of its own);
// GET /catalogue answers the files' names, types and sizes.
// Reads PORT, HOST, MEDIA_SEED, MEDIA_FIRST_BYTE_MS and MEDIA_MB_PER_S.
import { once } from 'node:events';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { seededRandom } from '../random.js';
import { generateMedia, type MediaFile } from './catalogue.js';

const chunkBytes = 64 * 1024;

function setting(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number`);
  return value;
}

const seed = setting('MEDIA_SEED', 1);
const firstByteMs = setting('MEDIA_FIRST_BYTE_MS', 60);
const bytesPerMs = (setting('MEDIA_MB_PER_S', 25) * 1e6) / 1000;
if (bytesPerMs === 0) throw new Error('MEDIA_MB_PER_S must be above 0');

const files = await generateMedia(seed);
const byName = new Map(files.map((file) => [file.name, file]));
const catalogue: MediaFile[] = files.map(({ body: _body, ...file }) => file);
const random = seededRandom(seed);

/** Waits the time to first byte, then writes the file no faster than the throughput allows. */
async function serve(response: http.ServerResponse, file: MediaFile & { body: Buffer }): Promise<void> {
  await sleep(firstByteMs * (0.5 + random()));
  if (response.destroyed) return;
  response.writeHead(200, { 'content-type': file.mimeType, 'content-length': file.body.length });
  const start = performance.now();
  for (let offset = 0; offset < file.body.length; offset += chunkBytes) {
    const due = start + offset / bytesPerMs - performance.now();
    if (due > 1) await sleep(due);
    if (response.destroyed) return;
    if (!response.write(file.body.subarray(offset, offset + chunkBytes)))
      await Promise.race([once(response, 'drain'), once(response, 'close')]);
  }
  response.end();
}

function json(response: http.ServerResponse, body: unknown): void {
  response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

const server = http.createServer((request, response) => {
  const { pathname } = new URL(request.url ?? '/', 'http://media');
  if (request.method !== 'GET') return void response.writeHead(405).end();
  if (pathname === '/catalogue') return json(response, catalogue);
  const file = pathname.startsWith('/media/') ? byName.get(decodeURIComponent(pathname.slice('/media/'.length))) : undefined;
  if (!file) return void response.writeHead(404).end();
  serve(response, file).catch(() => response.destroy());
});
server.keepAliveTimeout = 30_000;

const host = process.env.HOST ?? '127.0.0.1';
server.listen(Number(process.env.PORT ?? 0), host, () => {
  const address = server.address();
  process.stdout.write(`media server listening on http://${host}:${typeof address === 'object' && address ? address.port : 0}\n`);
});

const shutdown = () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
};
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);
