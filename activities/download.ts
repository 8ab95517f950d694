import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import pLimit from 'p-limit';
import { findAttachment, recordDownloadResult, recordDownloadRetry, type StoredAttachment } from '../src/db/attachments.js';
import { errorMessage } from '../src/common/error-message.js';
import { downloadedBytesTotal, downloadsTotal } from '../src/common/metrics.js';
import { annotate, inSpan } from '../src/common/tracing.js';
import { MediaStoreError, MediaTooLargeError, openMediaStore } from '../src/media/store.js';
import { BotApiError } from '../src/telegram/bot-api.js';
import { LineApiError } from '../src/line/messaging-api.js';
import { childKeyString } from '../src/domain/keys.js';
import type { AttachmentStatus, DownloadRequest, DownloadResult } from '../src/domain/types.js';
import type { Logger } from '../src/common/log.js';
import type { DownloadInput } from '../workflows/activity-types.js';
import type { ActivityDeps } from './deps.js';
import type { ApiFetch } from './fetch/api.js';
import { PermanentDownloadError, TransientDownloadError, UnavailableDownloadError, seconds, type MediaSource } from './fetch/errors.js';
import { cutShort, openHttpMedia } from './fetch/http.js';
import { lineContent } from './fetch/line.js';
import { telegramFile } from './fetch/telegram.js';
import { RefusedTargetError, networkPolicy, type NetworkPolicy } from './network-guard.js';

/**
 * What the activity heartbeats: the outcome of every attachment settled so far (null: not yet), so that
 * a retried attempt takes them as they are and fetches none of them again.
 */
export interface DownloadProgress {
  settled: Array<DownloadResult | null>;
}

export interface DownloadLimits {
  /** Until the TCP connection of one hop is established. */
  connectTimeoutMs: number;
  /** Longest silence of the server (no response, no body bytes). */
  idleTimeoutMs: number;
  /** One whole attempt, redirects and body included. */
  attemptTimeoutMs: number;
  maxRedirects: number;
  /** Files one worker fetches at once, across all its download activities. */
  concurrentFetches: number;
  /**
   * How long one activity attempt waits, trying again with back-off, for a media store that refuses or
   * does not answer, before it fails and Temporal retries it later.
   */
  storeWaitMs: number;
}

export const defaultDownloadLimits: DownloadLimits = {
  connectTimeoutMs: 10_000,
  idleTimeoutMs: 30_000,
  attemptTimeoutMs: 300_000,
  maxRedirects: 5,
  concurrentFetches: 100,
  storeWaitMs: 600_000,
};

/**
 * How often a download activity heartbeats its progress while its files download: the heartbeat says the
 * worker lives; each file's connection, silence and attempt limits say it progresses. A heartbeat that
 * reaches Temporal is a billable action, so an activity done sooner sends none (but before a retry).
 */
const heartbeatIntervalMs = 10_000;

/** The back-off between tries of a store that failed, from the first to the longest. */
const storeRetryMs = { first: 1_000, longest: 30_000 };

export interface DownloadOptions {
  /** Defaults to system DNS and config.media.allowPrivateNetworks. */
  network?: NetworkPolicy;
  limits?: Partial<DownloadLimits>;
}

type TerminalStatus = Exclude<AttachmentStatus, 'pending'>;

interface FetchedMedia {
  contentType: string | null;
  bytes: number;
  sha256: string;
}

/** Edits that may replace a file during its downloads within one attempt before the attempt gives up. */
const maxReplacements = 2;

function resultOf(row: StoredAttachment): DownloadResult {
  return { status: row.status as TerminalStatus, contentType: row.contentType, bytes: row.bytes, sha256: row.sha256, error: row.error };
}

function failure(status: 'expired' | 'failed' | 'unavailable', error: string): DownloadResult {
  return { status, contentType: null, bytes: null, sha256: null, error };
}

/** A partial download's name in the spool (`<MEDIA_DIR>/.tmp/`): `<message pk>-<position>-<random>.part`. */
export function tempFilePrefix(messagePk: string, position: number): string {
  return `${messagePk}-${position}-`;
}

/** Aborts the attempt when nothing arrived for `ms`; `touch` after each sign of life. */
function idleWatch(ms: number, onIdle: () => void): { touch: () => void; stop: () => void } {
  let timer = setTimeout(onIdle, ms);
  return {
    touch: () => {
      clearTimeout(timer);
      timer = setTimeout(onIdle, ms);
    },
    stop: () => clearTimeout(timer),
  };
}

