// The media server of the tests, the fault suite and the bench, standing in for a platform's file CDN: a
// route table (a file, a failure, a handler of the test's own, each at a fresh path) and, for every other
// path, a fallback: 404, the bench's catalogue of real images at a time to first byte and a throughput,
// or the fault suite's bodies trickled out so that a kill lands mid-download. It logs every fetch and
// counts the responses in flight.
import crypto from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { seededRandom, unique } from '../random.js';
import { generateMedia, uniqueParts, type MediaFile } from './catalogue.js';
import { listen } from './listen.js';

/** Answers one request; `hit` counts the requests for its path so far, this one included. */
export type Handler = (req: http.IncomingMessage, res: http.ServerResponse, hit: number) => void;

export interface Fetch {
  /** As requested, with the query. */
  path: string;
  startedAt: number;
  /** When the whole response was sent; null when the connection ended first (a killed worker). */
  completedAt: number | null;
}

export interface MediaServerOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default: a free one. */
  port?: number;
  /** What a path without a route gets; default 404. */
  fallback?: Handler;
  /** Keep the fetches in `fetches` (default); the bench's server, whose memory it measures, keeps none. */
  logFetches?: boolean;
  keepAliveTimeoutMs?: number;
}

export interface MediaServer {
  baseUrl: string;
  port: number;
  /** The URL of `path` on this server. */
  url(path: string): string;
  fetches: Fetch[];
  /** Responses being sent now. */
  inFlight(): number;
  /** Requests for this URL's path (its query ignored). */
  hits(url: string): number;
  totalHits(): number;
  /** Serves `handler` at a fresh path; answers its URL. */
  route(handler: Handler): string;
  /** A fresh URL that answers 200 with `body`. */
  file(body: Buffer | string, contentType?: string, headers?: http.OutgoingHttpHeaders): string;
  /** A fresh URL that answers `status` with no file, until `serve` is called for it. */
  failing(status: number): string;
  /** A fresh URL that answers 410 Gone. */
  gone(): string;
  /** From now on `url` (or a path) answers 200 with `body`. */
  serve(url: string, body: Buffer | string, contentType?: string): void;
  close(): Promise<void>;
}

/** 200 with `body`. */
export function sendBody(body: Buffer | string, contentType = 'image/jpeg', headers: http.OutgoingHttpHeaders = {}): Handler {
  return (_req, res) =>
    res.writeHead(200, { 'content-type': contentType, 'content-length': Buffer.byteLength(body), ...headers }).end(body);
}

const pathOf = (url: string) => new URL(url, 'http://media').pathname;

