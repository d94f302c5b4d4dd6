/**
 * IP addresses for the guard: parse IPv4 and IPv6 text into 16 bytes, unwrap IPv4-mapped IPv6, mask to a
 * subnet, and match CIDR lists. Written here rather than taken from node:net because the guard needs the
 * bytes (to mask and hash them), and node:net's BlockList cannot say which rule matched.
 */
import { SluiceError, show } from '../core/errors.js';

/** An address as 16 bytes; IPv4 sits in the IPv4-mapped form ::ffff:a.b.c.d, so both families share code. */
export interface IpAddress {
  readonly bytes: Uint8Array;
  readonly v4: boolean;
}

function parseV4(text: string, out: Uint8Array, at: number): boolean {
  // Four parts of one to three ASCII digits joined by dots (what /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/
  // matches), scanned by hand: the guard parses an address per call, and the regex's match array and
  // four Number() calls cost more than the scan.
  let part = 0;
  let value = 0;
  let digits = 0;
  let leadingZero = false;
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 0x2e; // the end closes the last part like a dot
    if (c === 0x2e) {
      if (digits === 0 || part > 3) return false;
      // A leading zero is ambiguous (octal in inet_aton), so reject it rather than guess.
      if (digits > 1 && leadingZero) return false;
      if (value > 255) return false;
      out[at + part] = value;
      part++;
      value = 0;
      digits = 0;
    } else if (c >= 0x30 && c <= 0x39) {
      if (digits === 0) leadingZero = c === 0x30;
      if (++digits > 3) return false;
      value = value * 10 + (c - 0x30);
    } else return false;
  }
  return part === 4;
}

function parseV6(text: string, out: Uint8Array): boolean {
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone); // fe80::1%eth0: the zone names an interface, not a host
  const halves = text.split('::');
  if (halves.length > 2) return false;
  const groups = (s: string) => (s === '' ? [] : s.split(':'));
  const head = groups(halves[0]!);
  const tail = halves.length === 2 ? groups(halves[1]!) : [];
  const words: number[] = [];
  const tailWords: number[] = [];
  const fill = (parts: string[], into: number[], allowV4Last: boolean): boolean => {
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i]!;
      if (allowV4Last && i === parts.length - 1 && p.includes('.')) {
        const b = new Uint8Array(4);
        if (!parseV4(p, b, 0)) return false;
        into.push((b[0]! << 8) | b[1]!, (b[2]! << 8) | b[3]!);
      } else {
        if (!/^[0-9a-fA-F]{1,4}$/.test(p)) return false;
        into.push(parseInt(p, 16));
      }
    }
    return true;
  };
  if (!fill(head, words, halves.length === 1)) return false;
  if (!fill(tail, tailWords, true)) return false;
  const total = words.length + tailWords.length;
  if (halves.length === 1 ? total !== 8 : total > 7) return false;
  const all = [...words, ...new Array<number>(8 - total).fill(0), ...tailWords];
  for (let i = 0; i < 8; i++) {
    out[2 * i] = all[i]! >> 8;
    out[2 * i + 1] = all[i]! & 0xff;
  }
  return true;
}

function isMappedV4(b: Uint8Array): boolean {
  for (let i = 0; i < 10; i++) if (b[i] !== 0) return false;
  return b[10] === 0xff && b[11] === 0xff;
}

/** Parses an address, or returns undefined. `::ffff:a.b.c.d` is IPv4, so one host never gets two keys. */
export function tryParseIp(text: string): IpAddress | undefined {
  if (typeof text !== 'string' || text.length === 0 || text.length > 64) return undefined;
  const bytes = new Uint8Array(16);
  if (parseV4(text, bytes, 12)) {
    bytes[10] = 0xff;
    bytes[11] = 0xff;
    return { bytes, v4: true };
  }
  const inner = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (!inner.includes(':') || !parseV6(inner, bytes)) return undefined;
  return { bytes, v4: isMappedV4(bytes) };
}

/** Parses `field` or throws ERR_SLUICE_INVALID_IP naming it. */
export function parseIp(text: unknown, field: string): IpAddress {
  const ip = typeof text === 'string' ? tryParseIp(text) : undefined;
  if (ip === undefined) {
    throw new SluiceError('ERR_SLUICE_INVALID_IP', `${field} must be an IPv4 or IPv6 address, got ${show(text)}`);
  }
  return ip;
}

/** The address with every bit after the first `prefix` bits of its own family cleared. */
export function maskIp(ip: IpAddress, prefix: number): Uint8Array {
  const bits = ip.v4 ? 96 + prefix : prefix;
  const out = new Uint8Array(16);
  for (let i = 0; i < 16; i++) {
    const keep = Math.max(0, Math.min(8, bits - 8 * i));
    out[i] = ip.bytes[i]! & ((0xff00 >> keep) & 0xff);
  }
  return out;
}

/** `ipText(maskIp(ip, prefix))`, for IPv4 without the intermediate array (the guard tags a subnet per call). */
export function maskedText(ip: IpAddress, prefix: number): string {
  if (!ip.v4) return ipText(maskIp(ip, prefix));
  const b = ip.bytes;
  return `${b[12]! & v4Mask(prefix, 0)}.${b[13]! & v4Mask(prefix, 1)}.${b[14]! & v4Mask(prefix, 2)}.${b[15]! & v4Mask(prefix, 3)}`;
}

/** The mask of byte `i` (0–3) of an IPv4 address under a /prefix. */
export function v4Mask(prefix: number, i: number): number {
  return (0xff00 >> Math.max(0, Math.min(8, prefix - 8 * i))) & 0xff;
}

/** Canonical text: dotted quad for IPv4, eight hex groups for IPv6 (only ever hashed, never stored). */
export function ipText(bytes: Uint8Array): string {
  if (isMappedV4(bytes)) return `${bytes[12]}.${bytes[13]}.${bytes[14]}.${bytes[15]}`;
  const words: string[] = [];
  for (let i = 0; i < 8; i++) words.push(((bytes[2 * i]! << 8) | bytes[2 * i + 1]!).toString(16));
  return words.join(':');
}

/** One CIDR rule, e.g. 203.0.113.0/24 or 2001:db8::/32. */
export interface Cidr {
  readonly text: string;
  readonly v4: boolean;
  readonly prefix: number;
  readonly network: Uint8Array;
}

/** Parses 'a.b.c.d/n', 'x::/n' or a bare address (a /32 or /128), or throws naming `field`. */
export function parseCidr(text: unknown, field: string): Cidr {
  const fail = (): never => {
    throw new SluiceError('ERR_SLUICE_INVALID_IP', `${field} must be a CIDR range such as '203.0.113.0/24' or '2001:db8::/32', got ${show(text)}`);
  };
  if (typeof text !== 'string') return fail();
  const slash = text.indexOf('/');
  const ip = tryParseIp(slash < 0 ? text : text.slice(0, slash)) ?? fail();
  const max = ip.v4 ? 32 : 128;
  let prefix = max;
  if (slash >= 0) {
    const p = text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(p) || Number(p) > max) fail();
    prefix = Number(p);
  }
  return { text, v4: ip.v4, prefix, network: maskIp(ip, prefix) };
}

/** Whether `ip` lies in `cidr`. */
export function cidrContains(cidr: Cidr, ip: IpAddress): boolean {
  if (cidr.v4 !== ip.v4) return false;
  const masked = maskIp(ip, cidr.prefix);
  for (let i = 0; i < 16; i++) if (masked[i] !== cidr.network[i]) return false;
  return true;
}
