// What every platform's API client shares: the error of a failed call, a file the API streams, and what
// a download gets for an attachment without a URL.

import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';

/** Where a platform's API client calls, and how long it waits for an answer. */
export interface ApiClientOptions {
  /** The API's root URL (a setting such as TELEGRAM_API_ROOT), without a trailing slash. */
  apiRoot: string;
  /** Longest wait for the answer to one call (a file's body is limited by its caller). */
  callTimeoutMs?: number;
}

/** A failed call to a platform's API; its message is written by albumflow and never holds a credential. */
export class PlatformApiError extends Error {
  override name = 'PlatformApiError';
  constructor(
    message: string,
    /** Another attempt may succeed (network, throttling, a server error, a file not ready yet). */
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

/** A file being received: its bytes, and what the server said of them. */
export interface StreamedFile {
  stream: Readable;
  /** Bytes announced by the server or the file system; null when unknown. */
  contentLength: number | null;
  contentType: string | null;
}

/** The body of a fetch response that has one (the caller checked `response.body`) as a StreamedFile. */
export function streamedFile(response: Response): StreamedFile {
  const length = Number(response.headers.get('content-length'));
  const stream = Readable.fromWeb(response.body as WebReadableStream<Uint8Array>);
  // A transfer that breaks before the caller reads (it opens its file first) errors this stream while
  // nothing listens, which Node throws as an uncaught exception and stops the worker. The caller's read
  // still fails with that error (the stream is destroyed with it); this listener only keeps it from being thrown.
  stream.on('error', () => undefined);
  return {
    stream,
    contentLength: response.headers.has('content-length') && Number.isSafeInteger(length) ? length : null,
    contentType: response.headers.get('content-type'),
  };
}

/**
 * Why a call got no answer, as a PlatformApiError (retryable): a time limit or the network's error code.
 * The caller's own abort stays the caller's (its reason is returned as it is).
 */
export function unreachable(what: string, host: string, timeoutMs: number, err: unknown, signal: AbortSignal | undefined): unknown {
  if (signal?.aborted) return signal.reason;
  if ((err as Error).name === 'TimeoutError')
    return new PlatformApiError(`${what}: no answer from ${host} within ${timeoutMs / 1000} s`, true);
  const cause = (err as { cause?: { code?: unknown } }).cause;
  const code = typeof cause?.code === 'string' ? cause.code : 'network error';
  return new PlatformApiError(`${what}: cannot reach ${host} (${code})`, true);
}

/** The host of an API root for messages, or `fallback` when the root is no URL. */
export function hostOf(root: string, fallback: string): string {
  try {
    return new URL(root).host;
  } catch {
    return fallback;
  }
}

/** What a platform's API answered for an attachment's file. */
export type OpenedFile =
  | ({ status: 'ready' } & StreamedFile)
  /** The platform no longer has the file (expired), or will never let albumflow have it (unavailable): asking again does not help. */
  | { status: 'expired' | 'unavailable'; reason: string };

/**
 * The file of one attachment from a platform's API, with credentials read from the configuration now.
 * `open` throws a PlatformApiError (its `retryable` says whether another attempt may help); any other
 * failure's words are kept only once `redact` took the credentials out of them.
 */
export interface MediaApi {
  /** For messages: "the Bot API". */
  apiName: string;
  open(signal: AbortSignal): Promise<OpenedFile>;
  redact(text: string): string;
}

/** A MediaApi that refuses at once, for good: the credentials it needs are not configured. */
export function refusedMediaApi(apiName: string, message: string): MediaApi {
  return {
    apiName,
    open: () => Promise.reject(new PlatformApiError(message, false)),
    redact: (text) => text,
  };
}
