import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction, SocketAddress } from 'node:net';

/**
 * The address guard of DESIGN §11: a webhook may only reach the public internet. Every address
 * a host resolves to is checked, and the request then connects to the checked addresses only
 * (a `lookup` that answers from the check, never a second resolution that a rebinding DNS
 * server could answer differently).
 */

const RANGES: ReadonlyArray<[string, number, 'ipv4' | 'ipv6', string]> = [
  ['0.0.0.0', 8, 'ipv4', 'unspecified'],
  ['10.0.0.0', 8, 'ipv4', 'private'],
  ['100.64.0.0', 10, 'ipv4', 'shared (CGNAT)'],
  ['127.0.0.0', 8, 'ipv4', 'loopback'],
  ['169.254.0.0', 16, 'ipv4', 'link-local'],
  ['172.16.0.0', 12, 'ipv4', 'private'],
  ['192.168.0.0', 16, 'ipv4', 'private'],
  ['224.0.0.0', 4, 'ipv4', 'multicast'],
  ['240.0.0.0', 4, 'ipv4', 'reserved'],
  ['::', 128, 'ipv6', 'unspecified'],
  ['::1', 128, 'ipv6', 'loopback'],
  // IPv4-compatible (deprecated) addresses embed an IPv4 address the guard cannot vouch for.
  ['::', 96, 'ipv6', 'IPv4-compatible'],
  ['fc00::', 7, 'ipv6', 'private'],
  ['fe80::', 10, 'ipv6', 'link-local'],
  ['fec0::', 10, 'ipv6', 'site-local'],
  ['ff00::', 8, 'ipv6', 'multicast'],
];

const lists = RANGES.map(([network, prefix, family, reason]) => {
  const list = new BlockList();
  list.addSubnet(network, prefix, family);
  return { list, family, reason };
});

/** `::ffff:a.b.c.d` (in either spelling) as `a.b.c.d`; any other address unchanged. */
function unmapped(address: string): string {
  const match = /^::ffff:(?:([0-9a-f]{1,4}):([0-9a-f]{1,4})|(\d+\.\d+\.\d+\.\d+))$/i.exec(address);
  if (!match) return address;
  if (match[3]) return match[3];
  const high = Number.parseInt(match[1]!, 16);
  const low = Number.parseInt(match[2]!, 16);
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

/**
 * Why a webhook may not connect to the IP address `address` (loopback, private, link-local…),
 * or null when it may. IPv4-mapped IPv6 addresses are judged by the IPv4 address they carry.
 * Anything that is not an IP address is refused.
 */
export function refusedAddress(address: string): string | null {
  const bare = unmapped(address.replace(/^\[|\]$/g, '').replace(/%.*$/, ''));
  const family = isIP(bare);
  if (family === 0) return 'not an IP address';
  const type = family === 4 ? 'ipv4' : 'ipv6';
  // Parsed once for every range: BlockList.check given a string parses it again each time
  // (127 µs an address against 11 µs, measured).
  const parsed = new SocketAddress({ address: bare, family: type });
  for (const { list, family: listFamily, reason } of lists) {
    if (listFamily === type && list.check(parsed)) return reason;
  }
  return null;
}

export class RefusedAddressError extends Error {
  constructor(
    readonly host: string,
    readonly address: string,
    readonly reason: string,
  ) {
    super(
      `refused address ${address} (${reason}) for ${host}: webhooks reach public addresses only (WEBHOOK_ALLOW_PRIVATE=true lifts this)`,
    );
    this.name = 'RefusedAddressError';
  }
}

export interface CheckedAddress {
  address: string;
  family: 4 | 6;
}

/**
 * Resolves `host` (a name, or an IP literal as URL.hostname spells it) and checks every
 * address it has; with `allowPrivate`, checks nothing.
 * @throws RefusedAddressError naming the first refused address; the resolver's error when
 *   the name does not resolve
 */
export async function resolveChecked(
  host: string,
  allowPrivate: boolean,
): Promise<CheckedAddress[]> {
  const bare = host.replace(/^\[|\]$/g, '');
  const literal = isIP(bare);
  const addresses: CheckedAddress[] = literal
    ? [{ address: bare, family: literal as 4 | 6 }]
    : (await dnsLookup(bare, { all: true, verbatim: true })).map((a) => ({
        address: a.address,
        family: a.family as 4 | 6,
      }));
  if (!allowPrivate) {
    for (const { address } of addresses) {
      const reason = refusedAddress(address);
      if (reason) throw new RefusedAddressError(bare, address, reason);
    }
  }
  return addresses;
}

/** A `lookup` for http.request that answers with the addresses already checked, only. */
export function pinnedLookup(addresses: readonly CheckedAddress[]): LookupFunction {
  return (_hostname, options, callback) => {
    if ((options as { all?: boolean }).all) {
      (callback as (err: null, all: CheckedAddress[]) => void)(null, [...addresses]);
      return;
    }
    const first = addresses[0]!;
    callback(null, first.address, first.family);
  };
}
