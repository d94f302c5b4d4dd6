/**
 * @file The four key patterns and the token-bucket policies they use, shared by every implementation.
 *
 * A policy is { burst, limit, windowMs }: `burst` tokens when full, refilled at `limit` per `windowMs`.
 *
 * ALLOW is "every decision passes, and no key goes idle during the run". anchorbench used 1e12 per 60 s,
 * but sluice's MemoryStore drops keys whose state is back to full (swept two per insert), and at 1e12/min a
 * key is full again 60 ns after use: rr100k would then measure insert/evict churn on a near-empty store and
 * once1m would end with a handful of keys. So ALLOW has a huge burst (never exhausted in a run) and a slow
 * refill (one token per minute), which keeps every key live in every implementation. It also keeps sluice's
 * integer arithmetic below 2^53 (burst × windowMs = 3.6e15). Set ALLOW_POLICY=anchor to use 1e12/60 s instead.
 */
const ANCHOR_ALLOW = { burst: 1e12, limit: 1e12, windowMs: 60_000 };
const LIVE_ALLOW = { burst: 1e9, limit: 60, windowMs: 3_600_000 };
export const ALLOW = process.env.ALLOW_POLICY === 'anchor' ? ANCHOR_ALLOW : LIVE_ALLOW;
/** 10 per 60 s: after the first 10 decisions of a run every decision is denied. */
export const DENY = { burst: 10, limit: 10, windowMs: 60_000 };

const roundRobin = (n) => Array.from({ length: n }, (_, i) => 'k' + i);

/** keys(): the keys cycled through in the timed loop; storeSize: how many keys the store must hold at the end. */
export const PATTERNS = {
  hot: { policy: ALLOW, keys: () => ['hot'], storeSize: 1 },
  'hot-deny': { policy: DENY, keys: () => ['hot'], storeSize: 1 },
  rr100k: { policy: ALLOW, keys: () => roundRobin(100_000), storeSize: 100_000 },
  // Not timed by window: 1,000,000 distinct keys, one decision each (see once1m in memory-one.mjs).
  once1m: { policy: ALLOW, keys: () => roundRobin(1_000_000), storeSize: 1_000_000 },
};
