/**
 * Leaky bucket, in its two classic roles.
 *
 * As a meter, a bucket of size `burst` leaks at limit/window and a request of cost c pours in c; it is
 * admitted iff it fits. That is the token bucket seen from the other side (the water level is the token
 * deficit), so the meter shares the token bucket's arithmetic and state.
 *
 * As a shaper it is nginx `limit_req`: admitted requests leave at the rate, so each gets `delayMs`, the
 * time until the queue ahead of it has drained. `burst` bounds the queue (requests admitted back to back
 * from idle, so nginx `burst=B` is `burst: B + 1`); the first `delay` of them are forwarded at once (nginx
 * `delay=D` is `delay: D + 1`); `nodelay` forwards everything at once but still counts it. Requests beyond
 * the queue are rejected. Admission is GCRA's; the shaper adds the delay.
 *
 * Shaper state (1 slot): [time at which the queue has drained]. Zero is idle.
 */
import { Gcra } from './gcra.js';
import { ceilMs } from './time.js';
import { TokenBucket } from './token-bucket.js';
import type { Policy, SlabAlgorithm, Verdict } from './types.js';

export class LeakyBucketMeter extends TokenBucket {}

export class LeakyBucketShaper extends Gcra {
  /** Queue length, in deficit units, that is forwarded without delay. */
  private readonly undelayed: number;

  constructor(policy: Policy) {
    super(policy);
    this.undelayed = policy.nodelay ? Infinity : (policy.delay - 1) * policy.windowMs;
  }

  override evaluate(s: Float64Array, o: number, now: number, cost: number, v: Verdict): void {
    super.evaluate(s, o, now, cost, v);
    if (v.allowed) {
      // The queue ahead of this request, in deficit units: it starts once that has drained.
      const ahead = (s[o]! > now ? s[o]! - now : 0) * this.limit;
      v.delayMs = ahead > this.undelayed ? ceilMs((ahead - this.undelayed) / this.limit) : 0;
    }
  }
}

export function leakyBucket(policy: Policy): SlabAlgorithm {
  return policy.mode === 'shaper' ? new LeakyBucketShaper(policy) : new LeakyBucketMeter(policy);
}
