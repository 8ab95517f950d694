import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/common/config.js';
import { generateKey, KeyRing, keyText, parseKeys, resolveSecretKey, SecretKeyError } from '../../src/common/secret-key.js';
import { TokenTable, tokenDigest, tokenHash, type TokenEntry } from '../../src/tenants/tokens.js';

describe('the key ring', () => {
  const ring = new KeyRing([generateKey()]);

  it('opens what it sealed, for the same purpose only, and never seals the same way twice', () => {
    const sealed = ring.seal('a webhook secret', 'place-1');
    expect(sealed.includes(Buffer.from('a webhook secret'))).toBe(false);
    expect(ring.open(sealed, 'place-1')).toBe('a webhook secret');
    expect(ring.seal('a webhook secret', 'place-1').equals(sealed)).toBe(false);
    expect(() => ring.open(sealed, 'place-2')).toThrow(/does not open/);
    const altered = Buffer.from(sealed);
    altered[altered.length - 1]! ^= 1;
    expect(() => ring.open(altered, 'place-1')).toThrow(SecretKeyError);
  });

  it('names a missing key by its id, never a value, and opens under any key of the ring while sealing under the first', () => {
    const other = new KeyRing([generateKey()]);
    const sealed = other.seal('secret value', 'p');
    expect(() => ring.open(sealed, 'p')).toThrow(new RegExp(`key ${other.currentKeyId}, which is not in ALBUMFLOW_SECRET_KEY`));
    const [fresh, old] = [generateKey(), generateKey()];
    const both = new KeyRing([fresh, old]);
    const underOld = new KeyRing([old]).seal('x', 'p');
    expect(both.open(underOld, 'p')).toBe('x');
    const resealed = both.reseal(underOld, 'p')!;
    expect(new KeyRing([fresh]).open(resealed, 'p')).toBe('x');
    expect(both.reseal(resealed, 'p')).toBeUndefined();
  });

  it('takes 64 hex digits or base64 of 32 bytes, several separated by commas, and refuses anything else naming the variable only', () => {
    const key = generateKey();
    expect(parseKeys(`${keyText(key)}, ${key.toString('base64')}`, 'K')).toEqual([key, key]);
    for (const bad of ['', 'short', keyText(key).slice(2), `${keyText(key)}00`]) {
      expect(() => parseKeys(bad, 'ALBUMFLOW_SECRET_KEY')).toThrow(/ALBUMFLOW_SECRET_KEY/);
    }
    expect(() => loadConfig({ ALBUMFLOW_SECRET_KEY: 'not-a-key-at-all' })).toThrow(/ALBUMFLOW_SECRET_KEY must be 32 bytes/);
    try {
      loadConfig({ ALBUMFLOW_SECRET_KEY: 'not-a-key-at-all' });
    } catch (err) {
      expect((err as Error).message).not.toContain('not-a-key-at-all');
    }
  });
});

describe('the key file', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('is generated once with mode 0600, and a ring from it reads it again for a key it lacks', () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-key-'));
    dirs.push(dataDir);
    const first = resolveSecretKey({ secretKey: undefined, dataDir });
    expect(first.created).toBe(true);
    expect(fs.statSync(first.file!).mode & 0o777).toBe(0o600);
    const again = resolveSecretKey({ secretKey: undefined, dataDir });
    expect([again.created, again.ring.currentKeyId]).toEqual([false, first.ring.currentKeyId]);

    const next = generateKey();
    fs.writeFileSync(first.file!, `${keyText(next)}\n`);
    const sealed = new KeyRing([next]).seal('v', 'p');
    expect(first.ring.open(sealed, 'p')).toBe('v');
    // The file's first key seals from then on.
    expect(new KeyRing([next]).open(first.ring.seal('w', 'p'), 'p')).toBe('w');
  });
});

describe('the token table', () => {
  const entry = (token: string, expiresAt: number | undefined): TokenEntry => ({
    id: token,
    name: token,
    hash: tokenHash(token),
    digest: tokenDigest(token),
    workspaces: '*',
    expiresAt,
    source: 'database',
  });

  it('refuses a token from its expiry on, by the token and by its digest', () => {
    const now = Date.now();
    const table = new TokenTable([entry('token-expiring-aaaa', now + 1000), entry('token-forever-bbbbbb', undefined)]);
    expect(table.find('token-expiring-aaaa', now)?.id).toBe('token-expiring-aaaa');
    expect(table.find('token-expiring-aaaa', now + 1000)).toBeUndefined();
    expect(table.byDigest(tokenDigest('token-expiring-aaaa'), now + 1000)).toBeUndefined();
    expect(table.digests(now + 1000)).toEqual([tokenDigest('token-forever-bbbbbb')]);
    expect(table.find('token-forever-bbbbbb', now + 10 ** 12)?.id).toBe('token-forever-bbbbbb');
  });
});
