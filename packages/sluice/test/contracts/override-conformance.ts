// Per-call limits on any store: random traces that mix calls with and without `limits` on the same keys,
// decided as the reference models decide them with each call's own limit (and burst), and, field for
// field, as the memory store decides them. Memory and Redis run it from their own tests.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { Limiter, MemoryStore } from '../../src/index.js';
import type { Decision, LimitOptions, PolicyOptions, Store } from '../../src/index.js';
import { ConcurrencyModel, FixedWindowModel, GcraModel, SlidingCounterModel, SlidingLogModel } from '../models.js';

const WINDOW = 1000;
/** Limits that divide the window, so that every bucket model is exact. */
const LIMITS = [1, 2, 4, 5, 8, 10, 20];

/** Every algorithm; the buckets with a burst that differs from the limit. */
export const overridePolicies: PolicyOptions[] = [
  { name: 'fw', algorithm: 'fixed-window', limit: 5, window: WINDOW },
  { name: 'log', algorithm: 'sliding-log', limit: 5, window: WINDOW },
  { name: 'sw1', algorithm: 'sliding-window', limit: 5, window: WINDOW },
  { name: 'sw4', algorithm: 'sliding-window', limit: 4, window: WINDOW, buckets: 4 },
  { name: 'tb', algorithm: 'token-bucket', limit: 5, window: WINDOW, burst: 3 },
  { name: 'gcra', algorithm: 'gcra', limit: 4, window: WINDOW, burst: 6 },
  { name: 'meter', algorithm: 'leaky-bucket', limit: 5, window: WINDOW, burst: 4 },
  { name: 'shaper', algorithm: 'leaky-bucket', mode: 'shaper', limit: 5, window: WINDOW, burst: 4, delay: 2 },
  { name: 'conc', algorithm: 'concurrency', limit: 3, window: WINDOW },
];

const isBucket = (p: PolicyOptions) =>
  p.algorithm === 'token-bucket' || p.algorithm === 'gcra' || p.algorithm === 'leaky-bucket';

export interface OverrideStep {
  at: number;
  key: string;
  cost: number;
  /** undefined: the policy's own limit. */
  limit: number | undefined;
  burst: number | undefined;
}

function stepsArb(p: PolicyOptions): fc.Arbitrary<OverrideStep[]> {
  return fc
    .tuple(
      fc.integer({ min: 0, max: 2_000_000_000 }),
      fc.array(
        fc.record({
          dt: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: WINDOW }), fc.integer({ min: 0, max: 3 * WINDOW })),
          key: fc.constantFrom('a', 'b'),
          cost: fc.oneof(fc.constant(1), fc.integer({ min: 0, max: 20 })),
          limit: fc.option(fc.constantFrom(...LIMITS), { nil: undefined, freq: 3 }),
          burst: isBucket(p)
            ? fc.option(fc.integer({ min: 1, max: 12 }), { nil: undefined, freq: 1 })
            : fc.constant(undefined),
        }),
        { minLength: 1, maxLength: 30 },
      ),
    )
    .map(([start, raw]) => {
      let at = start;
      return raw.map((r) => ({
        at: (at += r.dt),
        key: r.key,
        cost: r.cost,
        limit: r.limit,
        burst: r.limit === undefined ? undefined : r.burst,
      }));
    });
}

/** The call's limit and burst as docs/algorithms.md states them: a bucket's burst scales unless given. */
export function callShape(p: PolicyOptions, s: OverrideStep): { limit: number; burst: number } {
  const ownBurst = p.burst ?? p.limit;
  if (s.limit === undefined) return { limit: p.limit, burst: ownBurst };
  if (!isBucket(p)) return { limit: s.limit, burst: s.limit };
  return { limit: s.limit, burst: s.burst ?? Math.max(1, Math.round((ownBurst * s.limit) / p.limit)) };
}

