/**
 * Fixed window, aligned to the epoch as Envoy's ratelimit is: window n covers [n·W, (n+1)·W).
 * Admit while count + cost <= limit.
 *
 * Its documented flaw: a client can spend the whole limit just before a boundary and again just after it,
 * so up to 2 × limit pass within a few milliseconds. `sluice demo` and the boundary-attack test show it.
 *
 * State (2 slots): [window index, count in that window]. All zeros is idle.
 * A clock that steps back before the stored window stands still at its start: it never reopens a window.
 * With `countRejected` (Envoy's counting) a denied cost is counted too: the denial writes [window, count + cost]
 * (Verdict.bans), so the window stays over for every later request, cost 0 included, until it ends.
 */
import { ceilMs, retryMs } from './time.js';
import type { Policy, SlabAlgorithm, Verdict } from './types.js';

/**
 * The verdict of `cost` more in a window that already counts `count` and ends in `endsIn` ms, with the
 * state to keep (the window's id and its new count) when admitted. Shared by the epoch-aligned and the
 * calendar window, which differ only in where a window starts and ends.
 */
export function countInWindow(
  v: Verdict,
  limit: number,
  window: number,
  count: number,
  cost: number,
  endsIn: number,
  countRejected = false,
): void {
  const after = count + cost;
  v.allowed = after <= limit;
  v.delayMs = 0;
  if (countRejected) {
    v.bans = true; // a denial of the key writes this count too, as Envoy counts every descriptor's key
    v.next[0] = window;
    v.next[1] = after;
  }
  if (v.allowed) {
    v.remaining = limit - after;
    v.resetAfterMs = after > 0 ? ceilMs(endsIn) : 0;
    v.retryAfterMs = 0;
    v.next[0] = window;
    v.next[1] = after;
  } else {
    v.remaining = Math.max(0, limit - count);
    v.resetAfterMs = count > 0 ? ceilMs(endsIn) : 0;
    // A cost above the limit never gets here (the limiter refuses it before any store is asked) unless the
    // window counts rejected requests: it is then counted and denied like any other.
    v.retryAfterMs = retryMs(endsIn);
  }
}

export class FixedWindow implements SlabAlgorithm {
  readonly kind = 'slab';
  readonly slots = 2;
  readonly policy: Policy;
  private readonly limit: number;
  private readonly windowMs: number;
  private readonly countRejected: boolean;

  constructor(policy: Policy) {
    this.policy = policy;
    this.limit = policy.limit;
    this.windowMs = policy.windowMs;
    this.countRejected = policy.countRejected;
  }

  evaluate(s: Float64Array, o: number, now: number, cost: number, v: Verdict): void {
    const stored = s[o]!;
    let index = Math.floor(now / this.windowMs);
    let endsIn = (index + 1) * this.windowMs - now;
    if (index < stored) {
      index = stored; // the clock stepped back: stand still at the start of the stored window
      endsIn = this.windowMs;
    }
    countInWindow(v, this.limit, index, stored === index ? s[o + 1]! : 0, cost, endsIn, this.countRejected);
  }

  adjust(s: Float64Array, o: number, now: number, delta: number): void {
    const index = Math.max(Math.floor(now / this.windowMs), s[o]!);
    const count = s[o] === index ? s[o + 1]! : 0;
    s[o] = index;
    s[o + 1] = Math.max(0, count + delta);
  }

  idleAt(s: Float64Array, o: number): number {
    return s[o + 1]! > 0 ? (s[o]! + 1) * this.windowMs : -Infinity;
  }
}
