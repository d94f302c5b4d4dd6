/**
 * GCRA, the generic cell rate algorithm (ATM Forum TM 4.0; as in governor, redis-cell and redis_rate).
 * One number of state, the theoretical arrival time (TAT). With emission interval T = window/limit and
 * τ = T·(burst − 1), a request of cost c is allowed iff now >= max(TAT, now) + c·T − τ − T, and then
 * TAT := max(TAT, now) + c·T.
 *
 * It decides as the token bucket with the same limit, window and burst (TAT − now is the bucket's deficit
 * divided by the refill rate); what it saves is a slot. The price is rounding: TAT sits at epoch magnitude,
 * so each c·T added to it is rounded to about 2.4e-4 ms. Differences below 16 ulps of TAT (a few µs), and
 * never above 1/1024 of a token, are therefore treated as ties and admitted, which keeps `remaining` honest (that many requests do pass) and
 * keeps GCRA equal to the exact token bucket wherever window/limit is whole milliseconds.
 *
 * State (1 slot): [TAT]. Zero is idle.
 */
import { ceilMs, retryMs } from './time.js';
import type { Policy, SlabAlgorithm, Verdict } from './types.js';

/** 16 ulps, relative: how close to the boundary, as a fraction of TAT, counts as a tie. */
export const TIE = 2 ** -48;

export class Gcra implements SlabAlgorithm {
  readonly kind = 'slab';
  readonly slots = 1;
  readonly policy: Policy;
  protected readonly limit: number;
  protected readonly windowMs: number;
  /** burst · window: how far ahead of now the TAT may run, in deficit units (ms · limit). */
  protected readonly full: number;
  /** The largest tie tolerance, in deficit units: 1/1024 of a token. */
  private readonly tokenTie: number;

  constructor(policy: Policy) {
    this.policy = policy;
    this.limit = policy.limit;
    this.windowMs = policy.windowMs;
    this.full = policy.burst * policy.windowMs;
    this.tokenTie = policy.windowMs / 1024;
  }

  evaluate(s: Float64Array, o: number, now: number, cost: number, v: Verdict): void {
    const tat = s[o]!;
    const base = tat > now ? tat : now;
    const ahead = (base - now) * this.limit; // the token bucket's deficit
    const after = ahead + cost * this.windowMs;
    // A tie is a few ulps of TAT, but never more than 1/1024 of a token: at very high rates (T well under a
    // µs) one ulp of TAT is worth several tokens, and a tolerance in time would admit them all.
    const tie = base * TIE * this.limit;
    const room = this.full + (tie < this.tokenTie ? tie : this.tokenTie);
    v.delayMs = 0;
    if (after <= room) {
      v.allowed = true;
      v.remaining = Math.floor((room - after) / this.windowMs);
      v.resetAfterMs = ceilMs(after / this.limit);
      v.retryAfterMs = 0;
      v.next[0] = base + (cost * this.windowMs) / this.limit;
    } else {
      v.allowed = false;
      v.remaining = Math.max(0, Math.floor((room - ahead) / this.windowMs));
      v.resetAfterMs = ceilMs(ahead / this.limit);
      v.retryAfterMs = retryMs((after - this.full) / this.limit);
    }
  }

  adjust(s: Float64Array, o: number, now: number, delta: number): void {
    const base = s[o]! > now ? s[o]! : now;
    s[o] = Math.max(now, base + (delta * this.windowMs) / this.limit);
  }

  idleAt(s: Float64Array, o: number): number {
    return s[o]!;
  }
}
