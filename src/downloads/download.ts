// One attachment's file, from wherever it comes from (a sender's URL through the network guard, or a
// platform's API), streamed into the media store and recorded: what the download activity does for
// each attachment it was given (activities/download.ts).

import pLimit, { type LimitFunction } from 'p-limit';
import type { Config } from '../common/config.js';
import { errorMessage } from '../common/error-message.js';
import type { Logger } from '../common/log.js';
import { downloadedBytesTotal, downloadsTotal } from '../common/metrics.js';
import { RefusedTargetError, networkPolicy, type NetworkPolicy } from '../common/network-guard.js';
import { annotate, inSpan } from '../common/tracing.js';
import { findAttachment, recordDownloadResult, recordDownloadRetry, type StoredAttachment, type StoredObject } from '../db/attachments.js';
import type { Pool } from '../db/pool.js';
import { childKeyString } from '../domain/keys.js';
import type { AttachmentStatus, DownloadRequest, DownloadResult } from '../domain/types.js';
import { MediaStoreError, MediaTooLargeError, openMediaStore, type MediaStore } from '../media/store.js';
import { PlatformApiError, type MediaApi, type StreamedFile } from '../platforms/api.js';
import { mediaApiOf, stillApiOf } from '../platforms/index.js';
import { PermanentDownloadError, TransientDownloadError, UnavailableDownloadError, seconds } from './errors.js';
import { createHttpAgents, cutShort, openHttpMedia, type HttpAgents } from './http-source.js';

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
   * How long a connection kept alive for the next download from its host may stay idle: shorter than
   * servers' own limits (Node's 5 s, nginx's 75 s), so that a request rarely goes out on a connection the
   * server is closing. Node's agent keeps an idle connection until the server closes it unless told.
   */
  keptAliveIdleMs: number;
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
  keptAliveIdleMs: 4_000,
  storeWaitMs: 600_000,
};

/** The back-off between tries of a store that failed, from the first to the longest. */
const storeRetryMs = { first: 1_000, longest: 30_000 };

/** Edits that may replace a file during its downloads within one attempt before the attempt gives up. */
const maxReplacements = 2;

/** What downloads share in one worker: the database, the store, the network policy, the limits and the fetch slots. */
export interface Downloader {
  pool: Pool;
  config: Config;
  store: MediaStore;
  network: NetworkPolicy;
  limits: DownloadLimits;
  /** At most `limits.concurrentFetches` files at once. */
  fetchSlots: LimitFunction;
  /** The connections kept alive between downloads from one host. */
  agents: HttpAgents;
}

export interface DownloaderOptions {
  /** Default: the one the configuration names. */
  store?: MediaStore;
  /** Defaults to system DNS and config.media.allowPrivateNetworks. */
  network?: NetworkPolicy;
  limits?: Partial<DownloadLimits>;
}

export function createDownloader(pool: Pool, config: Config, options: DownloaderOptions = {}): Downloader {
  const limits: DownloadLimits = { ...defaultDownloadLimits, ...options.limits };
  return {
    pool,
    config,
    store: options.store ?? openMediaStore(config.media),
    network: options.network ?? networkPolicy(config.media.allowPrivateNetworks),
    limits,
    fetchSlots: pLimit(limits.concurrentFetches),
    agents: createHttpAgents(limits.keptAliveIdleMs),
  };
}

/** The attempt a download runs in: its place among the activity's retries, its cancellation, its log. */
export interface DownloadAttempt {
  /** 1 for the first attempt. */
  number: number;
  /** The attempt after which a transient failure is recorded as `failed` instead of retried. */
  finalAttempt: number;
  /** Aborted with its reason when the activity is cancelled: that reason is thrown as it is. */
  cancellation: AbortSignal;
  log: Logger;
}

interface FetchedMedia {
  contentType: string | null;
  bytes: number;
  sha256: string;
}

type TerminalStatus = Exclude<AttachmentStatus, 'pending'>;

function resultOf(row: StoredAttachment): DownloadResult {
  return { status: row.status as TerminalStatus, contentType: row.contentType, bytes: row.bytes, sha256: row.sha256, error: row.error };
}

