import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import pLimit from 'p-limit';
import type { Readable } from 'node:stream';
import type { LineChannel, TelegramBot } from '../src/common/config.js';
import { findAttachment, recordDownloadResult, recordDownloadRetry, type StoredAttachment } from '../src/db/attachments.js';
import { errorMessage } from '../src/common/error-message.js';
import { downloadedBytesTotal, downloadsTotal } from '../src/common/metrics.js';
import { annotate, inSpan } from '../src/common/tracing.js';
import { mediaPath, mediaTempDir } from '../src/common/paths.js';
import { BotApiError, createBotApi, redactToken } from '../src/telegram/bot-api.js';
import { createMessagingApi, LineApiError } from '../src/line/messaging-api.js';
import { childKeyString } from '../src/domain/keys.js';
import type { AttachmentStatus, DownloadRequest, DownloadResult, MessageKey } from '../src/domain/types.js';
import type { Logger } from '../src/common/log.js';
import type { DownloadInput } from '../workflows/activity-types.js';
import type { ActivityDeps } from './deps.js';
import { RefusedTargetError, networkPolicy, pinnedLookup, vetTarget, type NetworkPolicy, type ResolvedAddress } from './network-guard.js';

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
}

export const defaultDownloadLimits: DownloadLimits = {
  connectTimeoutMs: 10_000,
  idleTimeoutMs: 30_000,
  attemptTimeoutMs: 300_000,
  maxRedirects: 5,
  concurrentFetches: 100,
};

/**
 * How often a download activity heartbeats its progress while its files download: the heartbeat says the
 * worker lives; each file's connection, silence and attempt limits say it progresses. A heartbeat that
 * reaches Temporal is a billable action, so an activity done sooner sends none (but before a retry).
 */
const heartbeatIntervalMs = 10_000;

export interface DownloadOptions {
  /** Defaults to system DNS and config.media.allowPrivateNetworks. */
  network?: NetworkPolicy;
  limits?: Partial<DownloadLimits>;
}

type TerminalStatus = Exclude<AttachmentStatus, 'pending'>;

/** A failure that retrying cannot fix: recorded with its status at once. */
class PermanentDownloadError extends Error {
  constructor(
    readonly status: 'expired' | 'failed',
    message: string,
  ) {
    super(message);
  }
}

/** A failure another attempt may not have (server error, throttling, network, time limit). */
class TransientDownloadError extends Error {}

interface StoredMedia {
  contentType: string | null;
  bytes: number;
  sha256: string;
}

const expiredStatuses = new Set([401, 403, 404, 410]);
/** Edits that may replace a file during its downloads within one attempt before the attempt gives up. */
const maxReplacements = 2;
const redirectStatuses = new Set([301, 302, 303, 307, 308]);
const requestHeaders = { 'user-agent': 'albumflow', accept: '*/*', 'accept-encoding': 'identity' };

function seconds(ms: number): string {
  return `${ms / 1000} s`;
}

function resultOf(row: StoredAttachment): DownloadResult {
  return { status: row.status as TerminalStatus, contentType: row.contentType, bytes: row.bytes, sha256: row.sha256, error: row.error };
}

function failure(status: 'expired' | 'failed' | 'unavailable', error: string): DownloadResult {
  return { status, contentType: null, bytes: null, sha256: null, error };
}

function statusError(status: number): Error {
  const message = `HTTP ${status}`;
  if (expiredStatuses.has(status)) return new PermanentDownloadError('expired', message);
  if (status >= 500 || status === 408 || status === 429) return new TransientDownloadError(message);
  return new PermanentDownloadError('failed', message);
}

/** A partial download's name in the media directory's temporary folder: `<message pk>-<position>-<random>.part`. */
export function tempFilePrefix(messagePk: string, position: number): string {
  return `${messagePk}-${position}-`;
}

async function fileExists(file: string): Promise<boolean> {
  try {
    return (await fs.stat(file)).isFile();
  } catch {
    return false;
  }
}

