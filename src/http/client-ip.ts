/**
 * Client addresses, shared by every adapter (as Hono's GetConnInfo): IP parsing, IPv4-mapped IPv6 unwrapping,
 * IPv6 subnet grouping, CIDR sets, and X-Forwarded-For / Forwarded (RFC 7239) read from the right through
 * trusted proxies only.
 *
 * IPv4-mapped addresses are recognised by their bits (::ffff:0:0/96), not by their notation, so
 * `::ffff:1.2.3.4` and `::ffff:102:304` are both 1.2.3.4. express-rate-limit once masked the mapped form to
 * /56 and so put every IPv4 client in one bucket (CVE-2026-30827); a later fix had to stop relying on notation.
 */
import { SluiceError, show } from '../core/errors.js';

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

/** Parses an IPv6 address (with `::`, an embedded dotted quad, an optional `%zone`) into eight groups. */
export function parseIPv6(input: string): Uint16Array | undefined {
  const pct = input.indexOf('%');
  const s = pct >= 0 ? input.slice(0, pct) : input;
  if (s.length < 2 || s.length > 45) return undefined;
  const halves = s.split('::');
  if (halves.length > 2) return undefined;
  const groups = (part: string): number[] | undefined => {
    if (part === '') return [];
    const out: number[] = [];
    const items = part.split(':');
    for (let k = 0; k < items.length; k++) {
      const item = items[k]!;
      if (k === items.length - 1 && item.includes('.')) {
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
  const head = groups(halves[0]!);
  const tail = halves.length === 2 ? groups(halves[1]!) : [];
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

/** The canonical text of an address (mapped IPv6 unwrapped), or undefined if it is not an IP address. */
export function normalizeIp(s: string): string | undefined {
  const ip = parseIp(s);
  if (ip === undefined) return undefined;
  return ip.v === 4 ? formatIPv4(ip.n) : formatIPv6(ip.h);
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

function maskIPv6(h: Uint16Array, bits: number): Uint16Array {
  const out = new Uint16Array(8);
  for (let i = 0; i < 8; i++) {
    const keep = Math.max(0, Math.min(16, bits - i * 16));
    out[i] = keep === 0 ? 0 : h[i]! & ((0xffff << (16 - keep)) & 0xffff);
  }
  return out;
}

/** Names accepted in a CIDR list, as proxy-addr has them. */
const NAMED_RANGES: Readonly<Record<string, readonly string[]>> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
};

interface Range4 {
  readonly v: 4;
  readonly net: number;
  readonly mask: number;
}
interface Range6 {
  readonly v: 6;
  readonly net: Uint16Array;
  readonly bits: number;
}

/** A set of address ranges (`10.0.0.0/8`, `::1`, `loopback`), matched after unwrapping IPv4-mapped IPv6. */
export class CidrSet {
  readonly size: number;
  private readonly v4: Range4[] = [];
  private readonly v6: Range6[] = [];

  /** `field` names the option in error messages. */
  constructor(entries: readonly string[], field: string) {
    if (!Array.isArray(entries)) {
      throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `'${field}' must be an array of IP addresses or CIDR ranges, got ${show(entries)}`);
    }
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i];
      if (typeof entry !== 'string') {
        throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `'${field}[${i}]' must be an IP address or CIDR range such as '10.0.0.0/8', got ${show(entry)}`);
      }
      const named = NAMED_RANGES[entry];
      if (named !== undefined) for (const r of named) this.add(r, `${field}[${i}]`);
      else this.add(entry, `${field}[${i}]`);
    }
    this.size = this.v4.length + this.v6.length;
  }

  private add(entry: string, where: string): void {
    const bad = (why: string): never => {
      throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `'${where}' ${why}, got ${show(entry)}; write an address ('10.0.0.1'), a range ('10.0.0.0/8', 'fd00::/8') or 'loopback', 'linklocal', 'uniquelocal'`);
    };
    const slash = entry.indexOf('/');
    const ip = parseIp(slash < 0 ? entry : entry.slice(0, slash));
    if (ip === undefined) bad('is not an IP address');
    const max = ip!.v === 4 ? 32 : 128;
    let bits = max;
    if (slash >= 0) {
      const text = entry.slice(slash + 1);
      bits = /^\d{1,3}$/.test(text) ? Number(text) : NaN;
      // A mapped IPv6 range (::ffff:10.0.0.0/104) is an IPv4 range of 96 fewer bits.
      if (ip!.v === 4 && entry.includes(':')) bits -= 96;
      if (!(bits >= 0 && bits <= max)) bad(`has a prefix length outside 0-${max}`);
    }
    if (ip!.v === 4) {
      const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
      this.v4.push({ v: 4, net: (ip!.n & mask) >>> 0, mask });
    } else {
      this.v6.push({ v: 6, net: maskIPv6(ip!.h, bits), bits });
    }
  }

  /** Whether `address` (any textual form) lies in one of the ranges. */
  has(address: string): boolean {
    const ip = parseIp(address);
    if (ip === undefined) return false;
    if (ip.v === 4) {
      for (const r of this.v4) if (((ip.n & r.mask) >>> 0) === r.net) return true;
      return false;
    }
    for (const r of this.v6) {
      const m = maskIPv6(ip.h, r.bits);
      let same = true;
      for (let i = 0; i < 8 && same; i++) same = m[i] === r.net[i];
      if (same) return true;
    }
    return false;
  }
}

