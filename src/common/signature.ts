import crypto from 'node:crypto';

/**
 * The signature scheme shared by the UnifyPort ingress and albumflow's own notifications:
 * `v1=<hex>` where hex = HMAC-SHA256(secret, "<timestamp>.<raw body bytes>").
 */
export function signatureHex(secret: string, timestamp: string, body: Buffer | string): string {
  return crypto.createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
}

export function signatureHeader(secret: string, timestamp: string, body: Buffer | string): string {
  return `v1=${signatureHex(secret, timestamp, body)}`;
}

/** At most this many `v1=` entries of one header are compared; the rest are ignored. */
export const maxSignatureEntries = 16;

/** The hex digests of the `v1=` entries of a header (separated by commas or spaces). */
export function parseSignatureHeader(header: string): string[] {
  const digests: string[] = [];
  for (const entry of header.split(/[\s,]+/)) {
    if (digests.length === maxSignatureEntries) break;
    const match = /^v1=([0-9a-fA-F]{64})$/.exec(entry);
    if (match) digests.push(match[1]!.toLowerCase());
  }
  return digests;
}

/** Why a signature was refused: the error codes the webhook answers with, and the metric's labels. */
export type VerifyFailure = 'missing_signature' | 'invalid_timestamp' | 'stale_timestamp' | 'future_timestamp' | 'invalid_signature';

/**
 * Checks freshness (both ways) and that one of the header's `v1=` entries matches one of the
 * secrets, comparing in constant time.
 */
export function verifySignature(input: {
  secrets: readonly string[];
  timestamp: string | undefined;
  signature: string | undefined;
  body: Buffer;
  toleranceS: number;
  nowS?: number;
}): { ok: true } | { ok: false; reason: VerifyFailure } {
  const { secrets, timestamp, signature, body, toleranceS } = input;
  if (!timestamp || !signature) return { ok: false, reason: 'missing_signature' };
  if (!/^\d{1,12}$/.test(timestamp)) return { ok: false, reason: 'invalid_timestamp' };
  const now = input.nowS ?? Math.floor(Date.now() / 1000);
  const skew = Number(timestamp) - now;
  if (skew < -toleranceS) return { ok: false, reason: 'stale_timestamp' };
  if (skew > toleranceS) return { ok: false, reason: 'future_timestamp' };
  const given = parseSignatureHeader(signature).map((hex) => Buffer.from(hex, 'hex'));
  let matched = false;
  for (const secret of secrets) {
    const expected = Buffer.from(signatureHex(secret, timestamp, body), 'hex');
    for (const candidate of given) matched = crypto.timingSafeEqual(expected, candidate) || matched;
  }
  return matched ? { ok: true } : { ok: false, reason: 'invalid_signature' };
}

/** Two texts compared in constant time: both are hashed first, so the time does not depend on their lengths either. */
export function sameTextInConstantTime(sent: string, expected: string): boolean {
  const digest = (text: string) => crypto.createHash('sha256').update(text).digest();
  return crypto.timingSafeEqual(digest(sent), digest(expected));
}
