/** Maps a policy to the algorithm that decides it. A new algorithm is one module here plus one Lua twin. */
import { BlockingObject, BlockingSlab } from './block.js';
import { CalendarWindow } from './calendar.js';
import { Concurrency } from './concurrency.js';
import { FixedWindow } from './fixed-window.js';
import { Gcra } from './gcra.js';
import { leakyBucket } from './leaky-bucket.js';
import { SlidingLog } from './sliding-log.js';
import { SlidingWindow } from './sliding-window.js';
import { RescaledTokenBucket, TokenBucket } from './token-bucket.js';
import type { Algorithm, Policy } from './types.js';

export function createAlgorithm(policy: Policy): Algorithm {
  return withBan(bare(policy));
}

/** The algorithm behind a policy's ban, if it has one (core/block.ts). */
function withBan(a: Algorithm): Algorithm {
  if (a.policy.block === undefined) return a;
  return a.kind === 'slab' ? new BlockingSlab(a) : new BlockingObject(a);
}

function bare(policy: Policy): Algorithm {
  switch (policy.algorithm) {
    case 'fixed-window':
      return policy.calendar === undefined ? new FixedWindow(policy) : new CalendarWindow(policy);
    case 'sliding-log':
      return new SlidingLog(policy);
    case 'sliding-window':
      return new SlidingWindow(policy);
    case 'token-bucket':
      return new TokenBucket(policy);
    case 'gcra':
      return new Gcra(policy);
    case 'leaky-bucket':
      return leakyBucket(policy);
    case 'concurrency':
      return new Concurrency(policy);
  }
}

/**
 * The algorithm that decides a call with a per-call limit (`variant`, from core/override.ts) on the state
 * of `base`. Only the token bucket (and the leaky-bucket meter, its twin) keeps state in units of its
 * limit; every other algorithm's state reads the same under any limit.
 */
export function createOverride(base: Policy, variant: Policy): Algorithm {
  if (variant === base) return createAlgorithm(base);
  const meter = base.algorithm === 'token-bucket' || (base.algorithm === 'leaky-bucket' && base.mode === 'meter');
  return meter && variant.limit !== base.limit
    ? withBan(new RescaledTokenBucket(variant, base.limit))
    : createAlgorithm(variant);
}
