/**
 * Sliding-window counter (Cloudflare's "sliding window" estimate), generalised to k sub-windows.
 *
 * With k = 1: estimate = prev · (W − elapsed)/W + curr, where curr counts the current epoch-aligned window
 * and prev the one before it. It assumes prev's traffic was spread evenly, so it is approximate.
 * With k sub-windows of w = W/k: the k most recent sub-windows count in full and the one before them is
 * weighted by the part of it still inside the sliding window. The estimate is off by at most the count
 * of that one partial sub-window (test/properties). Larger k costs one number per sub-window and, for
 * spread-out traffic, tightens the estimate towards the exact log; but a client that puts the whole limit
 * into one sub-window still gets close to 2 × limit through a true window. `sluice demo` measures both.
 *
 * Admit iff estimate + cost <= limit. Comparisons are made on estimate·w, which is exact on whole
 * milliseconds.
 *
 * State (k + 2 slots): [index of the newest sub-window written, then a ring of k + 1 counters].
 */
import { ceilMs, retryMs } from './time.js';
import type { Policy, SlabAlgorithm, Verdict } from './types.js';

export class SlidingWindow implements SlabAlgorithm {
  readonly kind = 'slab';
  readonly slots: number;
  readonly policy: Policy;
  private readonly limit: number;
  private readonly k: number;
  /** Sub-window length in ms. */
  private readonly w: number;
  private readonly ring: number;

  constructor(policy: Policy) {
    this.policy = policy;
    this.limit = policy.limit;
    this.k = policy.buckets;
    this.w = policy.windowMs / policy.buckets;
    this.ring = this.k + 1;
    this.slots = this.k + 2;
  }

  /** Count stored for sub-window i, given the newest written index `newest`. */
  private count(s: Float64Array, o: number, newest: number, i: number): number {
    if (i > newest || i < newest - this.k || i < 0) return 0;
    return s[o + 1 + (i % this.ring)]!;
  }

  /** Newest sub-window index that holds a count, or -1. */
  private newestNonZero(s: Float64Array, o: number): number {
    const newest = s[o]!;
    for (let i = newest; i >= newest - this.k && i >= 0; i--) if (this.count(s, o, newest, i) > 0) return i;
    return -1;
  }

  /** The estimate at sub-window j, `elapsed` ms into it, times w. */
  private scaledEstimate(s: Float64Array, o: number, newest: number, j: number, elapsed: number): number {
    let full = 0;
    for (let i = j - this.k + 1; i <= j; i++) full += this.count(s, o, newest, i);
    return full * this.w + this.count(s, o, newest, j - this.k) * (this.w - elapsed);
  }

  evaluate(s: Float64Array, o: number, now: number, cost: number, v: Verdict): void {
    const newest = s[o]!;
    let j = Math.floor(now / this.w);
    let elapsed = now - j * this.w;
    if (j < newest) {
      j = newest; // the clock stepped back: stay in the newest sub-window written
      elapsed = 0;
    }
    const estimate = this.scaledEstimate(s, o, newest, j, elapsed);
    const capacity = this.limit * this.w;
    const after = estimate + cost * this.w;
    v.delayMs = 0;
    if (after <= capacity) {
      v.allowed = true;
      v.remaining = Math.floor((capacity - after) / this.w);
      v.retryAfterMs = 0;
      this.advance(s, o, j, v.next);
      v.next[1 + (j % this.ring)]! += cost;
      const last = cost > 0 ? j : this.newestNonZero(v.next, 0);
      v.resetAfterMs = last < 0 ? 0 : ceilMs((last + this.k + 1) * this.w - now);
    } else {
      v.allowed = false;
      v.remaining = Math.max(0, Math.floor((capacity - estimate) / this.w));
      const last = this.newestNonZero(s, o);
      v.resetAfterMs = last < 0 ? 0 : ceilMs((last + this.k + 1) * this.w - now);
      v.retryAfterMs = retryMs(this.passesAt(s, o, newest, j, elapsed, cost) - now);
    }
  }

  /** Copies the state into `out` (at offset 0), moved forward so that sub-window j is the newest. */
  private advance(s: Float64Array, o: number, j: number, out: Float64Array): void {
    const newest = s[o]!;
    out[0] = j;
    for (let r = 0; r < this.ring; r++) out[1 + r] = s[o + 1 + r]!;
    const first = Math.max(newest + 1, j - this.k);
    for (let i = first; i <= j; i++) out[1 + (i % this.ring)] = 0;
  }

  /** The earliest time at which a request of `cost` passes, walking forward one sub-window at a time. */
  private passesAt(s: Float64Array, o: number, newest: number, j: number, elapsed: number, cost: number): number {
    for (let step = j; step <= j + this.k + 1; step++) {
      const from = step === j ? elapsed : 0;
      let full = 0;
      for (let i = step - this.k + 1; i <= step; i++) full += this.count(s, o, newest, i);
      const room = this.limit - cost - full;
      if (room < 0) continue;
      const old = this.count(s, o, newest, step - this.k);
      // full·w + old·(w − e) <= (limit − cost)·w  ⇔  e >= w − room·w/old
      const e = old === 0 ? from : Math.max(from, this.w - (room * this.w) / old);
      if (e < this.w) return step * this.w + e;
    }
    return (j + this.k + 1) * this.w; // unreachable for cost <= limit: by then every counter has aged out
  }

  adjust(s: Float64Array, o: number, now: number, delta: number): void {
    const j = Math.max(Math.floor(now / this.w), s[o]!);
    const next = new Float64Array(this.slots);
    this.advance(s, o, j, next);
    if (delta >= 0) {
      next[1 + (j % this.ring)]! += delta;
    } else {
      let refund = -delta; // newest first, as the most recent requests are the ones being refunded
      for (let i = j; i >= j - this.k && i >= 0 && refund > 0; i--) {
        const slot = 1 + (i % this.ring);
        const take = Math.min(next[slot]!, refund);
        next[slot]! -= take;
        refund -= take;
      }
    }
    s.set(next, o);
  }

  idleAt(s: Float64Array, o: number): number {
    const last = this.newestNonZero(s, o);
    return last < 0 ? -Infinity : (last + this.k + 1) * this.w;
  }
}
