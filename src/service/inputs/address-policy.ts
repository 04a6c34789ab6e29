/**
 * Which network addresses a remote image fetch may connect to. Only globally routable unicast
 * addresses pass: loopback, private, link-local, CGNAT, multicast, reserved, documentation,
 * benchmarking, 0.0.0.0/8, cloud-metadata and every IPv6 form that embeds an IPv4 address
 * (mapped, compatible, NAT64, 6to4, Teredo) are refused.
 */
import { BlockList, isIP, isIPv4 } from 'node:net';

const BLOCKED_V4: Array<[string, number]> = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // CGNAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, incl. 169.254.169.254 metadata
  ['172.16.0.0', 12],
  ['192.0.0.0', 24], // IETF protocol assignments (incl. 192.0.0.192 Oracle metadata)
  ['192.0.2.0', 24], // TEST-NET-1
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // TEST-NET-2
  ['203.0.113.0', 24], // TEST-NET-3
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved + broadcast
  ['100.100.100.200', 32], // Alibaba metadata (inside CGNAT anyway)
];

const BLOCKED_V6: Array<[string, number]> = [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['::', 96], // IPv4-compatible (deprecated)
  ['::ffff:0:0', 96], // IPv4-mapped
  ['::ffff:0:0:0', 96], // IPv4-translated
  ['64:ff9b::', 96], // NAT64
  ['64:ff9b:1::', 48], // local NAT64
  ['100::', 64], // discard-only
  ['2001::', 32], // Teredo
  ['2001:2::', 48], // benchmarking
  ['2001:db8::', 32], // documentation
  ['2001:10::', 28], // ORCHID
  ['2001:20::', 28], // ORCHIDv2
  ['2002::', 16], // 6to4
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
  ['fd00:ec2::254', 128], // AWS IMDS over IPv6 (inside fc00::/7 anyway)
];

// Two lists: Node's BlockList matches IPv4 addresses against IPv6 rules through their mapped form,
// so a single list with ::/96 would refuse every IPv4 address.
const blockV4 = new BlockList();
const blockV6 = new BlockList();
for (const [a, p] of BLOCKED_V4) blockV4.addSubnet(a, p, 'ipv4');
for (const [a, p] of BLOCKED_V6) blockV6.addSubnet(a, p, 'ipv6');

/** Strips IPv6 brackets and a zone id. */
function bare(address: string): string {
  let a = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const zone = a.indexOf('%');
  if (zone >= 0) a = a.slice(0, zone);
  return a;
}

/** Returns why `address` (an IP literal) may not be connected to, or null when it is public. */
export function addressRefusal(address: string): string | null {
  const a = bare(address);
  const kind = isIP(a);
  if (kind === 0) return 'not an IP address';
  if (address.includes('%')) return 'scoped IPv6 address';
  if (kind === 4) return blockV4.check(a, 'ipv4') ? 'non-public IPv4 address' : null;
  // Node's BlockList does not look inside IPv4-mapped IPv6 for IPv4 rules, but the /96 rules above
  // refuse every embedded-IPv4 form outright.
  if (blockV6.check(a, 'ipv6')) return 'non-public IPv6 address';
  // Only global unicast (2000::/3) is accepted.
  const first = parseInt(a.split(':')[0] || '0', 16);
  if ((first & 0xe000) !== 0x2000) return 'non-global IPv6 address';
  return null;
}

/** Hostnames refused before any lookup. */
export function hostnameRefusal(hostname: string): string | null {
  const h = hostname.toLowerCase().replace(/\.+$/, '');
  if (h === '') return 'empty host';
  if (h === 'localhost' || h.endsWith('.localhost')) return 'localhost';
  if (h.endsWith('.local') || h === 'local') return 'mDNS (.local) host';
  if (h.endsWith('.internal') || h === 'metadata' || h === 'metadata.google.internal') return 'internal/metadata host';
  if (!h.includes('.')) return 'single-label host';
  if (isIPv4(h)) return addressRefusal(h);
  return null;
}
