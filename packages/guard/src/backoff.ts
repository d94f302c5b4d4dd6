/**
 * The per-account backoff schedule: no wait for the first `freeFailures` consecutive failures (typos), then
 * `baseMs` doubling per failure up to `maxMs`, stretched by up to `jitter` of itself so that a botnet
 * cannot time the end of a lock (fail2ban's bantime.increment with bantime.rndtime does the same).
 */

export interface BackoffSchedule {
  readonly freeFailures: number;
  readonly baseMs: number;
  readonly maxMs: number;
  readonly jitter: number;
}

/**
 * Milliseconds to lock the account after its `failures`-th consecutive failure. `random` is uniform in
 * [0, 1); the result lies in [w, w·(1 + jitter)) for the unjittered wait w, and is 0 while failures are free.
 */
export function backoffMs(s: BackoffSchedule, failures: number, random: number): number {
  if (failures <= s.freeFailures) return 0;
  const doublings = failures - s.freeFailures - 1;
  // 2^doublings overflows to Infinity past 1023; the cap is reached long before, so clamp the exponent.
  const unjittered = Math.min(s.maxMs, s.baseMs * 2 ** Math.min(doublings, 60));
  return Math.ceil(unjittered * (1 + s.jitter * random));
}
