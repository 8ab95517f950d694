// How a fetcher tells the download activity what went wrong, and what it hands over when it opened a file.
import type { Readable } from 'node:stream';

/** A failure that retrying cannot fix: recorded with its status at once. */
export class PermanentDownloadError extends Error {
  constructor(
    readonly status: 'expired' | 'failed',
    message: string,
  ) {
    super(message);
  }
}

/** A failure another attempt may not have (server error, throttling, network, time limit). */
export class TransientDownloadError extends Error {}

/** The platform will not let albumflow have the file, for good (a Telegram file too large for the Bot API). */
export class UnavailableDownloadError extends Error {}

/** An opened file to store: its bytes, and what the server said of them. */
export interface MediaSource {
  body: Readable;
  /** Announced by the server; null when unknown. */
  contentLength: number | null;
  contentType: string | null;
}

export function seconds(ms: number): string {
  return `${ms / 1000} s`;
}
