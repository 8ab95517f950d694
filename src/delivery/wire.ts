// The wire of outbound delivery: Standard Webhooks v1 (https://www.standardwebhooks.com/), signed with the
// reference library, so that any receiver's Standard Webhooks library verifies it unchanged.
import crypto from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { NotificationData } from '../db/deliveries.js';
import { base32 } from './base32.js';

const secretPrefix = 'whsec_';
/** Standard Webhooks asks for keys of 24 to 64 bytes; albumflow makes 32. */
const secretBytes = { made: 32, min: 24, max: 64 };
const howToMakeOne = 'make one with: echo "whsec_$(openssl rand -base64 32)"';

export class WebhookSecretError extends Error {
  override name = 'WebhookSecretError';
}

/** A new endpoint secret, `whsec_<base64 of 32 random bytes>`. */
export function generateSecret(): string {
  return secretPrefix + crypto.randomBytes(secretBytes.made).toString('base64');
}

/** The secret when it is a `whsec_` secret of a usable size; else an error naming `where` (never the value) and how to make one. */
export function checkSecret(secret: string, where: string): string {
  const key = secret.startsWith(secretPrefix) ? secret.slice(secretPrefix.length) : undefined;
  if (key === undefined || key.length % 4 !== 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(key)) {
    throw new WebhookSecretError(`${where} must be a Standard Webhooks secret, "whsec_" and base64; ${howToMakeOne}`);
  }
  const bytes = Buffer.from(key, 'base64').length;
  if (bytes < secretBytes.min || bytes > secretBytes.max) {
    throw new WebhookSecretError(
      `${where} holds ${bytes} bytes; a Standard Webhooks secret holds ${secretBytes.min} to ${secretBytes.max}; ${howToMakeOne}`,
    );
  }
  return secret;
}

/** NOTIFY_SECRET: one `whsec_` secret, or two separated by a space while rotating (both sign). */
export function environmentSecrets(text: string | undefined): string[] {
  const secrets = (text ?? '').split(/\s+/).filter((part) => part !== '');
  if (secrets.length === 0)
    throw new WebhookSecretError(`NOTIFY_URL is set without NOTIFY_SECRET: notifications are signed; ${howToMakeOne}`);
  return secrets.map((secret, index) =>
    checkSecret(secret, secrets.length === 1 ? 'NOTIFY_SECRET' : `NOTIFY_SECRET (secret #${index + 1})`),
  );
}

/**
 * A notification's `webhook-id`: the same at every endpoint, on every retry and replay, and header-safe
 * whatever its id holds (`msg_` and base32 of the first 160 bits of its SHA-256).
 */
export function webhookId(notificationId: string): string {
  return `msg_${base32(crypto.createHash('sha256').update(notificationId, 'utf8').digest().subarray(0, 20))}`;
}

export interface WebhookMessage {
  notificationId: string;
  type: string;
  recordedAt: Date;
  /** With its media links, minted for this attempt. */
  data: NotificationData;
}

/** `{ "type", "timestamp" (when it was recorded), "data": { "id", … } }`. */
export function webhookBody(message: WebhookMessage): string {
  return JSON.stringify({
    type: message.type,
    timestamp: message.recordedAt.toISOString(),
    data: { id: message.notificationId, ...message.data },
  });
}

export interface SignedRequest {
  headers: Record<string, string>;
  body: string;
}

/** The request of one attempt made at `at`, signed with every secret given (space-separated signatures). */
export function signedRequest(message: WebhookMessage, secrets: readonly string[], at: Date): SignedRequest {
  if (secrets.length === 0) throw new WebhookSecretError('the endpoint has no secret to sign with');
  const id = webhookId(message.notificationId);
  const body = webhookBody(message);
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': secrets.map((secret) => new Webhook(secret).sign(id, at, body)).join(' '),
    },
  };
}