export async function startMediaServer(options: MediaServerOptions = {}): Promise<MediaServer> {
  const { host = '127.0.0.1', logFetches = true } = options;
  const fallback: Handler = options.fallback ?? ((_req, res) => res.writeHead(404).end());
  const routes = new Map<string, Handler>();
  const hits = new Map<string, number>();
  const fetches: Fetch[] = [];
  let inFlight = 0;
  const server = http.createServer((req, res) => {
    const route = pathOf(req.url ?? '/');
    const hit = (hits.get(route) ?? 0) + 1;
    hits.set(route, hit);
    inFlight += 1;
    res.once('close', () => (inFlight -= 1));
    if (logFetches) {
      const fetch: Fetch = { path: req.url ?? '', startedAt: Date.now(), completedAt: null };
      fetches.push(fetch);
      res.once('finish', () => (fetch.completedAt = Date.now()));
    }
    (routes.get(route) ?? fallback)(req, res, hit);
  });
  if (options.keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = options.keepAliveTimeoutMs;
  const port = await listen(server, options.port, host);
  const baseUrl = `http://${host}:${port}`;
  const route = (handler: Handler) => {
    const path = `/${unique('media')}`;
    routes.set(path, handler);
    return `${baseUrl}${path}`;
  };
  return {
    baseUrl,
    port,
    url: (path) => `${baseUrl}${path}`,
    fetches,
    inFlight: () => inFlight,
    hits: (url) => hits.get(pathOf(url)) ?? 0,
    totalHits: () => [...hits.values()].reduce((sum, n) => sum + n, 0),
    route,
    file: (body, contentType, headers) => route(sendBody(body, contentType, headers)),
    failing: (status) => route((_req, res) => res.writeHead(status).end()),
    gone: () => route((_req, res) => res.writeHead(410).end()),
    serve(url, body, contentType) {
      routes.set(pathOf(url), sendBody(body, contentType));
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** Every path: a body of `bytes` (its bytes from the path) written in eight parts over `durationMs()`. */
export function trickle(options: { bytes: number; durationMs: () => number }): Handler {
  return (req, res) => {
    const body = crypto
      .createHash('sha256')
      .update(req.url ?? '')
      .digest();
    const chunks = 8;
    const chunkBytes = Math.ceil(options.bytes / chunks);
    const pause = options.durationMs() / chunks;
    res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': chunkBytes * chunks });
    let sent = 0;
    const timer = setInterval(() => {
      res.write(Buffer.alloc(chunkBytes, body[sent % body.length]));
      sent += 1;
      if (sent === chunks) {
        clearInterval(timer);
        res.end();
      }
    }, pause);
    res.once('close', () => clearInterval(timer));
  };
}

export interface CatalogueOptions {
  /** Seeds the files and the time to first byte of each response. */
  seed: number;
  /** Mean time to first byte, ms (each response draws from half to one and a half of it). */
  firstByteMs: number;
  /** Throughput per response, MB/s (10^6 bytes). */
  megabytesPerSecond: number;
}

/**
 * The catalogue's files (catalogue.ts) as a platform's file CDN serves them: GET /media/<name>[?…] (the
 * query is ignored: each child has a URL of its own) waits the time to first byte, then writes the file no
 * faster than the throughput allows, so a download takes as long as a real one of its size and holds its
 * connection as long; GET /unique/<name>?child=<id> does the same with bytes of the child's own (a JPEG or
 * an MP4 only; uniqueParts), so that no two children's files share a hash in a content-addressed store;
 * GET /catalogue answers the files' names, types and sizes.
 */
export async function catalogue(options: CatalogueOptions): Promise<Handler> {
  const chunkBytes = 64 * 1024;
  const bytesPerMs = (options.megabytesPerSecond * 1e6) / 1000;
  const files = await generateMedia(options.seed);
  const byName = new Map(files.map((file) => [file.name, file]));
  const listed: MediaFile[] = files.map(({ parts: _parts, format: _format, ...file }) => file);
  const random = seededRandom(options.seed);

  const serve = async (res: http.ServerResponse, mimeType: string, parts: readonly Buffer[]) => {
    await sleep(options.firstByteMs * (0.5 + random()));
    if (res.destroyed) return;
    res.writeHead(200, { 'content-type': mimeType, 'content-length': parts.reduce((sum, part) => sum + part.length, 0) });
    const start = performance.now();
    let sent = 0;
    for (const part of parts) {
      for (let offset = 0; offset < part.length; offset += chunkBytes) {
        const due = start + sent / bytesPerMs - performance.now();
        if (due > 1) await sleep(due);
        if (res.destroyed) return;
        const chunk = part.subarray(offset, offset + chunkBytes);
        sent += chunk.length;
        if (!res.write(chunk)) await Promise.race([once(res, 'drain'), once(res, 'close')]);
      }
    }
    res.end();
  };

  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://media');
    const { pathname } = url;
    if (req.method !== 'GET') return void res.writeHead(405).end();
    if (pathname === '/catalogue') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(listed));
    const [, folder, name] = /^\/(media|unique)\/([^/]+)$/.exec(pathname) ?? [];
    const file = name === undefined ? undefined : byName.get(decodeURIComponent(name));
    if (!file) return void res.writeHead(404).end();
    const parts = folder === 'unique' ? uniqueParts(file, url.searchParams.get('child') ?? '') : file.parts;
    if (!parts) return void res.writeHead(404).end();
    serve(res, file.mimeType, parts).catch(() => res.destroy());
  };
}