/** Splits an X-Forwarded-For value into its hops, left to right. */
export function xForwardedForHops(value: string): string[] {
  return value.split(',').map((s) => s.trim());
}

/** The `for=` values of a Forwarded header (RFC 7239), left to right; '' for an element without one. */
export function forwardedHops(value: string): string[] {
  const hops: string[] = [];
  let current = '';
  let i = 0;
  let element: string | undefined;
  const endElement = () => {
    hops.push(element ?? '');
    element = undefined;
  };
  while (i < value.length) {
    // one pair: name=value, the value a token or a quoted-string
    while (i < value.length && (value[i] === ' ' || value[i] === '\t' || value[i] === ';')) i++;
    const eq = value.indexOf('=', i);
    if (eq < 0) break;
    const name = value.slice(i, eq).trim().toLowerCase();
    i = eq + 1;
    current = '';
    if (value[i] === '"') {
      i++;
      while (i < value.length && value[i] !== '"') {
        if (value[i] === '\\') i++;
        current += value[i] ?? '';
        i++;
      }
      i++;
    } else {
      while (i < value.length && value[i] !== ';' && value[i] !== ',') current += value[i++];
      current = current.trim();
    }
    if (name === 'for' && element === undefined) element = current;
    while (i < value.length && (value[i] === ' ' || value[i] === '\t')) i++;
    if (value[i] === ',') {
      endElement();
      i++;
    } else if (value[i] === ';') i++;
  }
  endElement();
  return hops;
}

/** The address in one hop (`1.2.3.4`, `1.2.3.4:80`, `[2001:db8::1]:443`, `2001:db8::1`), or undefined. */
export function hopAddress(hop: string): string | undefined {
  let s = hop;
  if (s.startsWith('[')) {
    const end = s.indexOf(']');
    if (end < 0) return undefined;
    s = s.slice(1, end);
  } else if (s.indexOf(':') > 0 && s.indexOf(':') === s.lastIndexOf(':') && s.includes('.')) {
    s = s.slice(0, s.indexOf(':')); // IPv4 with a port
  }
  return normalizeIp(s);
}

/**
 * The client address, reading the forwarding chain from the right: the socket peer first; while the current
 * address is a trusted proxy, step to the hop it reports. The first untrusted address is the client; if every
 * hop is trusted, the leftmost is. A hop that is not an address (`unknown`, `_hidden`, garbage) ends the walk
 * at the last address that was one, so a header never yields more than the trusted proxies vouch for.
 */
export function resolveClient(remote: string, hops: readonly string[], trusted: CidrSet): string {
  let address = remote;
  if (!trusted.has(address)) return address;
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hopAddress(hops[i]!);
    if (hop === undefined) return address;
    address = hop;
    if (!trusted.has(address)) return address;
  }
  return address;
}
