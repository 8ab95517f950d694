import { ActivityFailure } from '@temporalio/workflow';
import { downloadAttachment, downloadFinalAttempt } from './activities.js';
import type { DownloadResult, MessageKey } from './types.js';

/** The message of an activity's failure (its cause's, when the activity threw), for logs and statuses. */
export function failureMessage(err: unknown): string {
  if (err instanceof ActivityFailure && err.cause) return err.cause.message;
  return err instanceof Error ? err.message : String(err);
}

/**
 * Download activities started at once per workflow, at most; Temporal refuses a workflow task that would
 * leave more than 2,000 activities pending (a 10,000-photo album), so the rest wait for a free place.
 */
export const maxDownloadsInFlight = 100;

/** One download activity per attachment, started at once (or as soon as a place frees up); a download that fails for good counts as `failed`. */
export class Downloads {
  /** Downloads started or waiting, not settled yet. */
  inFlight = 0;
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  /** `retry`: an operator's retry, which starts over even where PostgreSQL says failed or expired. */
  start(key: MessageKey, position: number, retry: boolean, onSettled: (result: DownloadResult) => void): void {
    this.inFlight += 1;
    const launch = () => {
      this.running += 1;
      void downloadAttachment
        .executeWithOptions({ summary: `download ${key.messageId} #${position}` }, [{ key, position, finalAttempt: downloadFinalAttempt, retry }])
        .catch((err: unknown): DownloadResult => ({ status: 'failed', contentType: null, bytes: null, sha256: null, error: failureMessage(err) }))
        .then((result) => {
          this.running -= 1;
          this.inFlight -= 1;
          onSettled(result);
          this.waiting.shift()?.();
        });
    };
    if (this.running >= maxDownloadsInFlight) this.waiting.push(launch);
    else launch();
  }
}
