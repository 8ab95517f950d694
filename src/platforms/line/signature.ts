import crypto from 'node:crypto';

/** LINE's webhook signature (`x-line-signature`): base64 of HMAC-SHA256 over the raw body, keyed with the channel secret. */
export function lineSignature(channelSecret: string, body: Buffer | string): string {
  return crypto.createHmac('sha256', channelSecret).update(body).digest('base64');
}
