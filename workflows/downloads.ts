import { rootCause } from '@temporalio/workflow';
import { downloadAttachments, downloadFinalAttempt } from './activities.js';
import type { DownloadRequest, DownloadResult } from '../src/domain/types.js';

/**
 * Attachments downloading at once per workflow, at most: one album of 10,000 photos does not take every
 * fetch of its worker (nor leave thousands of activities pending); the rest wait for a free place.
 */
export const maxDownloadsInFlight = 100;

/** Attachments one download activity takes at most (a few activities share a large signal's). */
export const maxAttachmentsPerActivity = 25;

/** How a workflow of this module runs; set in code by whoever registers it (albumflow's worker: the defaults). */
export interface WorkflowOptions {
  /** Attachments one download activity takes at most. */
  attachmentsPerActivity: number;
}

export const defaultWorkflowOptions: WorkflowOptions = { attachmentsPerActivity: maxAttachmentsPerActivity };

type OnSettled = (request: DownloadRequest, result: DownloadResult) => void;

/**
 * Downloads attachments with one activity per batch of them: the attachments of one signal (one
 * transition of the rules) travel together, and those waiting for a free place travel with the next batch.
 * A batch whose activity fails for good settles each of its attachments as `failed`.
 */
export class Downloads {
  /** Attachments requested and not settled yet. */
  inFlight = 0;
  private running = 0;
  private readonly waiting: Array<{ request: DownloadRequest; onSettled: OnSettled }> = [];

  constructor(private readonly perActivity: number) {}

  start(requests: readonly DownloadRequest[], onSettled: OnSettled): void {
    if (requests.length === 0) return;
    this.inFlight += requests.length;
    this.waiting.push(...requests.map((request) => ({ request, onSettled })));
    this.launch();
  }

  private launch(): void {
    while (this.waiting.length > 0 && this.running < maxDownloadsInFlight) {
      const batch = this.waiting.splice(0, Math.min(this.perActivity, maxDownloadsInFlight - this.running));
      const attachments = batch.map(({ request }) => request);
      this.running += batch.length;
      void downloadAttachments
        .executeWithOptions({ summary: downloadSummary(attachments) }, [{ attachments, finalAttempt: downloadFinalAttempt }])
        .catch((err: unknown): DownloadResult[] => {
          const failed: DownloadResult = {
            status: 'failed',
            contentType: null,
            bytes: null,
            sha256: null,
            error: rootCause(err) ?? String(err),
          };
          return attachments.map(() => failed);
        })
        .then((results) => {
          this.running -= batch.length;
          this.inFlight -= batch.length;
          batch.forEach(({ request, onSettled }, i) => onSettled(request, results[i]!));
          this.launch();
        });
    }
  }
}

function downloadSummary(attachments: readonly DownloadRequest[]): string {
  const named = attachments.slice(0, 3).map(({ key, position }) => `${key.messageId} #${position}`);
  const more = attachments.length > named.length ? ` and ${attachments.length - named.length} more` : '';
  return `download ${named.join(', ')}${more}`;
}
