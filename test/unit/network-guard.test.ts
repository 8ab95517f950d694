import type { LookupAddress } from 'node:dns';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  RefusedTargetError,
  addressRange,
  isPublicAddress,
  networkPolicy,
  pinnedLookup,
  vetTarget,
  type NetworkPolicy,
  type ResolvedAddress,
} from '../../src/common/network-guard.js';

describe('addressRange', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.254', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'linkLocal'],
    ['169.254.0.1', 'linkLocal'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['100.127.255.254', 'carrierGradeNat'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['255.255.255.255', 'broadcast'],
    ['224.0.0.251', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.10', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fc00::1', 'uniqueLocal'],
    ['fd12:3456:789a::1', 'uniqueLocal'],
    ['fe80::1', 'linkLocal'],
    ['fe80::1%eth0', 'linkLocal'],
    ['ff02::1', 'multicast'],
    ['fec0::1', 'deprecatedSiteLocal'],
    ['2001:db8::1', 'reserved'],
    ['not-an-address', 'invalid'],
    ['1.2.3', 'invalid'],
  ])('classifies %s as %s', (address, range) => {
    expect(addressRange(address)).toBe(range);
  });

  it.each([
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:169.254.169.254', 'linkLocal'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:100.64.1.1', 'carrierGradeNat'],
    ['::ffff:0:127.0.0.1', 'loopback'],
    ['::127.0.0.1', 'loopback'],
    ['::a9fe:a9fe', 'linkLocal'],
    ['64:ff9b::10.0.0.1', 'private'],
    ['64:ff9b::169.254.169.254', 'linkLocal'],
    ['2002:7f00:1::', 'loopback'],
    ['2002:c0a8:101::1', 'private'],
  ])('classifies the IPv4 address an IPv6 form embeds: %s is %s', (address, range) => {
    expect(addressRange(address)).toBe(range);
  });

  it('refuses IPv6 transition forms whose IPv4 target cannot be checked', () => {
    expect(isPublicAddress('64:ff9b:1::a00:1')).toBe(false);
    expect(isPublicAddress('2001:0:4136:e378:8000:63bf:3fff:fdd2')).toBe(false);
  });

  it.each([
    '8.8.8.8',
    '93.184.215.14',
    '1.1.1.1',
    '2606:4700:4700::1111',
    '2a00:1450:4001:80b::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::8.8.8.8',
    '2002:808:808::1',
  ])('treats %s as public', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });

  it('classifies every IPv4-mapped, IPv4-translated and NAT64 form like the IPv4 address itself', () => {
    fc.assert(
      fc.property(fc.ipV4(), (ipv4) => {
        const range = addressRange(ipv4);
        expect(addressRange(`::ffff:${ipv4}`)).toBe(range);
        expect(addressRange(`::ffff:0:${ipv4}`)).toBe(range);
        expect(addressRange(`64:ff9b::${ipv4}`)).toBe(range);
        expect(isPublicAddress(`::ffff:${ipv4}`)).toBe(isPublicAddress(ipv4));
      }),
    );
  });
});

function policyResolving(answers: Record<string, string[]>, allowPrivateNetworks = false): NetworkPolicy & { lookups: string[] } {
  const lookups: string[] = [];
  return {
    lookups,
    permits: networkPolicy(allowPrivateNetworks).permits,
    resolve(hostname) {
      lookups.push(hostname);
      const addresses = answers[hostname];
      if (!addresses) return Promise.reject(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }));
      return Promise.resolve(addresses.map((address): ResolvedAddress => ({ address, family: address.includes(':') ? 6 : 4 })));
    },
  };
}

