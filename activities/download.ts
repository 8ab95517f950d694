import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { errorMessage } from '../src/common/error-message.js';
import { childKeyString } from '../src/domain/keys.js';
import type { DownloadResult } from '../src/domain/types.js';
import { createDownloader, downloadAttachment, failure, type DownloaderOptions } from '../src/downloads/download.js';
import type { DownloadInput } from '../workflows/activity-types.js';
import type { ActivityDeps } from './deps.js';

/**
 * What the activity heartbeats: the outcome of every attachment settled so far (null: not yet), so that
 * a retried attempt takes them as they are and fetches none of them again.
 */
export interface DownloadProgress {
  settled: Array<DownloadResult | null>;
}

export type DownloadOptions = Omit<DownloaderOptions, 'store'>;

/**
 * How often a download activity heartbeats its progress while its files download: the heartbeat says the
 * worker lives; each file's connection, silence and attempt limits say it progresses. A heartbeat that
 * reaches Temporal is a billable action, so an activity done sooner sends none (but before a retry).
 */
const heartbeatIntervalMs = 10_000;

export function createDownloadActivities(deps: ActivityDeps, options: DownloadOptions = {}) {
  const downloader = createDownloader(deps.pool, deps.config, { ...options, ...(deps.store ? { store: deps.store } : {}) });

  /**
   * Downloads the attachments of one activity at once (within the worker's fetch limit), keeping the
   * outcome of each as it settles and heartbeating them. When some failed transiently, the attempt fails
   * and Temporal retries it: the retry takes the heartbeated outcomes (and PostgreSQL's) as they are and
   * fetches only the rest.
   */
  async function downloadAttachments({ attachments, finalAttempt }: DownloadInput): Promise<DownloadResult[]> {
    const context = Context.current();
    const previous = context.info.heartbeatDetails as Partial<DownloadProgress> | undefined;
    const progress: DownloadProgress = {
      settled: attachments.map((_, i) => (previous?.settled?.length === attachments.length ? (previous.settled[i] ?? null) : null)),
    };
    const attempt = {
      number: context.info.attempt,
      finalAttempt,
      cancellation: context.cancellationSignal,
      log: deps.logger.child({ workflowId: context.info.workflowExecution?.workflowId }),
    };
    const heartbeat = () => context.heartbeat(progress);
    const beating = setInterval(heartbeat, heartbeatIntervalMs);
    const final = attempt.number >= finalAttempt;
    const transient: string[] = [];
    let cancelled: CancelledFailure | undefined;
    try {
      // Every attachment's attempt ends before this one does: a retry never fetches a file while it still downloads.
      await Promise.all(
        attachments.map(async (request, i) => {
          if (progress.settled[i]) return;
          try {
            progress.settled[i] = await downloadAttachment(downloader, request, attempt);
          } catch (err) {
            if (err instanceof CancelledFailure) {
              cancelled = err;
              return;
            }
            // A failure that the download could not record (PostgreSQL unreachable): failed on the final attempt, else retried.
            if (final) progress.settled[i] = failure('failed', errorMessage(err));
            else transient.push(`${childKeyString(request.key)} #${request.position}: ${errorMessage(err)}`);
          }
        }),
      );
    } finally {
      clearInterval(beating);
    }
    if (cancelled) throw cancelled;
    if (transient.length > 0) {
      // The retry reads these outcomes: the SDK sends a failed attempt's last heartbeat with its failure.
      heartbeat();
      const message = `${transient.length} of ${attachments.length} attachments will be tried again: ${transient.join('; ')}`;
      throw ApplicationFailure.retryable(message.slice(0, 2000), 'MediaDownloadRetryable');
    }
    return progress.settled as DownloadResult[];
  }

  return { downloadAttachments };
}
