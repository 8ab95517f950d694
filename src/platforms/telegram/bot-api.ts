// The few Bot API calls albumflow makes with a bot's token: getFile (and the file behind it) for
// downloads, setWebhook for the CLI. The token is part of every URL here, so no URL, and no text from
// elsewhere that might hold one, leaves this module: every failure is a PlatformApiError whose message is
// written here and scrubbed of the token.

import fs from 'node:fs/promises';
import path from 'node:path';
import type { ApiMethods, ApiResponse, File, Update } from '@grammyjs/types';
import { defaultTelegramApiRoot } from '../../common/config.js';
import { hostOf, PlatformApiError, streamedFile, unreachable, type ApiClientOptions, type OpenedFile } from '../api.js';

/** What the cloud Bot API lets a bot download ("up to 20MB"); a local Bot API server has no such limit. */
export const cloudDownloadLimitBytes = 20 * 1024 * 1024;

/** Telegram's words when getFile refuses a file over that limit. */
const tooBigDescription = /file is too big/i;
/** Part of Telegram's "wrong file_id or the file is temporarily unavailable". */
const temporarilyUnavailable = /temporarily unavailable/i;

/** `apiRoot` is TELEGRAM_API_ROOT. */
export interface BotApiOptions extends ApiClientOptions {
  token: string;
}

export interface TelegramFileRequest {
  fileId: string;
  /** The `file_size` the message declared, if any. */
  declaredSize: number | null;
}

export interface WebhookSettings {
  url: string;
  secretToken: string;
  allowedUpdates: ReadonlyArray<Exclude<keyof Update, 'update_id'>>;
  dropPendingUpdates?: boolean;
}

export interface BotApi {
  /**
   * Asks getFile for a fresh path (paths expire, so every call asks again) and opens the file: over
   * HTTP at `<root>/file/bot<token>/<file_path>`, or, when a local Bot API server (`--local`) answers
   * with an absolute path, from disk — that server does not serve files over HTTP. `unavailable`: Telegram
   * will not let this bot download the file; asking again does not help.
   */
  openFile(file: TelegramFileRequest, signal?: AbortSignal): Promise<OpenedFile>;
  /** Calls setWebhook; resolves to Telegram's description ("Webhook was set"). */
  setWebhook(settings: WebhookSettings, signal?: AbortSignal): Promise<string>;
}

type SetWebhookParams = Parameters<ApiMethods<never>['setWebhook']>[0];

/** A method call's answer, whatever the server sent. */
type CallResult<T> =
  | { ok: true; result: T; description: string | null }
  | { ok: false; status: number; description: string | null; retryAfter: number | null };

/** `text` with the secret part of the bot token (after the bot id and `:`) replaced, as is and URL-encoded. */
export function redactToken(text: string, token: string): string {
  const secretPart = token.slice(token.indexOf(':') + 1);
  if (secretPart === '') return text;
  return text.split(secretPart).join('[redacted]').split(encodeURIComponent(secretPart)).join('[redacted]');
}

