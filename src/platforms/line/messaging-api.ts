// The few LINE Messaging API calls albumflow makes with a channel's access token: the content of a
// message for downloads (data API), and the webhook endpoint for the CLI. The token travels in the
// Authorization header only; every failure is a PlatformApiError whose message is written here and never
// holds it.

import { hostOf, PlatformApiError, streamedFile, unreachable, type ApiClientOptions, type OpenedFile } from '../api.js';

/** `apiRoot` is LINE_API_ROOT. */
export interface MessagingApiOptions extends ApiClientOptions {
  /** LINE_DATA_API_ROOT, without a trailing slash. */
  dataApiRoot: string;
  channelAccessToken: string;
}

export interface MessagingApi {
  /** `GET <data API>/v2/bot/message/<id>/content`: the file a user sent; `expired`: LINE no longer has it (it keeps content for a limited time), or never had it. */
  openContent(messageId: string, signal?: AbortSignal): Promise<OpenedFile>;
  /** `PUT <API>/v2/bot/channel/webhook/endpoint` with `{ "endpoint": url }`. */
  setWebhookEndpoint(url: string, signal?: AbortSignal): Promise<void>;
}

/** The path of a message's content under LINE_DATA_API_ROOT. */
export function contentPath(messageId: string): string {
  return `/v2/bot/message/${encodeURIComponent(messageId)}/content`;
}

/** The path of the webhook endpoint setting under LINE_API_ROOT. */
export const webhookEndpointPath = '/v2/bot/channel/webhook/endpoint';

const retryableStatus = (status: number) => status >= 500 || status === 408 || status === 429;

export function createMessagingApi({
  apiRoot,
  dataApiRoot,
  channelAccessToken,
  callTimeoutMs = 30_000,
}: MessagingApiOptions): MessagingApi {
  const authorization = `Bearer ${channelAccessToken}`;
  const scrub = (text: string) => text.split(channelAccessToken).join('[redacted]');
  const fail = (message: string, retryable: boolean) => new PlatformApiError(scrub(message), retryable);
  const host = (root: string) => hostOf(root, 'the LINE API');

  /** LINE's `{ "message": … }` of a refusal, on one line and short; null when the body has none. */
  async function refusalMessage(response: Response): Promise<string | null> {
    try {
      const body = (await response.json()) as { message?: unknown };
      return typeof body.message === 'string' ? body.message.replace(/\s+/g, ' ').slice(0, 300) : null;
    } catch {
      return null;
    }
  }

  return {
    async openContent(messageId, signal) {
      let response: Response;
      try {
        response = await fetch(`${dataApiRoot}${contentPath(messageId)}`, {
          headers: { authorization },
          redirect: 'manual',
          signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(callTimeoutMs)]) : AbortSignal.timeout(callTimeoutMs),
        });
      } catch (err) {
        throw unreachable('message content', host(dataApiRoot), callTimeoutMs, err, signal);
      }
      const status = response.status;
      if (status === 200 && response.body) return { status: 'ready', ...streamedFile(response) };
      const said = await refusalMessage(response);
      const detail = `HTTP ${status}${said ? ` ${said}` : ''}`;
      // A video or audio LINE is still transcoding: the content API answers 202 until it is ready.
      if (status === 202) throw fail(`message content: LINE is still preparing it (${detail})`, true);
      if (status === 404 || status === 410)
        return { status: 'expired', reason: `message content: ${detail} (LINE keeps content for a limited time)` };
      if (status === 401 || status === 403) throw fail(`message content: LINE refused the channel access token (${detail})`, false);
      throw fail(`message content: ${detail}`, retryableStatus(status));
    },

    async setWebhookEndpoint(url, signal) {
      let response: Response;
      try {
        response = await fetch(`${apiRoot}${webhookEndpointPath}`, {
          method: 'PUT',
          headers: { authorization, 'content-type': 'application/json' },
          body: JSON.stringify({ endpoint: url }),
          redirect: 'manual',
          signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(callTimeoutMs)]) : AbortSignal.timeout(callTimeoutMs),
        });
      } catch (err) {
        throw unreachable('set webhook endpoint', host(apiRoot), callTimeoutMs, err, signal);
      }
      if (response.ok) {
        await response.body?.cancel();
        return;
      }
      const said = await refusalMessage(response);
      const detail = `HTTP ${response.status}${said ? ` ${said}` : ''}`;
      if (response.status === 401) throw fail(`set webhook endpoint: LINE refused the channel access token (${detail})`, false);
      throw fail(`set webhook endpoint: ${detail}`, retryableStatus(response.status));
    },
  };
}
