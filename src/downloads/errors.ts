// How opening a file tells the download what went wrong.

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

export function seconds(ms: number): string {
  return `${ms / 1000} s`;
}
