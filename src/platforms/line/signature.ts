import crypto from 'node:crypto';
import type { RegisteredChannel } from '../../tenants/registry.js';
import type { HeaderProof } from '../webhook-route.js';

/** What LINE sends the body's signature in. */
export const lineSignatureHeader = 'x-line-signature';

/** LINE's webhook signature (`x-line-signature`): base64 of HMAC-SHA256 over the raw body, keyed with the channel secret. */
export function lineSignature(channelSecret: string, body: Buffer | string): string {
  return crypto.createHmac('sha256', channelSecret).update(body).digest('base64');
}

/** A channel's webhook bodies are signed with its channel secret. */
export const lineSignatureProof: HeaderProof<RegisteredChannel> = {
  header: lineSignatureHeader,
  description: 'base64 HMAC-SHA256 of the body',
  coversBody: true,
  expected: (channel, body) => lineSignature(channel.channelSecret, body!),
  missing: { code: 'missing_signature', message: `the ${lineSignatureHeader} header is required` },
  invalid: { code: 'invalid_signature', message: `${lineSignatureHeader} is not the body's signature with this channel's secret` },
};
