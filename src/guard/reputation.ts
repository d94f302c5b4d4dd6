/**
 * IP reputation from configured CIDR lists: an allow list (skips per-source throttles and signals), a deny
 * list (always blocked) and hosting-provider ranges (raise risk). Lookups cost one mask and one Set probe
 * per distinct prefix length in a list, so thousands of provider ranges stay cheap.
 */
import { hex } from '../runtime.js';
import { maskIp, parseCidr, type IpAddress } from './ip.js';

class CidrSet {
  /** Per prefix length present (in 128-bit terms), the masked networks as hex. */
  private readonly byPrefix = new Map<number, Set<string>>();

  constructor(ranges: readonly string[], field: string) {
    ranges.forEach((text, i) => {
      const c = parseCidr(text, `Guard '${field}[${i}]'`);
      const bits = c.v4 ? 96 + c.prefix : c.prefix;
      let set = this.byPrefix.get(bits);
      if (set === undefined) this.byPrefix.set(bits, (set = new Set()));
      set.add(hex(c.network));
    });
  }

  get empty(): boolean {
    return this.byPrefix.size === 0;
  }

  has(ip: IpAddress): boolean {
    for (const [bits, set] of this.byPrefix) {
      // A v4 rule (bits >= 96 with the ::ffff: prefix in its network) cannot match a v6 address, and the
      // reverse: the masked bytes then differ in the ::ffff: part, so no family check is needed.
      const masked = maskIp({ bytes: ip.bytes, v4: false }, bits);
      if (set.has(hex(masked))) return true;
    }
    return false;
  }
}

export interface IpStanding {
  readonly allowed: boolean;
  readonly denied: boolean;
  readonly hosting: boolean;
}

/** The standing of every address when no list is configured (the default): one frozen object, not one per call. */
const NEUTRAL: IpStanding = Object.freeze({ allowed: false, denied: false, hosting: false });

export class Reputation {
  private readonly allow: CidrSet;
  private readonly deny: CidrSet;
  private readonly hosting: CidrSet;

  constructor(allowList: readonly string[], denyList: readonly string[], hostingRanges: readonly string[]) {
    this.allow = new CidrSet(allowList, 'allowList');
    this.deny = new CidrSet(denyList, 'denyList');
    this.hosting = new CidrSet(hostingRanges, 'hostingRanges');
  }

  /** The address's standing. A deny rule wins over an allow rule covering the same address. */
  classify(ip: IpAddress): IpStanding {
    if (this.allow.empty && this.deny.empty && this.hosting.empty) return NEUTRAL;
    const denied = !this.deny.empty && this.deny.has(ip);
    return {
      denied,
      allowed: !denied && !this.allow.empty && this.allow.has(ip),
      hosting: !this.hosting.empty && this.hosting.has(ip),
    };
  }
}
