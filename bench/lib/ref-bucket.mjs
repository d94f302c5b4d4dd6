/**
 * @file The reference token bucket: the floor a usable in-process limiter is compared with.
 * One Map lookup, one performance.now() per decision, lazy refill, no timers, no promises, no validation.
 * Same shape as anchorbench's lib/refbucket.mjs so that its figures and ours mean the same thing.
 */
export class RefBucket {
  /** @param {number} capacity tokens when full @param {number} refillPerMs tokens added per millisecond */
  constructor(capacity, refillPerMs) {
    this.capacity = capacity;
    this.refillPerMs = refillPerMs;
    /** @type {Map<string, {tokens: number, ts: number}>} */
    this.buckets = new Map();
  }

  /** Takes one token for `key` if there is one. */
  take(key) {
    const now = performance.now();
    let b = this.buckets.get(key);
    if (b === undefined) {
      b = { tokens: this.capacity, ts: now }; // a new key starts full
      this.buckets.set(key, b);
    } else {
      const t = b.tokens + (now - b.ts) * this.refillPerMs;
      b.tokens = t > this.capacity ? this.capacity : t;
      b.ts = now;
    }
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return true;
    }
    return false;
  }
}
