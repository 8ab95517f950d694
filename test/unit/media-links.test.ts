import { describe, expect, it } from 'vitest';
import { createMediaLinks, publicBaseUrl } from '../../src/media/links.js';

const sha256 = 'ab'.repeat(32);

describe('signed media links', () => {
  const links = createMediaLinks({ baseUrl: 'https://albums.example', lifetimeS: 3600, key: async () => Buffer.alloc(32, 7) });
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
    expect(sig).toMatch(/^[A-Za-z0-9_-]{43}$/);
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
    const other = createMediaLinks({ baseUrl: 'https://albums.example', lifetimeS: 3600, key: async () => Buffer.alloc(32, 8) });
    expect(await other.check('demo', sha256, { expires, sig }, now)).toBe('invalid');
  });

  it('start at PUBLIC_URL, else at the listen address', () => {
    expect(publicBaseUrl({ publicUrl: 'https://albums.example', host: '0.0.0.0', port: 3000 })).toBe('https://albums.example');
    expect(publicBaseUrl({ publicUrl: undefined, host: '127.0.0.1', port: 3000 })).toBe('http://127.0.0.1:3000');
    expect(publicBaseUrl({ publicUrl: undefined, host: '0.0.0.0', port: 8080 })).toBe('http://127.0.0.1:8080');
    expect(publicBaseUrl({ publicUrl: undefined, host: '::1', port: 3000 })).toBe('http://[::1]:3000');
  });
});