/** Partial files of this attachment old enough that the attempt writing them cannot still run (a crashed worker). */
async function removeAbandonedTempFiles(tempDir: string, prefix: string, olderThanMs: number): Promise<void> {
  const cutoff = Date.now() - olderThanMs;
  const names = (await fs.readdir(tempDir)).filter((name) => name.startsWith(prefix));
  await Promise.all(
    names.map(async (name) => {
      const file = path.join(tempDir, name);
      const stat = await fs.stat(file).catch(() => undefined);
      if (stat && stat.mtimeMs < cutoff) await fs.rm(file, { force: true });
    }),
  );
}

function parseUrl(text: string, base?: URL): URL {
  try {
    return new URL(text, base);
  } catch {
    throw new PermanentDownloadError('failed', base ? 'a redirect pointed to an invalid URL' : 'the attachment URL is not a valid URL');
  }
}

/** One GET to a vetted address; connection and silence limits abort the whole attempt. */
function get(url: URL, target: ResolvedAddress, attempt: AbortController, limits: DownloadLimits): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const request = (url.protocol === 'https:' ? https : http).get(url, {
      agent: false,
      lookup: pinnedLookup(target),
      signal: attempt.signal,
      headers: requestHeaders,
    });
    const connectTimer = setTimeout(
      () => attempt.abort(new TransientDownloadError(`no connection to ${url.hostname} within ${seconds(limits.connectTimeoutMs)}`)),
      limits.connectTimeoutMs,
    );
    const connected = () => clearTimeout(connectTimer);
    request.once('socket', (socket) => {
      socket.setTimeout(limits.idleTimeoutMs, () =>
        attempt.abort(new TransientDownloadError(`${url.hostname} sent nothing for ${seconds(limits.idleTimeoutMs)}`)),
      );
      if (socket.connecting) socket.once('connect', connected);
      else connected();
      socket.once('close', connected);
    });
    request.once('response', (response) => {
      connected();
      resolve(response);
    });
    request.once('error', (err) => {
      connected();
      reject(err);
    });
  });
}

/** Follows up to `maxRedirects` redirects, vetting every hop, to a 2xx response. */
async function openMedia(rawUrl: string, network: NetworkPolicy, attempt: AbortController, limits: DownloadLimits) {
  let url = parseUrl(rawUrl);
  for (let redirects = 0; ; redirects++) {
    const target = await vetTarget(url, network);
    const response = await get(url, target, attempt, limits);
    const status = response.statusCode ?? 0;
    if (status >= 200 && status < 300) return response;
    response.destroy();
    const location = response.headers.location;
    if (!redirectStatuses.has(status) || !location) throw statusError(status);
    if (redirects === limits.maxRedirects) throw new PermanentDownloadError('failed', `more than ${limits.maxRedirects} redirects`);
    url = parseUrl(location, url);
  }
}

function tooLarge(maxBytes: number): PermanentDownloadError {
  return new PermanentDownloadError('failed', `the file is larger than MEDIA_MAX_BYTES (${maxBytes} bytes)`);
}

/** An opened file to store: its bytes, and what the server said of them. */
interface MediaSource {
  body: Readable;
  /** Announced by the server; null when unknown. */
  contentLength: number | null;
  contentType: string | null;
}

function sourceOf(response: http.IncomingMessage): MediaSource {
  const declared = response.headers['content-length'];
  return {
    body: response,
    contentLength: declared === undefined ? null : Number(declared),
    contentType: response.headers['content-type'] ?? null,
  };
}

/** Streams the body into `tempPath`, hashing and counting as it goes; calls `onChunk` after each chunk. */
async function writeBody(
  source: MediaSource,
  tempPath: string,
  maxBytes: number,
  onChunk: () => void,
): Promise<{ sha256: string; bytes: number }> {
  if (source.contentLength !== null && source.contentLength > maxBytes) {
    source.body.destroy();
    throw tooLarge(maxBytes);
  }
  const hash = crypto.createHash('sha256');
  let bytes = 0;
  const file = await fs.open(tempPath, 'wx');
  try {
    for await (const chunk of source.body as AsyncIterable<Buffer>) {
      bytes += chunk.length;
      if (bytes > maxBytes) throw tooLarge(maxBytes);
      hash.update(chunk);
      await file.write(chunk);
      onChunk();
    }
    await file.sync();
  } catch (err) {
    // Node's words for a response body whose connection closed before its end.
    const cutShort = err instanceof Error && err.message === 'aborted' && (err as NodeJS.ErrnoException).code === 'ECONNRESET';
    throw cutShort ? new TransientDownloadError('the server closed the connection before the whole file arrived') : err;
  } finally {
    source.body.destroy();
    await file.close();
  }
  return { sha256: hash.digest('hex'), bytes };
}

