import { lookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';

/**
 * The reminder target guard. An address is a permitted target only if the IANA IPv4 and IPv6
 * Special-Purpose Address Registries mark it globally reachable: the most specific registry entry
 * that contains it decides, and an address in no entry is reachable, except IPv4 multicast (its own
 * registry, never a webhook endpoint) and IPv6 outside 2000::/3 (not allocated as global unicast:
 * this refuses the deprecated IPv4-compatible ::a.b.c.d form too). Entries the registry leaves to the
 * embedded address (6to4, Teredo) and the NAT64 well-known prefix are decided by the IPv4 address
 * inside them, so no spelling reaches a private IPv4 address through IPv6. docs/limits.md lists them.
 */
type Reachability = boolean | 'embedded';

// IANA IPv4 Special-Purpose Address Registry: block, "Globally Reachable".
const IPV4_REGISTRY: [string, Reachability][] = [
  ['0.0.0.0/8', false],
  ['0.0.0.0/32', false],
  ['10.0.0.0/8', false],
  ['100.64.0.0/10', false],
  ['127.0.0.0/8', false],
  ['169.254.0.0/16', false],
  ['172.16.0.0/12', false],
  ['192.0.0.0/24', false],
  ['192.0.0.0/29', false],
  ['192.0.0.8/32', false],
  ['192.0.0.9/32', true],
  ['192.0.0.10/32', true],
  ['192.0.0.170/32', false],
  ['192.0.0.171/32', false],
  ['192.0.2.0/24', false],
  ['192.31.196.0/24', true],
  ['192.52.193.0/24', true],
  // Deprecated 6to4 relay anycast: the registry no longer marks it reachable.
  ['192.88.99.0/24', false],
  ['192.168.0.0/16', false],
  ['192.175.48.0/24', true],
  ['198.18.0.0/15', false],
  ['198.51.100.0/24', false],
  ['203.0.113.0/24', false],
  ['240.0.0.0/4', false],
  ['255.255.255.255/32', false],
  // Not in the special-purpose registry but never a unicast endpoint: multicast.
  ['224.0.0.0/4', false],
];

// IANA IPv6 Special-Purpose Address Registry: block, "Globally Reachable" ('embedded': N/A, decided
// by the IPv4 address inside, or True for a translation prefix that reaches any IPv4 address).
const IPV6_REGISTRY: [string, Reachability][] = [
  ['::1/128', false],
  ['::/128', false],
  ['::ffff:0:0/96', false],
  ['64:ff9b::/96', 'embedded'],
  ['64:ff9b:1::/48', false],
  ['100::/64', false],
  ['100:0:0:1::/64', false],
  ['2001::/23', false],
  ['2001::/32', 'embedded'],
  ['2001:1::1/128', true],
  ['2001:1::2/128', true],
  ['2001:1::3/128', true],
  ['2001:2::/48', false],
  ['2001:3::/32', true],
  ['2001:4:112::/48', true],
  // Deprecated ORCHID: the registry no longer marks it reachable.
  ['2001:10::/28', false],
  ['2001:20::/28', true],
  ['2001:30::/28', true],
  ['2001:db8::/32', false],
  ['2002::/16', 'embedded'],
  ['2620:4f:8000::/48', true],
  ['3fff::/20', false],
  ['5f00::/16', false],
  ['fc00::/7', false],
  ['fe80::/10', false],
];

type Entry<T> = { range: [T, number]; reachable: Reachability };

/** Most specific first, so the first match is the entry that decides. */
function compile<T extends ipaddr.IPv4 | ipaddr.IPv6>(
  registry: [string, Reachability][],
  parse: (cidr: string) => [T, number],
): Entry<T>[] {
  return registry
    .map(([cidr, reachable]) => ({ range: parse(cidr), reachable }))
    .sort((a, b) => b.range[1] - a.range[1]);
}

const IPV4_ENTRIES = compile(IPV4_REGISTRY, (cidr) => ipaddr.IPv4.parseCIDR(cidr));
const IPV6_ENTRIES = compile(IPV6_REGISTRY, (cidr) => ipaddr.IPv6.parseCIDR(cidr));
const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');
const TEREDO = ipaddr.IPv6.parseCIDR('2001::/32');
const SIX_TO_FOUR = ipaddr.IPv6.parseCIDR('2002::/16');

function ipv4FromParts(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

/** The IPv4 addresses an IPv4-embedding IPv6 address leads to (RFC 6052, RFC 3056, RFC 4380). */
function embeddedIPv4(address: ipaddr.IPv6): ipaddr.IPv4[] {
  const parts = address.parts;
  if (address.match(SIX_TO_FOUR)) return [ipv4FromParts(parts[1]!, parts[2]!)];
  if (address.match(TEREDO)) {
    // The Teredo server, and the client's address stored inverted in the last 32 bits.
    return [ipv4FromParts(parts[2]!, parts[3]!), ipv4FromParts(parts[6]! ^ 0xffff, parts[7]! ^ 0xffff)];
  }
  return [ipv4FromParts(parts[6]!, parts[7]!)];
}

function isReachableIPv4(address: ipaddr.IPv4): boolean {
  const entry = IPV4_ENTRIES.find((candidate) => address.match(candidate.range));
  return entry ? entry.reachable === true : true;
}

function isReachableIPv6(address: ipaddr.IPv6): boolean {
  const entry = IPV6_ENTRIES.find((candidate) => address.match(candidate.range));
  if (entry?.reachable === 'embedded') return embeddedIPv4(address).every(isReachableIPv4);
  if (entry) return entry.reachable;
  return address.match(GLOBAL_UNICAST);
}

/**
 * Parses an address in every spelling a URL parser or resolver accepts (decimal, octal, hex and
 * short IPv4 forms; IPv6 with brackets, embedded IPv4 or a zone); undefined when it is not one.
 */
export function parseAddress(text: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  const host = text.replace(/^\[|\]$/g, '').replace(/\.$/, '');
  return ipaddr.isValid(host) ? ipaddr.parse(host) : undefined;
}

/** True when the registries mark the address globally reachable; false for anything else, non-addresses included. */
export function isPublicAddress(text: string): boolean {
  const address = parseAddress(text);
  if (!address) return false;
  return address.kind() === 'ipv4'
    ? isReachableIPv4(address as ipaddr.IPv4)
    : isReachableIPv6(address as ipaddr.IPv6);
}

export class TargetRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TargetRefusedError';
  }
}

/**
 * Refuses a URL whose host is, or resolves to, an address that is not globally reachable: every
 * resolved address is checked, not just the literal. Delivery repeats the check on the addresses it
 * actually connects to (see lib/http.ts), so a name that changes its answer after this check is
 * still refused.
 */
export async function assertPublicTarget(url: URL): Promise<void> {
  const host = url.hostname;
  const addresses = parseAddress(host)
    ? [host]
    : await lookup(host, { all: true, verbatim: true }).then(
        (found) => found.map((entry) => entry.address),
        () => {
          throw new TargetRefusedError('the host does not resolve');
        },
      );
  if (!addresses.length || !addresses.every(isPublicAddress)) {
    throw new TargetRefusedError('the host is a private, loopback, reserved or special-purpose address');
  }
}