export function failure(status: 'expired' | 'failed' | 'unavailable', error: string): DownloadResult {
  return { status, contentType: null, bytes: null, sha256: null, error };
}

/** A partial download's name in the spool (`<MEDIA_DIR>/.tmp/`): `<message pk>-<position>-<random>.part`. */
export function tempFilePrefix(messagePk: string, position: number): string {
  return `${messagePk}-${position}-`;
}

/** The cancellation of the attempt, rather than a failure of the download. */
function isCancellation(err: unknown, attempt: DownloadAttempt): boolean {
  return attempt.cancellation.aborted && err === attempt.cancellation.reason;
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

/** Opens the source within one fetch (its abort, its time limit) and streams what it sends into the store. */
async function fetchToStore(
  d: Downloader,
  row: StoredAttachment,
  attempt: DownloadAttempt,
  open: (controller: AbortController) => Promise<StreamedFile>,
  onChunk = () => {},
): Promise<FetchedMedia> {
  const { limits, store } = d;
  const spoolPrefix = tempFilePrefix(row.messagePk, row.position);
  // Only an attempt that crashed leaves a partial file behind, and the attempt after it comes with a higher number.
  if (attempt.number > 1) await store.removeAbandoned(spoolPrefix, limits.attemptTimeoutMs);

  const controller = new AbortController();
  const { cancellation } = attempt;
  const onCancel = () => controller.abort(cancellation.reason);
  if (cancellation.aborted) onCancel();
  else cancellation.addEventListener('abort', onCancel, { once: true });
  const deadline = setTimeout(
    () => controller.abort(new TransientDownloadError(`the download took longer than ${seconds(limits.attemptTimeoutMs)}`)),
    limits.attemptTimeoutMs,
  );
  try {
    const source = await open(controller);
    const { sha256, bytes } = await store.write(source.stream, {
      maxBytes: d.config.media.maxBytes,
      contentType: source.contentType,
      declaredBytes: source.contentLength,
      spoolPrefix,
      onChunk,
    });
    return { contentType: source.contentType, bytes, sha256 };
  } catch (err) {
    if (controller.signal.aborted) throw controller.signal.reason;
    if (err instanceof MediaTooLargeError) throw new PermanentDownloadError('failed', err.message);
    if (cutShort(err)) throw new TransientDownloadError('the server closed the connection before the whole file arrived');
    throw err;
  } finally {
    clearTimeout(deadline);
    cancellation.removeEventListener('abort', onCancel);
  }
}

/** A file from a platform's API; silence is limited like a sender's URL's. */
async function fetchFromApi(d: Downloader, row: StoredAttachment, attempt: DownloadAttempt, api: MediaApi): Promise<FetchedMedia> {
  let watch: ReturnType<typeof idleWatch> | undefined;
  try {
    return await fetchToStore(
      d,
      row,
      attempt,
      async (controller) => {
        watch = idleWatch(d.limits.idleTimeoutMs, () =>
          controller.abort(new TransientDownloadError(`${api.apiName} sent nothing for ${seconds(d.limits.idleTimeoutMs)}`)),
        );
        const opened = await api.open(controller.signal);
        watch.touch();
        if (opened.status === 'ready') return opened;
        throw opened.status === 'expired'
          ? new PermanentDownloadError('expired', opened.reason)
          : new UnavailableDownloadError(opened.reason);
      },
      () => watch?.touch(),
    );
  } catch (err) {
    if (err instanceof PlatformApiError)
      throw err.retryable ? new TransientDownloadError(err.message) : new PermanentDownloadError('failed', err.message);
    const ours = [TransientDownloadError, PermanentDownloadError, UnavailableDownloadError, MediaStoreError].some(
      (type) => err instanceof type,
    );
    if (ours || isCancellation(err, attempt)) throw err;
    throw new TransientDownloadError(api.redact(errorMessage(err)));
  } finally {
    watch?.stop();
  }
}

/** Where an attachment's file comes from: the URL the sender gave, or its platform's API. */
type FileSource = { url: string } | { api: MediaApi };

/** The attachment's source, with the platform's credentials as they are configured now; null when it has none. */
function sourceOf(d: Downloader, row: StoredAttachment, request: DownloadRequest): FileSource | null {
  if (row.url) return { url: row.url };
  const api = mediaApiOf(d.config, row, request.key);
  return api ? { api } : null;
}

/** One fetch of the attachment into the store: its URL through the network guard, or its platform's API. */
function fetchOnce(d: Downloader, row: StoredAttachment, attempt: DownloadAttempt, source: FileSource): Promise<FetchedMedia> {
  if ('url' in source)
    return fetchToStore(d, row, attempt, (controller) => openHttpMedia(source.url, d.network, controller, d.limits, d.agents));
  return fetchFromApi(d, row, attempt, source.api);
}

/**
 * The fetch, tried again with back-off while the store refuses or does not answer (the source is
 * fetched again each time: nothing of it is kept), for at most `storeWaitMs`; then the store's
 * failure goes up like any other transient one.
 */
async function fetchWhileStoreFails(
  d: Downloader,
  row: StoredAttachment,
  source: FileSource,
  attempt: DownloadAttempt,
): Promise<FetchedMedia> {
  const givingUp = Date.now() + d.limits.storeWaitMs;
  let recorded = false;
  for (let wait = storeRetryMs.first; ; wait = Math.min(wait * 2, storeRetryMs.longest)) {
    try {
      return await d.fetchSlots(() => fetchOnce(d, row, attempt, source));
    } catch (err) {
      if (!(err instanceof MediaStoreError) || Date.now() + wait > givingUp) throw err;
      attempt.log.warn({ error: err.message, retryInMs: wait }, 'the media store failed; the attachment stays pending and is tried again');
      if (!recorded) {
        recorded = true;
        await recordDownloadRetry(d.pool, row, err.message);
      }
      await pause(wait, attempt.cancellation);
    }
  }
}

/** Whether the store still holds a downloaded file; while the store fails, the stored outcome stands. */
async function storeHolds(store: MediaStore, sha256: string): Promise<boolean> {
  try {
    return (await store.stat(sha256)) !== null;
  } catch (err) {
    if (err instanceof MediaStoreError) return true;
    throw err;
  }
}

/** What one attempt gives to record: the attachment's outcome, and the object of its still (a live photo's) when one was stored. */
interface AttemptOutcome {
  result: DownloadResult;
  still: StoredObject | null;
}

/** The still's stored object, when the attachment has one and the store still holds it. */
async function heldStill(d: Downloader, row: StoredAttachment): Promise<StoredObject | null> {
  const object = row.still?.object ?? null;
  return object !== null && (await storeHolds(d.store, object.sha256)) ? object : null;
}

/**
 * A live photo's still, fetched before its video (it is the smaller file) in the same attempt; null when
 * the attachment has none. A still that cannot be had (unavailable, refused, or failing on the final
 * attempt) leaves the attachment without it — the video is the attachment — and is logged; another failure
 * is the attempt's, retried like the video's.
 */
async function downloadStill(
  d: Downloader,
  row: StoredAttachment,
  request: DownloadRequest,
  attempt: DownloadAttempt,
): Promise<StoredObject | null> {
  if (row.still === null) return null;
  const held = await heldStill(d, row);
  if (held) return held;
  const api = stillApiOf(d.config, row, request.key);
  if (!api) return null;
  try {
    const stored = await fetchWhileStoreFails(d, row, { api }, attempt);
    attempt.log.debug({ bytes: stored.bytes, sha256: stored.sha256 }, 'still downloaded');
    return stored;
  } catch (err) {
    if (isCancellation(err, attempt)) throw err;
    const message = errorMessage(err);
    const forGood = [UnavailableDownloadError, PermanentDownloadError, RefusedTargetError].some((type) => err instanceof type);
    if (forGood || attempt.number >= attempt.finalAttempt) {
      attempt.log.warn({ error: message }, "the live photo's still could not be downloaded; the attachment is kept without it");
      return null;
    }
    throw new TransientDownloadError(`the live photo's still: ${message}`);
  }
}

/**
 * The outcome of one attempt for the attachment as it is stored now: null when it is known already
 * (downloaded, or terminal and not retried); otherwise the outcome to record.
 */
async function attemptDownload(
  d: Downloader,
  row: StoredAttachment,
  request: DownloadRequest,
  attempt: DownloadAttempt,
): Promise<AttemptOutcome | null> {
  const { log } = attempt;
  const stillKnown = !row.still?.object || (await heldStill(d, row)) !== null;
  if (row.status === 'downloaded' && row.sha256 && (await storeHolds(d.store, row.sha256)) && stillKnown) return null;
  const retried = request.retry && (row.status === 'failed' || row.status === 'expired');
  if (row.status !== 'pending' && row.status !== 'downloaded' && !retried) return null;
  const source = sourceOf(d, row, request);
  if (!source) return { result: failure('unavailable', 'the platform sent no URL for this attachment'), still: null };

  // A still stored before its video failed stays the attachment's: its object is referenced, never left behind.
  let still: StoredObject | null = null;
  try {
    still = await downloadStill(d, row, request, attempt);
    const stored = await fetchWhileStoreFails(d, row, source, attempt);
    log.debug({ bytes: stored.bytes, sha256: stored.sha256 }, 'attachment downloaded');
    return { result: { status: 'downloaded', ...stored, error: null }, still };
  } catch (err) {
    if (isCancellation(err, attempt)) throw err;
    if (err instanceof UnavailableDownloadError) {
      log.info({ error: err.message }, 'attachment unavailable');
      return { result: failure('unavailable', err.message), still };
    }
    if (err instanceof PermanentDownloadError || err instanceof RefusedTargetError) {
      const status = err instanceof PermanentDownloadError ? err.status : 'failed';
      log.info({ status, error: err.message }, 'attachment not downloadable');
      return { result: failure(status, err.message), still };
    }
    const message = errorMessage(err);
    if (attempt.number >= attempt.finalAttempt) {
      log.warn({ error: message }, 'attachment download failed on its final attempt');
      return { result: failure('failed', message), still };
    }
    log.warn({ error: message, attempt: attempt.number }, 'attachment download failed; will retry');
    await recordDownloadRetry(d.pool, row, message);
    throw new TransientDownloadError(message);
  }
}

/**
 * One attachment: its stored outcome when it has one (a downloaded file is never fetched again), else
 * one attempt, recorded. Throws a TransientDownloadError for a failure that a later attempt may not have.
 */
async function downloadOne(d: Downloader, request: DownloadRequest, attempt: DownloadAttempt): Promise<DownloadResult> {
  const { key, position } = request;
  const log = attempt.log.child({ attachment: childKeyString(key), position });
  const logged = { ...attempt, log };
  // An edit may replace a Telegram file while it downloads: the outcome is then the old file's, and
  // the attachment is read and downloaded again.
  for (let replaced = 0; ; replaced++) {
    const row = await findAttachment(d.pool, key, position);
    if (!row) return failure('failed', `no attachment ${position} is stored for message ${childKeyString(key)}`);
    const outcome = await attemptDownload(d, row, request, logged);
    if (outcome === null) return resultOf(row);
    const { result, still } = outcome;
    const recorded = await recordDownloadResult(d.pool, row, result, async (sha256) => (await d.store.stat(sha256)) !== null, still);
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

/** One attachment's download in a span of its own: the attachment's position, and its outcome, bytes and type. */
export function downloadAttachment(d: Downloader, request: DownloadRequest, attempt: DownloadAttempt): Promise<DownloadResult> {
  return inSpan('albumflow.download', { attributes: { 'albumflow.attachment.position': request.position } }, async (span) => {
    const result = await downloadOne(d, request, attempt);
    annotate(span, {
      'albumflow.download.outcome': result.status,
      ...(result.bytes !== null ? { 'albumflow.download.bytes': result.bytes } : {}),
      ...(result.contentType !== null ? { 'albumflow.download.content_type': result.contentType } : {}),
    });
    return result;
  });
}
