import dns from 'node:dns';
import net, { type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Every address a host name resolves to. */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

/** Which hosts media may be fetched from: how names resolve, and which addresses may be connected to. */
export interface NetworkPolicy {
  resolve: Resolver;
  permits: (address: string) => boolean;
  /** The setting that permits private addresses, named in a refusal (default MEDIA_ALLOW_PRIVATE_NETWORKS). */
  setting?: string;
}

/** A URL albumflow will not fetch (scheme or address); never worth retrying. */
export class RefusedTargetError extends Error {
  override name = 'RefusedTargetError';
}

const nat64WellKnownPrefix = ipaddr.IPv6.parseCIDR('64:ff9b::/96');

function ipv4FromWords(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

/**
 * The IPv4 address an IPv6 form carries and that a host may end up connecting to: IPv4-mapped
 * (::ffff:a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d), IPv4-compatible (::a.b.c.d), NAT64
 * (64:ff9b::a.b.c.d) and 6to4 (2002:aabb:ccdd::).
 */
function embeddedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const words = address.parts;
  const word = (i: number): number => words[i] ?? 0;
  switch (address.range()) {
    case 'ipv4Mapped':
    case 'rfc6145':
      return ipv4FromWords(word(6), word(7));
    case 'rfc6052':
      return address.match(nat64WellKnownPrefix) ? ipv4FromWords(word(6), word(7)) : undefined;
    case '6to4':
      return ipv4FromWords(word(1), word(2));
    case 'unicast':
      return words.slice(0, 6).every((w) => w === 0) ? ipv4FromWords(word(6), word(7)) : undefined;
    default:
      return undefined;
  }
}

/**
 * The special-purpose range of an IP address as ipaddr.js names it (`loopback`, `private`,
 * `linkLocal`, `carrierGradeNat`, `uniqueLocal`, …), the range of the IPv4 address an IPv6 form
 * embeds, `unicast` for an ordinary public address, or `invalid`.
 */
export function addressRange(address: string): string {
  if (net.isIP(address) === 0) return 'invalid';
  const parsed = ipaddr.parse(address);
  if (parsed instanceof ipaddr.IPv4) return parsed.range();
  return (embeddedIPv4(parsed) ?? parsed).range();
}

export function isPublicAddress(address: string): boolean {
  return addressRange(address) === 'unicast';
}

async function resolveAll(hostname: string): Promise<ResolvedAddress[]> {
  const answers = await dns.promises.lookup(hostname, { all: true, verbatim: true });
  return answers.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));
}

/**
 * System DNS; only public addresses unless private networks are allowed by `setting`
 * (MEDIA_ALLOW_PRIVATE_NETWORKS for downloads, NOTIFY_ALLOW_PRIVATE_NETWORKS for endpoints).
 */
export function networkPolicy(allowPrivateNetworks: boolean, setting = 'MEDIA_ALLOW_PRIVATE_NETWORKS'): NetworkPolicy {
  return { resolve: resolveAll, permits: allowPrivateNetworks ? () => true : isPublicAddress, setting };
}

/**
 * Checks one hop of a fetch: http or https only, and every address the host resolves to must be
 * permitted (a mixed answer is refused as a whole). Returns the address to connect to.
 */
export async function vetTarget(url: URL, policy: NetworkPolicy): Promise<ResolvedAddress> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new RefusedTargetError(`only http and https URLs are fetched, not ${url.protocol.replace(/:$/, '')}`);
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const literalFamily = net.isIP(host);
  const addresses: ResolvedAddress[] =
    literalFamily === 0 ? await policy.resolve(host) : [{ address: host, family: literalFamily === 6 ? 6 : 4 }];
  const first = addresses[0];
  if (!first) throw new Error(`${host} resolved to no address`);
  const refused = addresses.find(({ address }) => !policy.permits(address));
  if (refused) {
    throw new RefusedTargetError(
      `refused to connect to ${host}: ${refused.address} is a ${addressRange(refused.address)} address ` +
        `(${policy.setting ?? 'MEDIA_ALLOW_PRIVATE_NETWORKS'} is not enabled)`,
    );
  }
  return first;
}

/** A `lookup` for node:http/https that always answers the vetted address, so DNS is not asked twice. */
export function pinnedLookup(target: ResolvedAddress): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) callback(null, [target]);
    else callback(null, target.address, target.family);
  };
}
