import { describe, expect, it } from 'vitest';
import { createMediaLinks, publicBaseUrl } from '../../src/media/links.js';
import { fixedLinkKeys, testLinkKey } from '../harness/link-keys.js';

const sha256 = 'ab'.repeat(32);

describe('signed media links', () => {
  const links = createMediaLinks({ baseUrl: 'https://albums.example', lifetimeS: 3600, keys: fixedLinkKeys(testLinkKey(7)) });
  const now = Date.UTC(2026, 11, 3, 12, 0, 0);

  async function query(workspace = 'demo', at = now) {
    const url = new URL(await links.url(workspace, sha256, at));
    return { url, expires: url.searchParams.get('expires')!, sig: url.searchParams.get('sig')! };
  }

  it('are absolute URLs of the media route that expire after their lifetime', async () => {
    const { url, expires, sig } = await query('a workspace/with ?');
    expect(url.origin).toBe('https://albums.example');
    expect(url.pathname).toBe(`/workspaces/a%20workspace%2Fwith%20%3F/media/${sha256}`);
    expect(Number(expires)).toBe(now / 1000 + 3600);
    // The id of the key that signed it, then the HMAC.
    expect(sig).toMatch(/^0000000000000007\.[A-Za-z0-9_-]{43}$/);
    expect(await links.check('a workspace/with ?', sha256, { expires, sig }, now)).toBe('valid');
    expect(await links.check('a workspace/with ?', sha256, { expires, sig }, now + 3_599_999)).toBe('valid');
    expect(await links.check('a workspace/with ?', sha256, { expires, sig }, now + 3_600_000)).toBe('expired');
  });

  it('sign one file of one workspace until one time: anything else changed is invalid', async () => {
    const { expires, sig } = await query();
    expect(await links.check('other', sha256, { expires, sig }, now)).toBe('invalid');
    expect(await links.check('demo', 'cd'.repeat(32), { expires, sig }, now)).toBe('invalid');
    expect(await links.check('demo', sha256, { expires: String(Number(expires) + 60), sig }, now)).toBe('invalid');
    expect(await links.check('demo', sha256, { expires, sig: sig.slice(1) }, now)).toBe('invalid');
    expect(await links.check('demo', sha256, { expires, sig: [sig] }, now)).toBe('invalid');
    expect(await links.check('demo', sha256, { expires: `${expires}.0`, sig }, now)).toBe('invalid');
    expect(await links.check('demo', sha256, { sig }, now)).toBe('invalid');
    // Another key (another deployment) signs differently.
    const other = createMediaLinks({ baseUrl: 'https://albums.example', lifetimeS: 3600, keys: fixedLinkKeys(testLinkKey(8)) });
    expect(await other.check('demo', sha256, { expires, sig }, now)).toBe('invalid');
  });

  it('are refused when they expire further ahead than a link made now would, even signed with the right key', async () => {
    // Signed with the deployment's key, by someone who chose the expiry: ten years.
    const forever = createMediaLinks({
      baseUrl: 'https://albums.example',
      lifetimeS: 10 * 365 * 86_400,
      keys: fixedLinkKeys(testLinkKey(7)),
    });
    const url = new URL(await forever.url('demo', sha256, now));
    const query = { expires: url.searchParams.get('expires')!, sig: url.searchParams.get('sig')! };
    expect(await links.check('demo', sha256, query, now)).toBe('invalid');
    // A signer whose clock runs up to 5 minutes ahead is not refused; beyond, it is.
    const ahead = async (ms: number) => {
      const link = new URL(await links.url('demo', sha256, now + ms));
      return links.check('demo', sha256, { expires: link.searchParams.get('expires')!, sig: link.searchParams.get('sig')! }, now);
    };
    expect(await ahead(300_000)).toBe('valid');
    expect(await ahead(301_000)).toBe('invalid');
  });

  it('name their key: after a rotation, links signed with the key before still work, new ones name the new key', async () => {
    const before = createMediaLinks({ baseUrl: 'https://albums.example', lifetimeS: 3600, keys: fixedLinkKeys(testLinkKey(7)) });
    const old = new URL(await before.url('demo', sha256, now));
    const rotated = createMediaLinks({
      baseUrl: 'https://albums.example',
      lifetimeS: 3600,
      keys: fixedLinkKeys(testLinkKey(9), testLinkKey(7)),
    });
    const fresh = new URL(await rotated.url('demo', sha256, now));
    expect(fresh.searchParams.get('sig')).toMatch(/^0000000000000009\./);
    for (const link of [old, fresh]) {
      const query = { expires: link.searchParams.get('expires')!, sig: link.searchParams.get('sig')! };
      expect(await rotated.check('demo', sha256, query, now)).toBe('valid');
    }
    // The key id is signed too: a link's HMAC under another id is not a signature.
    const renamed = old.searchParams.get('sig')!.replace(/^0000000000000007/, '0000000000000009');
    expect(await rotated.check('demo', sha256, { expires: old.searchParams.get('expires')!, sig: renamed }, now)).toBe('invalid');
    // An id that no key has, or that is no id, is invalid.
    const unknown = old.searchParams.get('sig')!.replace(/^0000000000000007/, '00000000000000ff');
    expect(await rotated.check('demo', sha256, { expires: old.searchParams.get('expires')!, sig: unknown }, now)).toBe('invalid');
    expect(
      await rotated.check('demo', sha256, { expires: old.searchParams.get('expires')!, sig: old.searchParams.get('sig')!.slice(17) }, now),
    ).toBe('invalid');
  });

  it('start at PUBLIC_URL, else at the listen address', () => {
    expect(publicBaseUrl({ publicUrl: 'https://albums.example', host: '0.0.0.0', port: 3000 })).toBe('https://albums.example');
    expect(publicBaseUrl({ publicUrl: undefined, host: '127.0.0.1', port: 3000 })).toBe('http://127.0.0.1:3000');
    expect(publicBaseUrl({ publicUrl: undefined, host: '0.0.0.0', port: 8080 })).toBe('http://127.0.0.1:8080');
    expect(publicBaseUrl({ publicUrl: undefined, host: '::1', port: 3000 })).toBe('http://[::1]:3000');
  });
});
