/**
 * Token bucket: `burst` tokens (default `limit`), refilled at limit/window, lazily from elapsed time.
 *
 * The state is kept as a deficit rather than a token count, so that all-zero slots mean "full" and the
 * arithmetic stays exact on whole-millisecond clocks: the deficit is counted in units of 1/window of a
 * token, so one millisecond refills exactly `limit` units and a request of cost c needs exactly c·window.
 *
 * State (2 slots): [deficit in token·ms/window units, time of the last change]. All zeros is full (idle).
 * Invariant: 0 <= deficit <= burst·window except after a penalty, which may push it further (debt).
 */
import { ceilMs, retryMs } from './time.js';
import type { Policy, SlabAlgorithm, Verdict } from './types.js';

export class TokenBucket implements SlabAlgorithm {
  readonly kind = 'slab';
  readonly slots = 2;
  readonly policy: Policy;
  private readonly limit: number;
  private readonly windowMs: number;
  private readonly full: number;

  constructor(policy: Policy) {
    this.policy = policy;
    this.limit = policy.limit;
    this.windowMs = policy.windowMs;
    this.full = policy.burst * policy.windowMs;
  }

  /** The deficit refilled up to `at`. */
  private deficitAt(s: Float64Array, o: number, at: number): number {
    const refilled = s[o]! - (at - s[o + 1]!) * this.limit;
    return refilled > 0 ? refilled : 0;
  }

  evaluate(s: Float64Array, o: number, now: number, cost: number, v: Verdict): void {
    const at = now > s[o + 1]! ? now : s[o + 1]!; // a clock that steps back never refills twice
    const deficit = this.deficitAt(s, o, at);
    const after = deficit + cost * this.windowMs;
    v.delayMs = 0;
    if (after <= this.full) {
      v.allowed = true;
      v.remaining = Math.floor((this.full - after) / this.windowMs);
      v.resetAfterMs = ceilMs(after / this.limit);
      v.retryAfterMs = 0;
      v.next[0] = after;
      v.next[1] = at;
    } else {
      v.allowed = false;
      v.remaining = Math.max(0, Math.floor((this.full - deficit) / this.windowMs));
      v.resetAfterMs = ceilMs(deficit / this.limit);
      v.retryAfterMs = retryMs((after - this.full) / this.limit);
    }
  }

  adjust(s: Float64Array, o: number, now: number, delta: number): void {
    const at = now > s[o + 1]! ? now : s[o + 1]!;
    s[o] = Math.max(0, this.deficitAt(s, o, at) + delta * this.windowMs);
    s[o + 1] = at;
  }

  idleAt(s: Float64Array, o: number): number {
    return s[o]! > 0 ? s[o + 1]! + s[o]! / this.limit : -Infinity;
  }
}

/**
 * A token bucket asked with another limit than its policy's (per-call limits, core/override.ts), on the
 * same state. The deficit stays in the units of the policy's own limit (`unit`), so that calls with and
 * without an override share it: it is the time until the bucket is full (deficit / unit), which this limit
 * turns into its own deficit (time × limit) and back. Only built for an override; the policy's own
 * decisions never pay for the conversion.
 */
export class RescaledTokenBucket extends TokenBucket {
  private readonly unit: number;
  private readonly callLimit: number;
  private readonly callWindowMs: number;
  private readonly callFull: number;

  constructor(policy: Policy, unit: number) {
    super({ ...policy, limit: unit });
    this.unit = unit;
    this.callLimit = policy.limit;
    this.callWindowMs = policy.windowMs;
    this.callFull = policy.burst * policy.windowMs;
    (this as { policy: Policy }).policy = policy;
  }

  override evaluate(s: Float64Array, o: number, now: number, cost: number, v: Verdict): void {
    const at = now > s[o + 1]! ? now : s[o + 1]!;
    const stored = s[o]! - (at - s[o + 1]!) * this.unit;
    const deficit = stored > 0 ? (stored * this.callLimit) / this.unit : 0;
    const after = deficit + cost * this.callWindowMs;
    const w = this.callWindowMs;
    v.delayMs = 0;
    if (after <= this.callFull) {
      v.allowed = true;
      v.remaining = Math.floor((this.callFull - after) / w);
      v.resetAfterMs = ceilMs(after / this.callLimit);
      v.retryAfterMs = 0;
      v.next[0] = (after * this.unit) / this.callLimit;
      v.next[1] = at;
    } else {
      v.allowed = false;
      v.remaining = Math.max(0, Math.floor((this.callFull - deficit) / w));
      v.resetAfterMs = ceilMs(deficit / this.callLimit);
      v.retryAfterMs = retryMs((after - this.callFull) / this.callLimit);
    }
  }
}
