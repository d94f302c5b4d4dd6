/**
 * Concurrency limiter: at most `limit` cost units in flight per key. An admitted request holds a lease
 * until the caller releases it or `window` (the lease timeout) passes, so a crashed holder cannot leak a
 * slot forever. Stripe keeps the same thing as a sorted set of request ids scored by time.
 *
 * A clock that steps back before the newest lease was taken stands still at that time, so no lease is
 * stamped earlier (and so expires sooner) than one already held. Released leases are forgotten, and their
 * times with them.
 *
 * State: a LeaseSet object per key; idle when every lease has been released or has expired.
 */
import { ceilMs, retryMs } from './time.js';
import type { ObjectAlgorithm, Policy, Verdict } from './types.js';

export class LeaseSet {
  ids: string[] = [];
  expiresAt: number[] = [];
  costs: number[] = [];
}

export class Concurrency implements ObjectAlgorithm<LeaseSet> {
  readonly kind = 'object';
  readonly policy: Policy;
  private readonly limit: number;
  private readonly leaseMs: number;

  constructor(policy: Policy) {
    this.policy = policy;
    this.limit = policy.limit;
    this.leaseMs = policy.windowMs;
  }

  /** `now`, or the time the newest lease was taken if the clock stepped back before it. */
  private at(st: LeaseSet | undefined, now: number): number {
    if (st === undefined) return now;
    let newest = -Infinity;
    for (const t of st.expiresAt) if (t > newest) newest = t;
    // Compared as expiries: rounding is monotonic, so a clock that never steps back is never moved.
    return now + this.leaseMs >= newest ? now : newest - this.leaseMs;
  }

  private inFlight(st: LeaseSet | undefined, now: number): number {
    let sum = 0;
    if (st !== undefined) for (let i = 0; i < st.ids.length; i++) if (st.expiresAt[i]! > now) sum += st.costs[i]!;
    return sum;
  }

  private lastExpiry(st: LeaseSet | undefined, now: number): number {
    let last = -Infinity;
    if (st !== undefined) for (const t of st.expiresAt) if (t > now && t > last) last = t;
    return last;
  }

  evaluate(st: LeaseSet | undefined, now: number, cost: number, v: Verdict): void {
    now = this.at(st, now);
    const held = this.inFlight(st, now);
    v.delayMs = 0;
    if (held + cost <= this.limit) {
      v.allowed = true;
      v.remaining = this.limit - held - cost;
      v.retryAfterMs = 0;
      v.resetAfterMs = cost > 0 ? this.leaseMs : ceilMs(this.lastExpiry(st, now) - now);
      return;
    }
    v.allowed = false;
    v.remaining = Math.max(0, this.limit - held);
    v.resetAfterMs = ceilMs(this.lastExpiry(st, now) - now);
    // Without a release, room appears as leases time out: walk them in expiry order.
    const live = st!.expiresAt
      .map((t, i) => [t, st!.costs[i]!] as const)
      .filter(([t]) => t > now)
      .sort((a, b) => a[0] - b[0]);
    let freed = 0;
    let at = now;
    for (const [t, c] of live) {
      if (held - freed + cost <= this.limit) break;
      freed += c;
      at = t;
    }
    v.retryAfterMs = retryMs(at - now);
  }

  /** Drops expired leases in place. */
  private prune(st: LeaseSet, now: number): void {
    let w = 0;
    for (let r = 0; r < st.ids.length; r++) {
      if (st.expiresAt[r]! <= now) continue;
      st.ids[w] = st.ids[r]!;
      st.expiresAt[w] = st.expiresAt[r]!;
      st.costs[w] = st.costs[r]!;
      w++;
    }
    st.ids.length = st.expiresAt.length = st.costs.length = w;
  }

  commit(st: LeaseSet | undefined, now: number, cost: number, leaseId: string | undefined): LeaseSet {
    const state = st ?? new LeaseSet();
    now = this.at(state, now);
    this.prune(state, now);
    if (leaseId === undefined) throw new Error('sluice internal: a concurrency commit needs a lease id');
    state.ids.push(leaseId);
    state.expiresAt.push(now + this.leaseMs);
    state.costs.push(cost);
    return state;
  }

  /** Leases are ended by release(), not by cost adjustments: penalty and reward leave them alone. */
  adjust(st: LeaseSet | undefined): LeaseSet | undefined {
    return st;
  }

  release(st: LeaseSet | undefined, leaseId: string, now: number): boolean {
    if (st === undefined) return false;
    const i = st.ids.indexOf(leaseId);
    const held = i >= 0 && st.expiresAt[i]! > now;
    if (i >= 0) {
      st.ids.splice(i, 1);
      st.expiresAt.splice(i, 1);
      st.costs.splice(i, 1);
    }
    return held;
  }

  idleAt(st: LeaseSet | undefined): number {
    if (st === undefined) return -Infinity;
    let last = -Infinity;
    for (const t of st.expiresAt) if (t > last) last = t;
    return last;
  }
}
