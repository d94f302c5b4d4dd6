/**
 * @file The implementations under test, each wrapped the way an application would call it.
 *
 * makeImpl(name, policy) returns { kind, decide, size }:
 * - kind 'sync':           decide(key) returns a boolean;
 * - kind 'await-decision': decide(key) returns a Promise of an object with `.allowed` (sluice);
 * - kind 'await-bool':     decide(key) returns a Promise<boolean> (ref-async);
 * - kind 'await-reject':   decide(key) resolves when allowed and rejects with RateLimiterRes when denied (rlflex).
 * size() is the number of keys the implementation holds, used to check that the pattern did what it says.
 */
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { TokenBucket } from 'limiter';
import { Limiter, MemoryStore } from '../../packages/sluice/dist/index.js'; // the BUILT package, as users get it
import { RefBucket } from './ref-bucket.mjs';

export { RateLimiterRes };
export const IMPLS = ['sluice', 'sluice-sync', 'rlflex', 'limiter-tb', 'ref', 'ref-async'];

function sluice({ burst, limit, windowMs }) {
  // maxKeys above the 1M of once1m (plus headroom), so no eviction ever happens in a run.
  const store = new MemoryStore({ maxKeys: 2_000_000 });
  return new Limiter({ policy: { algorithm: 'token-bucket', limit, window: windowMs, burst }, store });
}

/** A Map of limiter's TokenBucket, created lazily and full: `limiter` has no key store of its own. */
function limiterMap({ burst, limit, windowMs }) {
  const m = new Map();
  return {
    m,
    take(k) {
      let b = m.get(k);
      if (b === undefined) {
        b = new TokenBucket({ bucketSize: burst, tokensPerInterval: limit, interval: windowMs });
        b.content = burst; // it starts empty otherwise; the others start full
        m.set(k, b);
      }
      return b.tryRemoveTokens(1);
    },
  };
}

export function makeImpl(name, policy) {
  switch (name) {
    case 'sluice': {
      const l = sluice(policy);
      return { kind: 'await-decision', decide: (k) => l.limit(k), size: () => l.store.size };
    }
    case 'sluice-sync': {
      const l = sluice(policy);
      return { kind: 'sync', decide: (k) => l.limitSync(k).allowed, size: () => l.store.size };
    }
    case 'rlflex': {
      // rate-limiter-flexible is a fixed window: `burst` points per window (10/60 s for DENY, as in anchorbench).
      const rl = new RateLimiterMemory({ points: policy.burst, duration: policy.windowMs / 1000 });
      return { kind: 'await-reject', decide: (k) => rl.consume(k), size: () => rl._memoryStorage._storage.size };
    }
    case 'limiter-tb': {
      const lm = limiterMap(policy);
      return { kind: 'sync', decide: (k) => lm.take(k), size: () => lm.m.size };
    }
    case 'ref': {
      const rb = new RefBucket(policy.burst, policy.limit / policy.windowMs);
      return { kind: 'sync', decide: (k) => rb.take(k), size: () => rb.buckets.size };
    }
    case 'ref-async': {
      // the same bucket behind `async`: the price of a Promise-returning API
      const rb = new RefBucket(policy.burst, policy.limit / policy.windowMs);
      return { kind: 'await-bool', decide: async (k) => rb.take(k), size: () => rb.buckets.size };
    }
    default:
      throw new Error(`unknown impl '${name}'; known: ${IMPLS.join(', ')}`);
  }
}
