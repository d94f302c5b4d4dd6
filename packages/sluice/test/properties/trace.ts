// Random traces for the property tests: whole-millisecond times (non-decreasing, from a random epoch
// offset so that window alignment is exercised), up to three keys, and costs up to the policy's capacity.
import fc from 'fast-check';
import { Limiter, type Decision, type PolicyOptions } from '../../src/index.js';
import type { Step } from '../models.js';
import { ALGORITHMS } from '../../src/core/policy.js';
import type { AlgorithmName } from '../../src/core/types.js';

export function traceArb(windowMs: number, capacity: number, maxLength = 60): fc.Arbitrary<Step[]> {
  return fc
    .tuple(
      fc.integer({ min: 0, max: 2_000_000_000 }),
      fc.array(
        fc.record({
          dt: fc.oneof(
            fc.constant(0),
            fc.integer({ min: 0, max: windowMs }),
            fc.integer({ min: 0, max: 3 * windowMs }),
          ),
          key: fc.constantFrom('a', 'b', 'c'),
          cost: fc.oneof(fc.constant(1), fc.integer({ min: 0, max: capacity })),
        }),
        { minLength: 1, maxLength },
      ),
    )
    .map(([start, raw]) => {
      let at = start;
      return raw.map((r) => ({ at: (at += r.dt), key: r.key, cost: r.cost }));
    });
}

/** A limiter on a hand-driven clock. */
export function driven(policy: PolicyOptions): { limiter: Limiter; at: (t: number) => void } {
  let now = 0;
  const limiter = new Limiter({ policy, clock: () => now });
  return { limiter, at: (t) => (now = t) };
}

/** Plays a trace and returns each step's decision. */
export function play(
  policy: PolicyOptions,
  steps: readonly Step[],
): { decisions: Decision[]; limiter: Limiter; at: (t: number) => void } {
  const d = driven(policy);
  const decisions = steps.map((s) => {
    d.at(s.at);
    return d.limiter.limitSync(s.key, { cost: s.cost });
  });
  return { decisions, ...d };
}

export const limitArb = fc.integer({ min: 1, max: 12 });
export const windowArb = fc.constantFrom(1, 7, 10, 60, 100, 999, 1000, 60_000);

/**
 * Any policy of any algorithm, the shaper included; with `shaperDelay`, the shaper also gets a `delay`
 * (nginx's two-stage mode) so that its delayed band is exercised.
 */
export function policyOptionsArb({ shaperDelay = false }: { shaperDelay?: boolean } = {}): fc.Arbitrary<PolicyOptions> {
  return fc
    .record({
      algorithm: fc.constantFrom<AlgorithmName | 'leaky-bucket-shaper'>(...ALGORITHMS, 'leaky-bucket-shaper'),
      limit: limitArb,
      windowMs: fc.constantFrom(10, 100, 1000, 60_000),
      burst: fc.integer({ min: 1, max: 15 }),
      k: fc.constantFrom(1, 2, 5),
    })
    .map((r): PolicyOptions => {
      switch (r.algorithm) {
        case 'token-bucket':
        case 'gcra':
        case 'leaky-bucket':
          return { algorithm: r.algorithm, limit: r.limit, window: r.windowMs, burst: r.burst };
        case 'leaky-bucket-shaper':
          return {
            algorithm: 'leaky-bucket',
            mode: 'shaper',
            limit: r.limit,
            window: r.windowMs,
            burst: r.burst,
            ...(shaperDelay ? { delay: Math.min(2, r.burst) } : {}),
          };
        case 'sliding-window':
          return { algorithm: 'sliding-window', limit: r.limit, window: r.windowMs, buckets: r.k };
        default:
          return { algorithm: r.algorithm as PolicyOptions['algorithm'], limit: r.limit, window: r.windowMs };
      }
    });
}
