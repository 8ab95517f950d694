// One attempt on the network: a POST that follows no redirect, waits a bounded time for the answer and
// keeps at most 1 KB of it.
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { StringDecoder } from 'node:string_decoder';
import { errorMessage } from '../common/error-message.js';
import type { SignedRequest } from './wire.js';

/** How much of a receiver's answer is kept (bytes of UTF-8). */
export const maxResponseBytes = 1024;

export interface PostResult {
  /** Null when no answer came (see `error`). */
  statusCode: number | null;
  retryAfter: string | undefined;
  /** At most `maxResponseBytes` of the answer's body, as text. */
  response: string | null;
  /** Why no answer came, or why an answer is not a success the status says by itself (a redirect). */
  error: string | null;
  timedOut: boolean;
  durationMs: number;
}

export interface PostOptions {
  timeoutMs: number;
  /** Connects to this address instead of asking DNS (the one the network guard vetted). */
  lookup?: LookupFunction;
}

/** The answer's first bytes as text PostgreSQL stores: no NUL, whole characters, at most `maxResponseBytes`. */
function responseText(bytes: Buffer): string {
  const text = new StringDecoder('utf8').write(bytes.subarray(0, maxResponseBytes)).replaceAll('\u0000', '\ufffd');
  // Replacement characters may have made it longer than the bytes it came from.
  return Buffer.byteLength(text) <= maxResponseBytes
    ? text
    : new StringDecoder('utf8').write(Buffer.from(text).subarray(0, maxResponseBytes));
}

function redirectError(statusCode: number, location: string | undefined): string | null {
  if (statusCode < 300 || statusCode >= 400) return null;
  return `redirects are not followed (HTTP ${statusCode}${location ? ` to ${location.slice(0, 200)}` : ''})`;
}

/** Posts the request; resolves with what happened, never rejects. */
export function postWebhook(url: URL, request: SignedRequest, options: PostOptions): Promise<PostResult> {
  const started = performance.now();
  const timeout = AbortSignal.timeout(options.timeoutMs);
  return new Promise((resolve) => {
    let statusCode: number | null = null;
    let retryAfter: string | undefined;
    let location: string | undefined;
    const chunks: Buffer[] = [];
    let kept = 0;
    let settled = false;
    const finish = (failure: string | null) => {
      if (settled) return;
      settled = true;
      req.destroy();
      resolve({
        statusCode,
        retryAfter,
        response: statusCode === null ? null : responseText(Buffer.concat(chunks)),
        error: failure ?? (statusCode === null ? null : redirectError(statusCode, location)),
        timedOut: statusCode === null && timeout.aborted,
        durationMs: Math.round(performance.now() - started),
      });
    };
    const req = (url.protocol === 'https:' ? https : http).request(url, {
      method: 'POST',
      headers: { ...request.headers, 'content-length': String(Buffer.byteLength(request.body)), 'user-agent': 'albumflow' },
      agent: false,
      signal: timeout,
      ...(options.lookup ? { lookup: options.lookup } : {}),
    });
    req.once('response', (res) => {
      statusCode = res.statusCode ?? null;
      retryAfter = res.headers['retry-after'];
      location = res.headers.location;
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        kept += chunk.length;
        if (kept >= maxResponseBytes) finish(null);
      });
      // The answer came: a body cut short (the timeout, a reset) changes nothing of it.
      res.once('end', () => finish(null));
      res.once('error', () => finish(null));
      res.once('close', () => finish(null));
    });
    req.once('error', (err) => {
      if (statusCode !== null) return finish(null);
      const reason = errorMessage(err) || (err as NodeJS.ErrnoException).code || err.name;
      finish(timeout.aborted ? `no answer within ${options.timeoutMs / 1000} s` : reason);
    });
    req.end(request.body);
  });
}