export function createBotApi({ apiRoot, token, callTimeoutMs = 30_000 }: BotApiOptions): BotApi {
  const host = hostOf(apiRoot, 'the Bot API');
  const scrub = (text: string) => redactToken(text, token);
  const fail = (message: string, retryable: boolean) => new PlatformApiError(scrub(message), retryable);

  async function call<T>(method: string, params: object, signal?: AbortSignal): Promise<CallResult<T>> {
    const timeout = AbortSignal.timeout(callTimeoutMs);
    let response: Response;
    let text: string;
    try {
      response = await fetch(`${apiRoot}/bot${token}/${method}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(params),
        redirect: 'manual',
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
      text = await response.text();
    } catch (err) {
      throw unreachable(method, host, callTimeoutMs, err, signal);
    }
    let body: Partial<ApiResponse<T>> & { description?: unknown } = {};
    try {
      const parsed: unknown = JSON.parse(text);
      if (typeof parsed === 'object' && parsed !== null) body = parsed;
    } catch {
      // not a Bot API answer: judged by its status alone
    }
    const description = typeof body.description === 'string' ? body.description : null;
    if (body.ok === true && 'result' in body) return { ok: true, result: body.result as T, description };
    const status = body.ok === false && typeof body.error_code === 'number' ? body.error_code : response.status;
    const retryAfter = body.ok === false ? body.parameters?.retry_after : undefined;
    return { ok: false, status, description, retryAfter: typeof retryAfter === 'number' ? retryAfter : null };
  }

  function refused(method: string, { status, description, retryAfter }: Extract<CallResult<unknown>, { ok: false }>): PlatformApiError {
    if (description === null)
      return fail(`${method}: ${host} answered HTTP ${status} without a Bot API body`, status >= 500 || status === 429);
    if (status === 401 || status === 404) return fail(`${method}: the Bot API refused the bot's token (${status} ${description})`, false);
    const wait = retryAfter === null ? '' : `; retry after ${retryAfter} s`;
    const retryable = status === 429 || status >= 500 || temporarilyUnavailable.test(description);
    return fail(`${method}: ${status} ${description}${wait}`, retryable);
  }

  async function localFile(filePath: string, signal?: AbortSignal): Promise<OpenedFile> {
    let handle: fs.FileHandle | undefined;
    try {
      handle = await fs.open(path.normalize(filePath), 'r');
      const stat = await handle.stat();
      if (!stat.isFile()) throw Object.assign(new Error('not a regular file'), { code: 'ENOTFILE' });
      return { status: 'ready', stream: handle.createReadStream({ signal }), contentLength: stat.size, contentType: null };
    } catch (err) {
      await handle?.close();
      const code = (err as NodeJS.ErrnoException).code ?? 'error';
      throw fail(
        `the local Bot API server's file is not readable here (${code}): albumflow must see that server's working directory at the same path`,
        false,
      );
    }
  }

  async function remoteFile(filePath: string, signal?: AbortSignal): Promise<OpenedFile> {
    const segments = filePath.split('/');
    if (segments.some((segment) => segment === '' || segment === '.' || segment === '..')) {
      throw fail('getFile answered a file_path albumflow does not follow', false);
    }
    let response: Response;
    try {
      response = await fetch(`${apiRoot}/file/bot${token}/${segments.map(encodeURIComponent).join('/')}`, { redirect: 'manual', signal });
    } catch (err) {
      throw unreachable('file download', host, callTimeoutMs, err, signal);
    }
    if (response.ok && response.body) return { status: 'ready', ...streamedFile(response) };
    await response.body?.cancel();
    const status = response.status;
    // A path lives about an hour: the next attempt asks getFile for a new one.
    if (status === 404 || status === 410) throw fail(`file download: HTTP ${status} (the file path expired or is unknown)`, true);
    throw fail(`file download: HTTP ${status}`, status >= 500 || status === 408 || status === 429);
  }

  return {
    async openFile({ fileId, declaredSize }, signal) {
      if (apiRoot === defaultTelegramApiRoot && declaredSize !== null && declaredSize > cloudDownloadLimitBytes) {
        return { status: 'unavailable', reason: tooBig(`the message declares ${declaredSize} bytes`) };
      }
      const answer = await call<File>('getFile', { file_id: fileId }, signal);
      if (!answer.ok) {
        if (answer.description !== null && tooBigDescription.test(answer.description)) {
          return { status: 'unavailable', reason: scrub(tooBig(`getFile: ${answer.description}`)) };
        }
        throw refused('getFile', answer);
      }
      const filePath = (answer.result as Partial<File> | null)?.file_path;
      if (typeof filePath !== 'string' || filePath === '') throw fail('getFile answered without a file_path', false);
      return path.isAbsolute(filePath) ? localFile(filePath, signal) : remoteFile(filePath, signal);
    },

    async setWebhook({ url, secretToken, allowedUpdates, dropPendingUpdates }, signal) {
      const params: SetWebhookParams = {
        url,
        secret_token: secretToken,
        allowed_updates: allowedUpdates,
        ...(dropPendingUpdates ? { drop_pending_updates: true } : {}),
      };
      const answer = await call<true>('setWebhook', params, signal);
      if (!answer.ok) throw refused('setWebhook', answer);
      return scrub(answer.description ?? 'done');
    },
  };
}

function tooBig(detail: string): string {
  return `Telegram lets bots download files of up to 20 MB only, and this one is larger (${detail}); a local Bot API server has no such limit`;
}