/** The Telegram file could not be downloaded for good: Telegram will not let the bot have it. */
class UnavailableDownloadError extends Error {}

/**
 * The type a Telegram file is stored with: the message's MIME type, else the file server's when it
 * names one; Telegram photos are always JPEG (the message gives no type for them).
 */
function telegramContentType(row: StoredAttachment, served: string | null): string | null {
  const named = served !== null && served !== 'application/octet-stream' ? served : null;
  return row.mimeType ?? named ?? (row.kind === 'photo' ? 'image/jpeg' : served);
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

export function createDownloadActivities(deps: ActivityDeps, options: DownloadOptions = {}) {
  const { pool, config, logger } = deps;
  const { dir: mediaDir, maxBytes } = config.media;
  const network = options.network ?? networkPolicy(config.media.allowPrivateNetworks);
  const limits: DownloadLimits = { ...defaultDownloadLimits, ...options.limits };
  const tempDir = mediaTempDir(mediaDir);
  const fetchLimit = pLimit(limits.concurrentFetches);

  /** Opens the source within one attempt (its abort, its time limit) and stores what it sends. */
  async function fetchToStore(
    row: StoredAttachment,
    open: (attempt: AbortController) => Promise<MediaSource>,
    onChunk = () => {},
  ): Promise<StoredMedia> {
    await fs.mkdir(tempDir, { recursive: true });
    const prefix = tempFilePrefix(row.messagePk, row.position);
    await removeAbandonedTempFiles(tempDir, prefix, limits.attemptTimeoutMs);
    const tempPath = path.join(tempDir, `${prefix}${crypto.randomBytes(8).toString('hex')}.part`);

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
      const { sha256, bytes } = await writeBody(source, tempPath, maxBytes, onChunk);
      const finalPath = mediaPath(mediaDir, sha256);
      await fs.mkdir(path.dirname(finalPath), { recursive: true });
      await fs.rename(tempPath, finalPath);
      return { contentType: source.contentType, bytes, sha256 };
    } catch (err) {
      await fs.rm(tempPath, { force: true });
      throw attempt.signal.aborted ? attempt.signal.reason : err;
    } finally {
      clearTimeout(deadline);
      cancellation.removeEventListener('abort', onCancel);
    }
  }

  function fetchUrl(row: StoredAttachment, url: string): Promise<StoredMedia> {
    return fetchToStore(row, async (attempt) => sourceOf(await openMedia(url, network, attempt, limits)));
  }

  /** The bot whose token the Telegram file is downloaded with: the one the child is stored under (its account). */
  function botOf(key: MessageKey): TelegramBot {
    const bot = [...(config.telegram.bots.get(key.workspace)?.values() ?? [])].find((candidate) => candidate.id === key.accountId);
    if (!bot) throw new PermanentDownloadError('failed', `TELEGRAM_BOTS["${key.workspace}"] has no bot with id ${key.accountId}`);
    return bot;
  }

  /** The LINE channel whose access token fetches the content: the one the webhook came through. */
  function channelOf(key: MessageKey, name: string): LineChannel {
    const channel = config.line.channels.get(key.workspace)?.get(name);
    if (!channel) throw new PermanentDownloadError('failed', `LINE_CHANNELS["${key.workspace}"] has no channel "${name}"`);
    return channel;
  }

  /**
   * A file from a platform's API with a token read from the configuration now (a Telegram bot's, a
   * LINE channel's). The API root is the operator's (a local Bot API server on loopback is normal), so
   * it is not vetted like a sender's URL; silence is limited all the same. `open` throws the API's own
   * error (its `retryable` says whether another attempt may help); any other failure's words are kept
   * only once `redact` took the token out of them.
   */
  async function fetchFromApi(
    row: StoredAttachment,
    apiName: string,
    open: (signal: AbortSignal) => Promise<MediaSource>,
    redact: (text: string) => string,
  ): Promise<StoredMedia> {
    let watch: ReturnType<typeof idleWatch> | undefined;
    try {
      return await fetchToStore(
        row,
        async (attempt) => {
          watch = idleWatch(limits.idleTimeoutMs, () =>
            attempt.abort(new TransientDownloadError(`${apiName} sent nothing for ${seconds(limits.idleTimeoutMs)}`)),
          );
          const source = await open(attempt.signal);
          watch.touch();
          return source;
        },
        () => watch?.touch(),
      );
    } catch (err) {
      if (err instanceof BotApiError || err instanceof LineApiError)
        throw err.retryable ? new TransientDownloadError(err.message) : new PermanentDownloadError('failed', err.message);
      const ours = [CancelledFailure, TransientDownloadError, PermanentDownloadError, UnavailableDownloadError].some(
        (type) => err instanceof type,
      );
      if (ours) throw err;
      throw new TransientDownloadError(redact(errorMessage(err)));
    } finally {
      watch?.stop();
    }
  }

  /** A Telegram file, with a fresh getFile (paths expire). */
  async function fetchTelegramFile(row: StoredAttachment, key: MessageKey, file: { fileId: string }): Promise<StoredMedia> {
    const { token } = botOf(key);
    const api = createBotApi({ apiRoot: config.telegram.apiRoot, token });
    const stored = await fetchFromApi(
      row,
      'the Bot API',
      async (signal) => {
        const opened = await api.openFile({ fileId: file.fileId, declaredSize: row.declaredSize }, signal);
        if (opened.status === 'unavailable') throw new UnavailableDownloadError(opened.reason);
        return { body: opened.stream, contentLength: opened.contentLength, contentType: opened.contentType };
      },
      (text) => redactToken(text, token),
    );
    return { ...stored, contentType: telegramContentType(row, stored.contentType) };
  }

  /** LINE content of the message `key`, from the data API with the channel's access token (404/410: expired; 202: retried). */
  async function fetchLineContent(row: StoredAttachment, key: MessageKey, channelName: string): Promise<StoredMedia> {
    const { channelAccessToken } = channelOf(key, channelName);
    const api = createMessagingApi({ apiRoot: config.line.apiRoot, dataApiRoot: config.line.dataApiRoot, channelAccessToken });
    return fetchFromApi(
      row,
      'the LINE content API',
      async (signal) => {
        const opened = await api.openContent(key.messageId, signal);
        if (opened.status === 'expired') throw new PermanentDownloadError('expired', opened.reason);
        return { body: opened.stream, contentLength: opened.contentLength, contentType: opened.contentType };
      },
      (text) => text.split(channelAccessToken).join('[redacted]'),
    );
  }

  /**
   * The outcome of one attempt for the attachment as it is stored now: null when it is known already
   * (downloaded, or terminal and not retried); otherwise the outcome to record.
   */
  async function attemptDownload(
    row: StoredAttachment,
    { key, retry }: DownloadRequest,
    finalAttempt: number,
    log: Logger,
  ): Promise<DownloadResult | null> {
    if (row.status === 'downloaded' && row.sha256 && (await fileExists(mediaPath(mediaDir, row.sha256)))) return null;
    const retried = retry && (row.status === 'failed' || row.status === 'expired');
    if (row.status !== 'pending' && row.status !== 'downloaded' && !retried) return null;
    const { url, telegramFile, lineChannel } = row;
    if (!url && !telegramFile && !lineChannel) return failure('unavailable', 'the platform sent no URL for this attachment');

    try {
      const stored = await fetchLimit(() => {
        if (url) return fetchUrl(row, url);
        if (telegramFile) return fetchTelegramFile(row, key, telegramFile);
        return fetchLineContent(row, key, lineChannel!);
      });
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
      if (await recordDownloadResult(pool, row, result)) {
        downloadsTotal.inc({ outcome: result.status });
        if (result.bytes !== null) downloadedBytesTotal.inc(result.bytes);
        return result;
      }
      if (replaced === maxReplacements)
        throw new TransientDownloadError('the attachment was replaced by an edit during each of its downloads');
      log.info('the attachment was replaced by an edit during its download; downloading the new file');
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
