/**
 * @file The loop bench/runtimes.mjs times on every runtime: `await limiter.limit(key)`, token bucket with
 * the memory bench's ALLOW policy (burst 1e9, 60 per hour: every decision passes and no key goes idle),
 * default MemoryStore (maxKeys 2,000,000) and default clock. Plain JS with no imports, so the same file runs
 * on Node, Bun, Deno and in a Worker; the caller passes sluice in.
 */

/** Keys of a pattern: 'hot' is one key; 'rr100k' is 100,000 keys visited round-robin. */
export function keysOf(pattern) {
  if (pattern === 'hot') return ['hot'];
  if (pattern === 'rr100k') return Array.from({ length: 100_000 }, (_, i) => `user:${i}`);
  throw new Error(`unknown pattern '${pattern}'`);
}

export function makeLimiter(sluice, store) {
  return new sluice.Limiter({
    policy: { algorithm: 'token-bucket', limit: 60, window: '1h', burst: 1e9 },
    store: store ?? new sluice.MemoryStore({ maxKeys: 2_000_000 }),
  });
}

/** `n` decisions round-robin over `keys` from `start`; returns how many were allowed (all, on ALLOW). */
export async function decide(limiter, keys, start, n) {
  let allowed = 0;
  const k = keys.length;
  for (let i = start; i < start + n; i++) if ((await limiter.limit(keys[i % k])).allowed) allowed++;
  return allowed;
}

/** The same with `inflight` decisions awaited together (a Worker serving concurrent requests). */
export async function decideConcurrently(limiter, keys, start, n, inflight) {
  let allowed = 0;
  const k = keys.length;
  for (let i = start; i < start + n; i += inflight) {
    const batch = [];
    for (let j = i; j < Math.min(i + inflight, start + n); j++) batch.push(limiter.limit(keys[j % k]));
    for (const d of await Promise.all(batch)) if (d.allowed) allowed++;
  }
  return allowed;
}
