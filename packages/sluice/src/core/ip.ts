/**
 * IP addresses, for the HTTP client keys (http/client-ip.ts) and the guard alike: strict IPv4 and IPv6
 * parsing, IPv4-mapped IPv6 unwrapped, masks, canonical text, and CIDR ranges.
 *
 * IPv4-mapped addresses are recognised by their bits (::ffff:0:0/96), not by their notation, so
 * `::ffff:1.2.3.4` and `::ffff:102:304` are both 1.2.3.4. express-rate-limit once masked the mapped form to
 * /56 and so put every IPv4 client in one bucket (CVE-2026-30827); a later fix had to stop relying on notation.
 * Written here rather than taken from node:net: keys and tags need the address's bits, and node:net's
 * BlockList cannot mask an address or say which rule matched.
 */

/** A parsed address: IPv4 as one 32-bit number, IPv6 as eight 16-bit groups. */
export type ParsedIp = { readonly v: 4; readonly n: number } | { readonly v: 6; readonly h: Uint16Array };

/** Parses a dotted quad strictly: four decimal octets, no leading zeros (they read as octal elsewhere). */
export function parseIPv4(s: string): number | undefined {
  let n = 0;
  let parts = 0;
  let i = 0;
  while (i <= s.length) {
    let j = i;
    let octet = 0;
    while (j < s.length && s.charCodeAt(j) >= 48 && s.charCodeAt(j) <= 57) octet = octet * 10 + s.charCodeAt(j++) - 48;
    const len = j - i;
    if (len === 0 || len > 3 || octet > 255 || (len > 1 && s.charCodeAt(i) === 48)) return undefined;
    n = n * 256 + octet;
    parts++;
    if (j === s.length) break;
    if (s.charCodeAt(j) !== 46 || parts === 4) return undefined;
    i = j + 1;
  }
  return parts === 4 ? n : undefined;
}

/**
 * Parses an IPv6 address (with `::`, an optional `%zone`) into eight groups. A dotted quad may only stand
 * for the last 32 bits (RFC 4291 2.2), so `1.2.3.4::1` is no address.
 */
export function parseIPv6(input: string): Uint16Array | undefined {
  const pct = input.indexOf('%');
  const s = pct >= 0 ? input.slice(0, pct) : input; // fe80::1%eth0: the zone names an interface, not a host
  if (s.length < 2 || s.length > 45) return undefined;
  const halves = s.split('::');
  if (halves.length > 2) return undefined;
  const groups = (part: string, dottedLast: boolean): number[] | undefined => {
    if (part === '') return [];
    const out: number[] = [];
    const items = part.split(':');
    for (let k = 0; k < items.length; k++) {
      const item = items[k]!;
      if (dottedLast && k === items.length - 1 && item.includes('.')) {
        const v4 = parseIPv4(item);
        if (v4 === undefined) return undefined;
        out.push(v4 >>> 16, v4 & 0xffff);
      } else {
        if (!/^[0-9a-fA-F]{1,4}$/.test(item)) return undefined;
        out.push(parseInt(item, 16));
      }
    }
    return out;
  };
  const head = groups(halves[0]!, halves.length === 1);
  const tail = halves.length === 2 ? groups(halves[1]!, true) : [];
  if (head === undefined || tail === undefined) return undefined;
  const h = new Uint16Array(8);
  if (halves.length === 1) {
    if (head.length !== 8) return undefined;
    h.set(head);
  } else {
    if (head.length + tail.length > 7) return undefined;
    h.set(head);
    h.set(tail, 8 - tail.length);
  }
  return h;
}

/** Parses IPv4 or IPv6, unwrapping IPv4-mapped IPv6 (::ffff:0:0/96) to IPv4. */
export function parseIp(s: string): ParsedIp | undefined {
  if (!s.includes(':')) {
    const n = parseIPv4(s);
    return n === undefined ? undefined : { v: 4, n };
  }
  const h = parseIPv6(s);
  if (h === undefined) return undefined;
  if (isMapped(h)) return { v: 4, n: h[6]! * 65536 + h[7]! };
  return { v: 6, h };
}

