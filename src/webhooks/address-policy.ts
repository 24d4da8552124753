import { isIPv4, isIPv6 } from 'node:net';

/** Why an address may not receive webhooks (SSRF guard); null means a public unicast address. */
export type BlockedRange =
  | 'invalid'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'cgnat'
  | 'multicast'
  | 'broadcast'
  | 'metadata'
  | 'documentation'
  | 'reserved';

type V4Rule = [base: string, prefix: number, range: Exclude<BlockedRange, 'invalid'>];

/** Checked in order: the first match wins, so the narrow metadata and broadcast rules come first. */
const V4_RULES: V4Rule[] = [
  ['169.254.169.254', 32, 'metadata'],
  ['255.255.255.255', 32, 'broadcast'],
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'cgnat'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.88.99.0', 24, 'reserved'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'reserved'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];

const v4ToInt = (ip: string): number => ip.split('.').reduce((n, part) => n * 256 + Number(part), 0);

const inV4 = (value: number, base: string, prefix: number): boolean => {
  const size = 2 ** (32 - prefix);
  return Math.floor(value / size) === Math.floor(v4ToInt(base) / size);
};

function classifyV4(value: number): BlockedRange | null {
  for (const [base, prefix, range] of V4_RULES) if (inV4(value, base, prefix)) return range;
  return null;
}

/** The 16 bytes of a valid IPv6 text (zone id dropped, an IPv4 tail expanded). */
export function ipv6Bytes(text: string): number[] {
  const ip = text.split('%')[0];
  const [head, tail] = ip.includes('::') ? ip.split('::') : [ip, null];
  const groups = (part: string): number[] => {
    if (part === '') return [];
    return part.split(':').flatMap((g) => {
      if (!g.includes('.')) return [parseInt(g, 16)];
      const v4 = v4ToInt(g);
      return [Math.floor(v4 / 65536), v4 % 65536];
    });
  };
  const left = groups(head);
  const right = tail === null ? [] : groups(tail);
  const words = [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  return words.flatMap((w) => [w >> 8, w & 0xff]);
}

const startsWith = (bytes: number[], prefix: number[], bits: number): boolean => {
  for (let i = 0; i * 8 < bits; i++) {
    const mask = bits - i * 8 >= 8 ? 0xff : (0xff << (8 - (bits - i * 8))) & 0xff;
    if ((bytes[i] & mask) !== (prefix[i] & mask)) return false;
  }
  return true;
};

const embeddedV4 = (bytes: number[], at: number): number =>
  ((bytes[at] << 24) >>> 0) + (bytes[at + 1] << 16) + (bytes[at + 2] << 8) + bytes[at + 3];

const METADATA_V6 = ipv6Bytes('fd00:ec2::254');

function classifyV6(bytes: number[]): BlockedRange | null {
  const zeroUntil = (n: number): boolean => bytes.slice(0, n).every((b) => b === 0);
  if (zeroUntil(16)) return 'unspecified';
  if (zeroUntil(15) && bytes[15] === 1) return 'loopback';
  // IPv4-mapped (::ffff:a.b.c.d) and NAT64 (64:ff9b::a.b.c.d) reach the IPv4 address inside
  if (zeroUntil(10) && bytes[10] === 0xff && bytes[11] === 0xff) return classifyV4(embeddedV4(bytes, 12));
  if (startsWith(bytes, ipv6Bytes('64:ff9b::'), 96)) return classifyV4(embeddedV4(bytes, 12));
  if (startsWith(bytes, ipv6Bytes('2002::'), 16)) return classifyV4(embeddedV4(bytes, 2));
  if (bytes.every((b, i) => b === METADATA_V6[i])) return 'metadata';
  if (startsWith(bytes, ipv6Bytes('fc00::'), 7)) return 'private';
  if (startsWith(bytes, ipv6Bytes('fe80::'), 10)) return 'link-local';
  if (startsWith(bytes, ipv6Bytes('fec0::'), 10)) return 'private';
  if (startsWith(bytes, ipv6Bytes('ff00::'), 8)) return 'multicast';
  if (startsWith(bytes, ipv6Bytes('2001:db8::'), 32)) return 'documentation';
  if (startsWith(bytes, ipv6Bytes('2001::'), 32)) return 'reserved';
  // only 2000::/3 is global unicast; IPv4-compatible, discard and unassigned space is not
  if (!startsWith(bytes, ipv6Bytes('2000::'), 3)) return 'reserved';
  return null;
}

/** The blocked range `ip` falls in, or null for a public unicast address. */
export function blockedRange(ip: string): BlockedRange | null {
  if (isIPv4(ip)) return classifyV4(v4ToInt(ip));
  const bare = ip.replace(/^\[(.*)\]$/, '$1');
  if (isIPv6(bare)) return classifyV6(ipv6Bytes(bare));
  return 'invalid';
}