function modelFor(p: PolicyOptions): (key: string, now: number, cost: number, limit: number, burst: number) => boolean {
  switch (p.algorithm) {
    case 'fixed-window': {
      const m = new FixedWindowModel(p.limit, WINDOW);
      return (k, t, c, l) => m.decide(k, t, c, l);
    }
    case 'sliding-log': {
      const m = new SlidingLogModel(p.limit, WINDOW);
      return (k, t, c, l) => m.decide(k, t, c, l);
    }
    case 'sliding-window': {
      const m = new SlidingCounterModel(p.limit, WINDOW, p.buckets ?? 1);
      return (k, t, c, l) => m.decide(k, t, c, l);
    }
    case 'concurrency': {
      const m = new ConcurrencyModel(p.limit, WINDOW);
      return (k, t, c, l) => m.decide(k, t, c, l);
    }
    default: {
      const m = new GcraModel(p.limit, WINDOW, p.burst ?? p.limit);
      return (k, t, c, l, b) => m.decide(k, t, c, l, b);
    }
  }
}

export function options(p: PolicyOptions, s: OverrideStep, cost: number): LimitOptions {
  if (s.limit === undefined) return { cost };
  return { cost, limits: { [p.name!]: s.burst === undefined ? s.limit : { limit: s.limit, burst: s.burst } } };
}

const comparable = (d: Decision) => ({ ...d, leaseId: d.leaseId === undefined ? undefined : 'lease' });

export function overrideConformance(
  name: string,
  makeStore: () => Store,
  runs = 100,
  cleanup?: () => Promise<void>,
): void {
  for (const policy of overridePolicies) {
    test(`${name}: ${policy.name} with per-call limits decides as the model with each call's limit, on state shared with calls without`, async () => {
      await fc.assert(
        fc.asyncProperty(stepsArb(policy), async (steps) => {
          let now = 0;
          const clock = () => now;
          const tested = new Limiter({ policy, store: makeStore(), clock });
          const reference = new Limiter({ policy, store: new MemoryStore(), clock });
          const model = modelFor(policy);
          const prefix = `over:${Math.random().toString(36).slice(2)}:`;
          try {
            for (const [i, s] of steps.entries()) {
              now = s.at;
              const shape = callShape(policy, s);
              const cost = Math.min(s.cost, isBucket(policy) ? shape.burst : shape.limit);
              const got = await tested.limit(prefix + s.key, options(policy, s, cost));
              const want = reference.limitSync(prefix + s.key, options(policy, s, cost));
              assert.equal(got.limit, shape.limit, `step ${i}: the decision reports the call's limit`);
              assert.equal(
                got.allowed,
                model(s.key, s.at, cost, shape.limit, shape.burst),
                `model, step ${i} ${JSON.stringify(s)}`,
              );
              if (makeStore !== memory)
                assert.deepEqual(comparable(got), comparable(want), `memory store, step ${i} ${JSON.stringify(s)}`);
            }
          } finally {
            await cleanup?.();
          }
        }),
        { numRuns: runs },
      );
    });
  }
}

export const memory = () => new MemoryStore();

/** Several policies on a key, some overridden per call and some not, with a ban among them. */
export function overrideSeveralConformance(name: string, makeStore: () => Store, runs = 50): void {
  const policies: PolicyOptions[] = [
    { name: 'tb', algorithm: 'token-bucket', limit: 5, window: WINDOW, burst: 3 },
    { name: 'fw', algorithm: 'fixed-window', limit: 8, window: 4 * WINDOW, blockFor: 1500 },
    { name: 'log', algorithm: 'sliding-log', limit: 6, window: 2 * WINDOW },
  ];
  test(`${name}: several policies with per-call limits on some decide as the memory store`, async () => {
    await fc.assert(
      fc.asyncProperty(
        stepsArb(policies[0]!),
        fc.array(fc.constantFrom('tb', 'fw', 'log'), { minLength: 30, maxLength: 30 }),
        async (steps, which) => {
          let now = 0;
          const clock = () => now;
          const tested = new Limiter({ policies, store: makeStore(), clock });
          const reference = new Limiter({ policies, store: new MemoryStore(), clock });
          const prefix = `over-several:${Math.random().toString(36).slice(2)}:`;
          for (const [i, s] of steps.entries()) {
            now = s.at;
            const limits = s.limit === undefined ? undefined : { [which[i]!]: s.limit };
            const cost = Math.min(s.cost, 1);
            const got = await tested.limit(prefix + s.key, { cost, limits });
            const want = reference.limitSync(prefix + s.key, { cost, limits });
            assert.deepEqual(comparable(got), comparable(want), `step ${i} ${JSON.stringify({ ...s, limits })}`);
          }
        },
      ),
      { numRuns: runs },
    );
  });
}
