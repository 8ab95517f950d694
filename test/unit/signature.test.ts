import crypto from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { maxSignatureEntries, parseSignatureHeader, signatureHeader, signatureHex, verifySignature } from '../../src/common/signature.js';

const nowS = 1_790_676_000;
const body = Buffer.from('{"id":"evt_1","type":"message.received","data":{"message":{"id":"m1"}}}');
const secret = 'current-secret';

function verify(overrides: Partial<Parameters<typeof verifySignature>[0]> = {}) {
  const timestamp = String(nowS);
  return verifySignature({
    secrets: [secret],
    timestamp,
    signature: signatureHeader(secret, timestamp, body),
    body,
    toleranceS: 300,
    nowS,
    ...overrides,
  });
}

describe('signatureHex', () => {
  it('is HMAC-SHA256 of "<timestamp>.<raw body>"', () => {
    const expected = crypto.createHmac('sha256', secret).update(`${nowS}.${body.toString()}`).digest('hex');
    expect(signatureHex(secret, String(nowS), body)).toBe(expected);
    expect(signatureHeader(secret, String(nowS), body)).toBe(`v1=${expected}`);
  });
});

describe('verifySignature', () => {
  it('accepts a valid signature', () => {
    expect(verify()).toEqual({ ok: true });
  });

  it('accepts any configured secret of the workspace (rotation)', () => {
    const timestamp = String(nowS);
    const oldSignature = signatureHeader('old-secret', timestamp, body);
    expect(verify({ secrets: ['old-secret', secret], signature: oldSignature })).toEqual({ ok: true });
    expect(verify({ secrets: [secret, 'old-secret'] })).toEqual({ ok: true });
    expect(verify({ secrets: ['retired-secret'] })).toEqual({ ok: false, reason: 'invalid_signature' });
  });

  it('refuses a tampered body', () => {
    const tampered = Buffer.from(body.toString().replace('m1', 'm2'));
    expect(verify({ body: tampered })).toEqual({ ok: false, reason: 'invalid_signature' });
  });

  it('refuses a body that was re-serialized after signing', () => {
    const original = Buffer.from('{ "id": "evt_1",  "type": "message.received" }');
    const timestamp = String(nowS);
    const signature = signatureHeader(secret, timestamp, original);
    expect(verify({ body: original, signature })).toEqual({ ok: true });
    const reserialized = Buffer.from(JSON.stringify(JSON.parse(original.toString())));
    expect(verify({ body: reserialized, signature })).toEqual({ ok: false, reason: 'invalid_signature' });
  });

  it('refuses a signature made for another timestamp', () => {
    const signature = signatureHeader(secret, String(nowS - 1), body);
    expect(verify({ signature })).toEqual({ ok: false, reason: 'invalid_signature' });
  });

  it('accepts timestamps up to the tolerance either way and refuses stale and future ones', () => {
    for (const skew of [-300, 0, 300]) {
      const timestamp = String(nowS + skew);
      expect(verify({ timestamp, signature: signatureHeader(secret, timestamp, body) })).toEqual({ ok: true });
    }
    const stale = String(nowS - 301);
    expect(verify({ timestamp: stale, signature: signatureHeader(secret, stale, body) })).toEqual({ ok: false, reason: 'stale_timestamp' });
    const future = String(nowS + 301);
    expect(verify({ timestamp: future, signature: signatureHeader(secret, future, body) })).toEqual({
      ok: false,
      reason: 'future_timestamp',
    });
  });

  it('refuses missing headers and malformed timestamps', () => {
    expect(verify({ timestamp: undefined })).toEqual({ ok: false, reason: 'missing_signature' });
    expect(verify({ signature: undefined })).toEqual({ ok: false, reason: 'missing_signature' });
    expect(verify({ timestamp: '', signature: '' })).toEqual({ ok: false, reason: 'missing_signature' });
    for (const timestamp of ['1790676000.5', '-1790676000', 'now', '0x6AB3F0E0', '1e9']) {
      expect(verify({ timestamp, signature: signatureHeader(secret, timestamp, body) })).toEqual({
        ok: false,
        reason: 'invalid_timestamp',
      });
    }
  });

  it('accepts a valid entry among several, separated by commas or spaces, in any hex case', () => {
    const valid = signatureHeader(secret, String(nowS), body);
    const wrong = `v1=${'0'.repeat(64)}`;
    expect(verify({ signature: `${wrong},${valid}` })).toEqual({ ok: true });
    expect(verify({ signature: `${wrong} ${valid}` })).toEqual({ ok: true });
    expect(verify({ signature: `${wrong}, ${valid.toUpperCase().replace('V1=', 'v1=')}` })).toEqual({ ok: true });
    expect(verify({ signature: `v0=abc, t=1, ${valid}` })).toEqual({ ok: true });
  });

  it(`compares at most ${maxSignatureEntries} entries of one header`, () => {
    const valid = signatureHeader(secret, String(nowS), body);
    const filler = Array.from({ length: maxSignatureEntries }, (_, i) => `v1=${i.toString(16).padStart(64, '0')}`);
    expect(verify({ signature: [...filler.slice(1), valid].join(',') })).toEqual({ ok: true });
    expect(verify({ signature: [...filler, valid].join(',') })).toEqual({ ok: false, reason: 'invalid_signature' });
    expect(parseSignatureHeader(Array(1000).fill(valid).join(','))).toHaveLength(maxSignatureEntries);
  });

  it('refuses entries that are not 64 hex digits', () => {
    const valid = signatureHeader(secret, String(nowS), body);
    expect(verify({ signature: valid.slice(0, -2) })).toEqual({ ok: false, reason: 'invalid_signature' });
    expect(verify({ signature: `${valid}00` })).toEqual({ ok: false, reason: 'invalid_signature' });
    expect(verify({ signature: valid.slice(3) })).toEqual({ ok: false, reason: 'invalid_signature' });
  });

  it('refuses every body but the signed one', () => {
    const timestamp = String(nowS);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 256 }), fc.uint8Array({ maxLength: 256 }), (signedBytes, sentBytes) => {
        const signedBody = Buffer.from(signedBytes);
        const sentBody = Buffer.from(sentBytes);
        const result = verify({ body: sentBody, signature: signatureHeader(secret, timestamp, signedBody) });
        expect(result.ok).toBe(signedBody.equals(sentBody));
      }),
    );
  });
});
