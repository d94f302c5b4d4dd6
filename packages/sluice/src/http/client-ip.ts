/**
 * Client addresses, shared by every adapter (as Hono's GetConnInfo): the rate-limit key of an address
 * (IPv6 grouped by subnet), CIDR sets given as options, and X-Forwarded-For / Forwarded (RFC 7239) read
 * from the right through trusted proxies only. Parsing, IPv4-mapped unwrapping and masking are core/ip.ts.
 */
import { SluiceError, show } from '../core/errors.js';
import { IpRanges, normalizeIp, parseCidr, parseIp } from '../core/ip.js';

// ipKey lives in core/ip.ts: the service (server/) keys its per-address connection bounds with it too.
export { ipKey, normalizeIp } from '../core/ip.js';

/** Names accepted in a CIDR list, as proxy-addr has them. */
const NAMED_RANGES: Readonly<Record<string, readonly string[]>> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
};

/** A set of address ranges (`10.0.0.0/8`, `::1`, `loopback`), matched after unwrapping IPv4-mapped IPv6. */
export class CidrSet {
  readonly size: number;
  private readonly ranges = new IpRanges();

  /** `field` names the option in error messages. */
  constructor(entries: readonly string[], field: string) {
    if (!Array.isArray(entries)) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `'${field}' must be an array of IP addresses or CIDR ranges, got ${show(entries)}`,
      );
    }
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i];
      if (typeof entry !== 'string') {
        throw new SluiceError(
          'ERR_SLUICE_INVALID_OPTION',
          `'${field}[${i}]' must be an IP address or CIDR range such as '10.0.0.0/8', got ${show(entry)}`,
        );
      }
      const named = NAMED_RANGES[entry];
      if (named !== undefined) for (const r of named) this.add(r, `${field}[${i}]`);
      else this.add(entry, `${field}[${i}]`);
    }
    this.size = this.ranges.size;
  }

  private add(entry: string, where: string): void {
    const bad = (why: string): never => {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `'${where}' ${why}, got ${show(entry)}; write an address ('10.0.0.1'), a range ('10.0.0.0/8', 'fd00::/8') or 'loopback', 'linklocal', 'uniquelocal'`,
      );
    };
    this.ranges.add(parseCidr(entry, bad));
  }

  /** Whether `address` (any textual form) lies in one of the ranges. */
  has(address: string): boolean {
    const ip = parseIp(address);
    return ip !== undefined && this.ranges.has(ip);
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
