import type { MediaSource } from './errors.js';

/**
 * A file from a platform's API, with a token read from the configuration now (a Telegram bot's, a LINE
 * channel's). `open` throws the API's own error (its `retryable` says whether another attempt may help);
 * any other failure's words are kept only once `redact` took the token out of them.
 */
export interface ApiFetch {
  /** For messages: "the Bot API". */
  apiName: string;
  open(signal: AbortSignal): Promise<MediaSource>;
  redact(text: string): string;
}