/** Waits `ms`, or rejects with the cancellation's reason. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

export function createDownloadActivities(deps: ActivityDeps, options: DownloadOptions = {}) {
  const { pool, config, logger } = deps;
  const { maxBytes } = config.media;
  const store = deps.store ?? openMediaStore(config.media);
  const network = options.network ?? networkPolicy(config.media.allowPrivateNetworks);
  const limits: DownloadLimits = { ...defaultDownloadLimits, ...options.limits };
  const fetchLimit = pLimit(limits.concurrentFetches);

  /** Opens the source within one attempt (its abort, its time limit) and streams what it sends into the store. */
  async function fetchToStore(
    row: StoredAttachment,
    open: (attempt: AbortController) => Promise<MediaSource>,
    onChunk = () => {},
  ): Promise<FetchedMedia> {
    const spoolPrefix = tempFilePrefix(row.messagePk, row.position);
    await store.removeAbandoned(spoolPrefix, limits.attemptTimeoutMs);

    const attempt = new AbortController();
    const cancellation = Context.current().cancellationSignal;
    const onCancel = () => attempt.abort(cancellation.reason);
    if (cancellation.aborted) onCancel();
    else cancellation.addEventListener('abort', onCancel, { once: true });
    const deadline = setTimeout(
      () => attempt.abort(new TransientDownloadError(`the download took longer than ${seconds(limits.attemptTimeoutMs)}`)),
      limits.attemptTimeoutMs,
    );
    try {
      const source = await open(attempt);
      const { sha256, bytes } = await store.write(source.body, {
        maxBytes,
        contentType: source.contentType,
        declaredBytes: source.contentLength,
        spoolPrefix,
        onChunk,
      });
      return { contentType: source.contentType, bytes, sha256 };
    } catch (err) {
      if (attempt.signal.aborted) throw attempt.signal.reason;
      if (err instanceof MediaTooLargeError) throw new PermanentDownloadError('failed', err.message);
      if (cutShort(err)) throw new TransientDownloadError('the server closed the connection before the whole file arrived');
      throw err;
    } finally {
      clearTimeout(deadline);
      cancellation.removeEventListener('abort', onCancel);
    }
  }

  function fetchUrl(row: StoredAttachment, url: string): Promise<FetchedMedia> {
    return fetchToStore(row, (attempt) => openHttpMedia(url, network, attempt, limits));
  }

  /** A file from a platform's API (fetch/api.ts); silence is limited like a sender's URL's. */
  async function fetchFromApi(row: StoredAttachment, api: ApiFetch): Promise<FetchedMedia> {
    let watch: ReturnType<typeof idleWatch> | undefined;
    try {
      return await fetchToStore(
        row,
        async (attempt) => {
          watch = idleWatch(limits.idleTimeoutMs, () =>
            attempt.abort(new TransientDownloadError(`${api.apiName} sent nothing for ${seconds(limits.idleTimeoutMs)}`)),
          );
          const source = await api.open(attempt.signal);
          watch.touch();
          return source;
        },
        () => watch?.touch(),
      );
    } catch (err) {
      if (err instanceof BotApiError || err instanceof LineApiError)
        throw err.retryable ? new TransientDownloadError(err.message) : new PermanentDownloadError('failed', err.message);
      const ours = [CancelledFailure, TransientDownloadError, PermanentDownloadError, UnavailableDownloadError, MediaStoreError].some(
        (type) => err instanceof type,
      );
      if (ours) throw err;
      throw new TransientDownloadError(api.redact(errorMessage(err)));
    } finally {
      watch?.stop();
    }
  }

  /** One fetch of the attachment into the store, from wherever its file comes from. */
  function fetchOnce(row: StoredAttachment, { key }: DownloadRequest): Promise<FetchedMedia> {
    const { url, telegramFile: file, lineChannel } = row;
    if (url) return fetchUrl(row, url);
    if (file) return fetchFromApi(row, telegramFile(config.telegram, row, key, file));
    return fetchFromApi(row, lineContent(config.line, key, lineChannel!));
  }

  /** Whether the store still holds a downloaded file; while the store fails, the stored outcome stands. */
  async function storeHolds(sha256: string): Promise<boolean> {
    try {
      return (await store.stat(sha256)) !== null;
    } catch (err) {
      if (err instanceof MediaStoreError) return true;
      throw err;
    }
  }

  /**
   * The fetch, tried again with back-off while the store refuses or does not answer (the source is
   * fetched again each time: nothing of it is kept), for at most `storeWaitMs`; then the store's
   * failure goes up like any other transient one.
   */
  async function fetchWhileStoreFails(row: StoredAttachment, request: DownloadRequest, log: Logger): Promise<FetchedMedia> {
    const givingUp = Date.now() + limits.storeWaitMs;
    let recorded = false;
    for (let wait = storeRetryMs.first; ; wait = Math.min(wait * 2, storeRetryMs.longest)) {
      try {
        return await fetchLimit(() => fetchOnce(row, request));
      } catch (err) {
        if (!(err instanceof MediaStoreError) || Date.now() + wait > givingUp) throw err;
        log.warn({ error: err.message, retryInMs: wait }, 'the media store failed; the attachment stays pending and is tried again');
        if (!recorded) {
          recorded = true;
          await recordDownloadRetry(pool, row, err.message);
        }
        await pause(wait, Context.current().cancellationSignal);
      }
    }
  }

  /**
   * The outcome of one attempt for the attachment as it is stored now: null when it is known already
   * (downloaded, or terminal and not retried); otherwise the outcome to record.
   */
  async function attemptDownload(
    row: StoredAttachment,
    request: DownloadRequest,
    finalAttempt: number,
    log: Logger,
  ): Promise<DownloadResult | null> {
    if (row.status === 'downloaded' && row.sha256 && (await storeHolds(row.sha256))) return null;
    const retried = request.retry && (row.status === 'failed' || row.status === 'expired');
    if (row.status !== 'pending' && row.status !== 'downloaded' && !retried) return null;
    if (!row.url && !row.telegramFile && !row.lineChannel) return failure('unavailable', 'the platform sent no URL for this attachment');

    try {
      const stored = await fetchWhileStoreFails(row, request, log);
      log.debug({ bytes: stored.bytes, sha256: stored.sha256 }, 'attachment downloaded');
      return { status: 'downloaded', ...stored, error: null };
    } catch (err) {
      if (err instanceof CancelledFailure) throw err;
      if (err instanceof UnavailableDownloadError) {
        log.info({ error: err.message }, 'attachment unavailable');
        return failure('unavailable', err.message);
      }
      if (err instanceof PermanentDownloadError || err instanceof RefusedTargetError) {
        const status = err instanceof PermanentDownloadError ? err.status : 'failed';
        log.info({ status, error: err.message }, 'attachment not downloadable');
        return failure(status, err.message);
      }
      const message = errorMessage(err);
      if (Context.current().info.attempt >= finalAttempt) {
        log.warn({ error: message }, 'attachment download failed on its final attempt');
        return failure('failed', message);
      }
      log.warn({ error: message, attempt: Context.current().info.attempt }, 'attachment download failed; will retry');
      await recordDownloadRetry(pool, row, message);
      throw new TransientDownloadError(message);
    }
  }

  /**
   * One attachment: its stored outcome when it has one (a downloaded file is never fetched again), else
   * one attempt, recorded. Throws a TransientDownloadError for a failure that a later attempt may not have.
   */
  async function downloadOne(request: DownloadRequest, finalAttempt: number): Promise<DownloadResult> {
    const { key, position } = request;
    const log = logger.child({
      workflowId: Context.current().info.workflowExecution?.workflowId,
      attachment: childKeyString(key),
      position,
    });
    // An edit may replace a Telegram file while it downloads: the outcome is then the old file's, and
    // the attachment is read and downloaded again.
    for (let replaced = 0; ; replaced++) {
      const row = await findAttachment(pool, key, position);
      if (!row) return failure('failed', `no attachment ${position} is stored for message ${childKeyString(key)}`);
      const result = await attemptDownload(row, request, finalAttempt, log);
      if (result === null) return resultOf(row);
      const recorded = await recordDownloadResult(pool, row, result, async (sha256) => (await store.stat(sha256)) !== null);
      if (recorded === 'recorded') {
        downloadsTotal.inc({ outcome: result.status });
        if (result.bytes !== null) downloadedBytesTotal.inc(result.bytes);
        return result;
      }
      if (replaced === maxReplacements)
        throw new TransientDownloadError(
          'the attachment was replaced by an edit, or its file removed from the store, during each of its downloads',
        );
      if (recorded === 'object_removed') log.info('retention removed the downloaded file from the store meanwhile; storing it again');
      else log.info('the attachment was replaced by an edit during its download; downloading the new file');
    }
  }

  /** downloadOne in a span of its own: the attachment's position, and its outcome, bytes and type. */
  function downloadTraced(request: DownloadRequest, finalAttempt: number): Promise<DownloadResult> {
    return inSpan('albumflow.download', { attributes: { 'albumflow.attachment.position': request.position } }, async (span) => {
      const result = await downloadOne(request, finalAttempt);
      annotate(span, {
        'albumflow.download.outcome': result.status,
        ...(result.bytes !== null ? { 'albumflow.download.bytes': result.bytes } : {}),
        ...(result.contentType !== null ? { 'albumflow.download.content_type': result.contentType } : {}),
      });
      return result;
    });
  }

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
    const heartbeat = () => context.heartbeat(progress);
    const beating = setInterval(heartbeat, heartbeatIntervalMs);
    const final = context.info.attempt >= finalAttempt;
    const transient: string[] = [];
    let cancelled: CancelledFailure | undefined;
    try {
      // Every attachment's attempt ends before this one does: a retry never fetches a file while it still downloads.
      await Promise.all(
        attachments.map(async (request, i) => {
          if (progress.settled[i]) return;
          try {
            progress.settled[i] = await downloadTraced(request, finalAttempt);
          } catch (err) {
            if (err instanceof CancelledFailure) {
              cancelled = err;
              return;
            }
            // A failure that downloadOne could not record (PostgreSQL unreachable): failed on the final attempt, else retried.
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
