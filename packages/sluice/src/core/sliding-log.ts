/**
 * Sliding-window log: the exact sliding window. Each admitted request is logged with its time and cost; a
 * request is admitted iff the costs logged in (now − W, now] plus its own cost fit in the limit.
 * Exact, and O(limit) memory per key: entries at the same millisecond are merged, so at most `limit`
 * entries are live (penalties aside); aged-out ones are compacted away once they are half the array, so
 * the arrays hold at most about 2 × limit + 32.
 *
 * A clock that steps back before the newest entry stands still at it, so the log stays sorted and no entry
 * is stamped earlier (and so ages out sooner) than one already logged.
 *
 * State: a LogState object per key; idle when every entry has aged out.
 */
import { ceilMs, retryMs } from './time.js';
import type { ObjectAlgorithm, Policy, Verdict } from './types.js';

export class LogState {
  /** Entry times, oldest first, from `head` on. */
  times: number[] = [];
  costs: number[] = [];
  head = 0;
  /** Sum of costs[head..]. */
  sum = 0;
}

export class SlidingLog implements ObjectAlgorithm<LogState> {
  readonly kind = 'object';
  readonly policy: Policy;
  private readonly limit: number;
  private readonly windowMs: number;

  constructor(policy: Policy) {
    this.policy = policy;
    this.limit = policy.limit;
    this.windowMs = policy.windowMs;
  }

  /** `now`, or the newest entry's time if the clock stepped back before it. */
  private at(st: LogState, now: number): number {
    const times = st.times;
    const newest = times.length > 0 ? times[times.length - 1]! : now;
    return now < newest ? newest : now;
  }

  /** Index of the first entry still inside the window, and the sum of the entries before it. */
  private firstLive(st: LogState, now: number): [index: number, expiredSum: number] {
    const cutoff = now - this.windowMs;
    let i = st.head;
    let expired = 0;
    while (i < st.times.length && st.times[i]! <= cutoff) expired += st.costs[i++]!;
    return [i, expired];
  }

  evaluate(st: LogState | undefined, now: number, cost: number, v: Verdict): void {
    v.delayMs = 0;
    if (st === undefined) {
      v.allowed = cost <= this.limit;
      v.remaining = this.limit - cost;
      v.resetAfterMs = cost > 0 ? this.windowMs : 0;
      v.retryAfterMs = 0;
      return;
    }
    const last = st.times.length - 1;
    if (last >= 0 && now < st.times[last]!) now = st.times[last]!; // stepped back: stand still at the newest entry
    const [first, expired] = this.firstLive(st, now);
    const live = st.sum - expired;
    const newest = first < st.times.length ? st.times[st.times.length - 1]! : -Infinity;
    if (live + cost <= this.limit) {
      v.allowed = true;
      v.remaining = this.limit - live - cost;
      v.resetAfterMs = cost > 0 ? this.windowMs : ceilMs(newest + this.windowMs - now);
      v.retryAfterMs = 0;
      return;
    }
    v.allowed = false;
    v.remaining = Math.max(0, this.limit - live);
    v.resetAfterMs = ceilMs(newest + this.windowMs - now);
    // Entry i leaves the window at times[i] + W; find the first whose leaving makes room.
    let freed = 0;
    let i = first;
    while (live - freed + cost > this.limit) freed += st.costs[i++]!;
    v.retryAfterMs = retryMs(st.times[i - 1]! + this.windowMs - now);
  }

  /** Drops aged-out entries and compacts the arrays once half of them are dead. */
  private prune(st: LogState, now: number): void {
    const [first, expired] = this.firstLive(st, now);
    st.head = first;
    st.sum -= expired;
    if (st.head > 32 && st.head * 2 > st.times.length) {
      st.times = st.times.slice(st.head);
      st.costs = st.costs.slice(st.head);
      st.head = 0;
    }
  }

  private append(st: LogState, now: number, cost: number): void {
    const last = st.times.length - 1;
    if (last >= st.head && st.times[last] === now) st.costs[last]! += cost;
    else {
      st.times.push(now);
      st.costs.push(cost);
    }
    st.sum += cost;
  }

  commit(st: LogState | undefined, now: number, cost: number): LogState {
    const state = st ?? new LogState();
    const at = this.at(state, now);
    this.prune(state, at);
    this.append(state, at, cost);
    return state;
  }

  adjust(st: LogState | undefined, now: number, delta: number): LogState | undefined {
    if (delta > 0) return this.commit(st, now, delta);
    if (st === undefined) return undefined;
    this.prune(st, this.at(st, now));
    let refund = -delta; // newest first
    while (refund > 0 && st.times.length > st.head) {
      const last = st.times.length - 1;
      const take = Math.min(st.costs[last]!, refund);
      st.costs[last]! -= take;
      st.sum -= take;
      refund -= take;
      if (st.costs[last] === 0) {
        st.times.pop();
        st.costs.pop();
      }
    }
    return st;
  }

  idleAt(st: LogState | undefined): number {
    if (st === undefined || st.times.length === st.head) return -Infinity;
    return st.times[st.times.length - 1]! + this.windowMs;
  }
}