function isMapped(h: Uint16Array): boolean {
  return h[0] === 0 && h[1] === 0 && h[2] === 0 && h[3] === 0 && h[4] === 0 && h[5] === 0xffff;
}

export function formatIPv4(n: number): string {
  return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

/** RFC 5952 text: lower-case, no leading zeros, the longest run (first on ties) of two or more zero groups as `::`. */
export function formatIPv6(h: Uint16Array): string {
  let bestAt = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (h[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && h[j] === 0) j++;
    if (j - i > bestLen) {
      bestAt = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (from: number, to: number) => Array.from(h.subarray(from, to), (g) => g.toString(16)).join(':');
  if (bestAt < 0) return hex(0, 8);
  return `${hex(0, bestAt)}::${hex(bestAt + bestLen, 8)}`;
}

/** All eight groups in lower-case hex, nothing compressed (`fe80:0:0:0:0:0:0:1`): the guard's tag text. */
export function formatIPv6Groups(h: Uint16Array): string {
  return `${h[0]!.toString(16)}:${h[1]!.toString(16)}:${h[2]!.toString(16)}:${h[3]!.toString(16)}:${h[4]!.toString(16)}:${h[5]!.toString(16)}:${h[6]!.toString(16)}:${h[7]!.toString(16)}`;
}

/** The canonical text of an address (mapped IPv6 unwrapped), or undefined if it is not an IP address. */
export function normalizeIp(s: string): string | undefined {
  const ip = parseIp(s);
  if (ip === undefined) return undefined;
  return ip.v === 4 ? formatIPv4(ip.n) : formatIPv6(ip.h);
}

/** The IPv4 address with every bit after the first `bits` cleared. */
export function maskIPv4(n: number, bits: number): number {
  return bits <= 0 ? 0 : (n & ((0xffffffff << (32 - Math.min(32, bits))) >>> 0)) >>> 0;
}

/** The IPv6 groups with every bit after the first `bits` cleared. */
export function maskIPv6(h: Uint16Array, bits: number): Uint16Array {
  const out = new Uint16Array(8);
  for (let i = 0; i < 8; i++) {
    const keep = Math.max(0, Math.min(16, bits - i * 16));
    out[i] = keep === 0 ? 0 : h[i]! & ((0xffff << (16 - keep)) & 0xffff);
  }
  return out;
}

/**
 * The rate-limit key of a client address: IPv4 as itself; IPv6 as its `/subnet` network (default /64, the
 * size one subscriber is usually given), e.g. `2001:db8:1:2::/64`. `subnet: false` keys each IPv6 address.
 * The address must already be valid; anything else is returned unchanged.
 *
 * @example ipKey('::ffff:203.0.113.9') // '203.0.113.9'
 * @example ipKey('2001:db8:1:2:3:4:5:6') // '2001:db8:1:2::/64'
 */
export function ipKey(address: string, subnet: number | false = 64): string {
  // Node's own socket addresses: dotted quads, and the mapped form of them on dual-stack servers.
  if (!address.includes(':')) return address;
  if (address.startsWith('::ffff:') && address.includes('.', 7)) return address.slice(7);
  const ip = parseIp(address);
  if (ip === undefined) return address;
  if (ip.v === 4) return formatIPv4(ip.n);
  if (subnet === false || subnet === 128) return formatIPv6(ip.h);
  return `${formatIPv6(maskIPv6(ip.h, subnet))}/${subnet}`;
}

/** A CIDR range of one family; a mapped IPv6 range (::ffff:10.0.0.0/104) is the IPv4 range of 96 fewer bits. */
export type IpRange =
  | { readonly v: 4; readonly net: number; readonly bits: number }
  | { readonly v: 6; readonly net: Uint16Array; readonly bits: number };

/**
 * Parses 'a.b.c.d/n', 'x::/n' or a bare address (a /32 or /128). What is wrong goes to `fail` as a phrase
 * ('is not an IP address', 'has a prefix length outside 0-32'), so each caller words its own error.
 */
export function parseCidr(text: string, fail: (problem: string) => never): IpRange {
  const slash = text.indexOf('/');
  const ip = parseIp(slash < 0 ? text : text.slice(0, slash)) ?? fail('is not an IP address');
  const max = ip.v === 4 ? 32 : 128;
  let bits = max;
  if (slash >= 0) {
    const prefix = text.slice(slash + 1);
    bits = /^\d{1,3}$/.test(prefix) ? Number(prefix) : NaN;
    if (ip.v === 4 && text.includes(':')) bits -= 96;
    if (!(bits >= 0 && bits <= max)) fail(`has a prefix length outside 0-${max}`);
  }
  return ip.v === 4 ? { v: 4, net: maskIPv4(ip.n, bits), bits } : { v: 6, net: maskIPv6(ip.h, bits), bits };
}

/**
 * A set of CIDR ranges. An address is looked up with one mask and one hash probe per distinct prefix
 * length of its family, so thousands of ranges (hosting providers, deny lists) stay cheap; no lookup
 * allocates. IPv4 (mapped IPv6 included) only matches IPv4 ranges, IPv6 only IPv6 ranges.
 */
export class IpRanges {
  /** Ranges added, duplicates included. */
  size = 0;
  private readonly v4Bits: number[] = [];
  private readonly v4Nets: Set<number>[] = [];
  private readonly v6Bits: number[] = [];
  /** Per prefix length, the IPv6 networks by their first 48 bits (a number: 64 would not fit a double). */
  private readonly v6Nets: Map<number, Uint16Array[]>[] = [];

  add(range: IpRange): void {
    this.size++;
    if (range.v === 4) {
      let at = this.v4Bits.indexOf(range.bits);
      if (at < 0) at = this.v4Bits.push(range.bits) - 1;
      (this.v4Nets[at] ??= new Set()).add(range.net);
    } else {
      let at = this.v6Bits.indexOf(range.bits);
      if (at < 0) at = this.v6Bits.push(range.bits) - 1;
      const byHead = (this.v6Nets[at] ??= new Map());
      const head = head48(range.net, range.bits);
      const nets = byHead.get(head);
      if (nets === undefined) byHead.set(head, [range.net]);
      else nets.push(range.net);
    }
  }

  has(ip: ParsedIp): boolean {
    if (ip.v === 4) {
      for (let i = 0; i < this.v4Bits.length; i++)
        if (this.v4Nets[i]!.has(maskIPv4(ip.n, this.v4Bits[i]!))) return true;
      return false;
    }
    const h = ip.h;
    for (let i = 0; i < this.v6Bits.length; i++) {
      const bits = this.v6Bits[i]!;
      const nets = this.v6Nets[i]!.get(head48(h, bits));
      if (nets === undefined) continue;
      for (const net of nets) {
        let same = true;
        for (let g = 3; g < 8 && same; g++) same = maskedGroup(h, g, bits) === net[g];
        if (same) return true;
      }
    }
    return false;
  }
}

/** Group `i` of an IPv6 address under a /bits mask. */
function maskedGroup(h: Uint16Array, i: number, bits: number): number {
  const keep = bits - i * 16;
  return keep >= 16 ? h[i]! : keep <= 0 ? 0 : h[i]! & ((0xffff << (16 - keep)) & 0xffff);
}

/** The first three groups under a /bits mask, as one 48-bit number. */
function head48(h: Uint16Array, bits: number): number {
  return maskedGroup(h, 0, bits) * 4294967296 + maskedGroup(h, 1, bits) * 65536 + maskedGroup(h, 2, bits);
}
