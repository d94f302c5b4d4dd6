/** Rounding shared by every algorithm, so that all of them report durations the same way. */

/**
 * Rounds a duration up to whole milliseconds, never below 0. The 1e-9 ms slack absorbs floating-point noise
 * from dividing a window by a limit (1000/3*3 is 1000.0000000000001), which would otherwise add 1 ms.
 */
export function ceilMs(ms: number): number {
  return ms <= 1e-9 ? 0 : Math.ceil(ms - 1e-9);
}

/**
 * A denied request's retryAfterMs: at least 1 ms, so that a caller that retries exactly when told never
 * spins on a denial caused by floating-point rounding at an exact tie.
 */
export function retryMs(ms: number): number {
  const up = ceilMs(ms);
  return up < 1 ? 1 : up;
}
