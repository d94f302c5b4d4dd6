/**
 * IP reputation from configured CIDR lists: an allow list (skips per-source throttles and signals), a deny
 * list (always blocked) and hosting-provider ranges (raise risk). Lookups cost one mask and one Set probe
 * per distinct prefix length in a list, so thousands of provider ranges stay cheap.
 */
import { IpRanges, parseCidr, type ParsedIp, show, SluiceError } from 'sluice/kit';

function ranges(list: readonly string[], field: string): IpRanges {
  const set = new IpRanges();
  list.forEach((text, i) => {
    const fail = (): never => {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_IP',
        `Guard '${field}[${i}]' must be a CIDR range such as '203.0.113.0/24' or '2001:db8::/32', got ${show(text)}`,
      );
    };
    set.add(typeof text === 'string' ? parseCidr(text, fail) : fail());
  });
  return set;
}

export interface IpStanding {
  readonly allowed: boolean;
  readonly denied: boolean;
  readonly hosting: boolean;
}

/** The standing of every address when no list is configured (the default): one frozen object, not one per call. */
const NEUTRAL: IpStanding = Object.freeze({ allowed: false, denied: false, hosting: false });

export class Reputation {
  private readonly allow: IpRanges;
  private readonly deny: IpRanges;
  private readonly hosting: IpRanges;

  constructor(allowList: readonly string[], denyList: readonly string[], hostingRanges: readonly string[]) {
    this.allow = ranges(allowList, 'allowList');
    this.deny = ranges(denyList, 'denyList');
    this.hosting = ranges(hostingRanges, 'hostingRanges');
  }

  /** The address's standing. A deny rule wins over an allow rule covering the same address. */
  classify(ip: ParsedIp): IpStanding {
    if (this.allow.size === 0 && this.deny.size === 0 && this.hosting.size === 0) return NEUTRAL;
    const denied = this.deny.has(ip);
    return { denied, allowed: !denied && this.allow.has(ip), hosting: this.hosting.has(ip) };
  }
}