describe('vetTarget', () => {
  it('returns the first resolved address of a public host', async () => {
    const policy = policyResolving({ 'cdn.example': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'] });
    await expect(vetTarget(new URL('https://cdn.example/a.jpg'), policy)).resolves.toEqual({ address: '93.184.215.14', family: 4 });
    expect(policy.lookups).toEqual(['cdn.example']);
  });

  it('refuses a host when any of its addresses is private (a mixed answer is a rebinding attempt)', async () => {
    const policy = policyResolving({ 'mixed.example': ['93.184.215.14', '10.0.0.5'] });
    await expect(vetTarget(new URL('http://mixed.example/'), policy)).rejects.toThrow(/10\.0\.0\.5 is a private address/);
  });

  it.each([
    ['http://127.0.0.1:8080/x', /127\.0\.0\.1 is a loopback address/],
    ['http://169.254.169.254/latest/meta-data/', /169\.254\.169\.254 is a linkLocal address/],
    ['http://[::1]/', /::1 is a loopback address/],
    ['http://[::ffff:127.0.0.1]/', /is a loopback address/],
    ['http://[::ffff:a9fe:a9fe]/', /is a linkLocal address/],
    ['http://100.100.100.200/', /carrierGradeNat/],
    ['http://2130706433/', /127\.0\.0\.1 is a loopback address/],
    ['http://0x7f.1/', /127\.0\.0\.1 is a loopback address/],
    ['http://0/', /0\.0\.0\.0 is a unspecified address/],
  ])('refuses the literal address of %s without asking DNS', async (url, message) => {
    const policy = policyResolving({});
    const refusal = vetTarget(new URL(url), policy);
    await expect(refusal).rejects.toBeInstanceOf(RefusedTargetError);
    await expect(refusal).rejects.toThrow(message);
    expect(policy.lookups).toEqual([]);
  });

  it('refuses names that resolve to loopback, such as localhost', async () => {
    const policy = policyResolving({ localhost: ['::1', '127.0.0.1'] });
    await expect(vetTarget(new URL('http://localhost:3000/'), policy)).rejects.toBeInstanceOf(RefusedTargetError);
  });

  it.each(['ftp://cdn.example/a.jpg', 'file:///etc/passwd', 'data:text/plain,hi', 'gopher://cdn.example/'])(
    'refuses the non-http scheme of %s',
    async (url) => {
      const policy = policyResolving({ 'cdn.example': ['93.184.215.14'] });
      await expect(vetTarget(new URL(url), policy)).rejects.toThrow(/only http and https URLs are fetched/);
      expect(policy.lookups).toEqual([]);
    },
  );

  it('permits private and loopback addresses when private networks are allowed', async () => {
    const policy = policyResolving({ 'nas.lan': ['192.168.1.20'] }, true);
    await expect(vetTarget(new URL('http://nas.lan/photo'), policy)).resolves.toEqual({ address: '192.168.1.20', family: 4 });
    await expect(vetTarget(new URL('http://[::1]:8080/'), policy)).resolves.toEqual({ address: '::1', family: 6 });
  });

  it('passes DNS failures through as ordinary (retryable) errors', async () => {
    const refusal = vetTarget(new URL('http://missing.example/'), policyResolving({}));
    await expect(refusal).rejects.toThrow(/ENOTFOUND/);
    await expect(refusal).rejects.not.toBeInstanceOf(RefusedTargetError);
  });
});

describe('pinnedLookup', () => {
  const target: ResolvedAddress = { address: '203.0.113.7', family: 4 };

  it('answers the vetted address for a single-address lookup whatever the name', () => {
    const answers: unknown[][] = [];
    pinnedLookup(target)('rebinding.example', {}, (...args) => answers.push(args));
    expect(answers).toEqual([[null, '203.0.113.7', 4]]);
  });

  it('answers a one-element list when every address is asked for (autoSelectFamily)', () => {
    const answers: [unknown, string | LookupAddress[]][] = [];
    pinnedLookup(target)('rebinding.example', { all: true }, (err, address) => answers.push([err, address]));
    expect(answers).toEqual([[null, [{ address: '203.0.113.7', family: 4 }]]]);
  });
});
