// The conformance suite every store runs: the same random traces through the store under test and
// through the reference (the textbook models for admission, the memory store for every decision field),
// plus the facade's operations. Redis and any future store call storeConformance() from their own test.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { Limiter, MemoryStore } from '../../src/index.js';
import type { Decision, PolicyOptions, Store } from '../../src/index.js';
import {
  FixedWindowModel,
  LeakyMeterModel,
  SlidingCounterModel,
  SlidingLogModel,
  TokenBucketModel,
  type Model,
  type Step,
} from '../models.js';
import { traceArb } from '../properties/trace.js';

export interface ConformanceOptions {
  /** fast-check runs per algorithm; a networked store may want fewer. */
  runs?: number;
  /** Called after each trace, e.g. to flush a remote store. */
  cleanup?: () => Promise<void>;
}

/** Every algorithm, with the knobs that change its arithmetic. */
export const conformancePolicies: PolicyOptions[] = [
  { name: 'fw', algorithm: 'fixed-window', limit: 5, window: 1000 },
  { name: 'log', algorithm: 'sliding-log', limit: 5, window: 1000 },
  { name: 'sw1', algorithm: 'sliding-window', limit: 5, window: 1000 },
  { name: 'sw4', algorithm: 'sliding-window', limit: 5, window: 1000, buckets: 4 },
  { name: 'tb', algorithm: 'token-bucket', limit: 5, window: 1000, burst: 3 },
  { name: 'tb-frac', algorithm: 'token-bucket', limit: 3, window: 1000, burst: 7 },
  { name: 'gcra', algorithm: 'gcra', limit: 5, window: 1000, burst: 3 },
  { name: 'meter', algorithm: 'leaky-bucket', limit: 5, window: 1000, burst: 4 },
  { name: 'shaper', algorithm: 'leaky-bucket', mode: 'shaper', limit: 5, window: 1000, burst: 4, delay: 2 },
  { name: 'conc', algorithm: 'concurrency', limit: 3, window: 1000 },
];

function modelFor(p: PolicyOptions): Model | undefined {
  const w = Number(p.window);
  switch (p.algorithm) {
    case 'fixed-window':
      return new FixedWindowModel(p.limit, w);
    case 'sliding-log':
      return new SlidingLogModel(p.limit, w);
    case 'sliding-window':
      return new SlidingCounterModel(p.limit, w, p.buckets ?? 1);
    case 'token-bucket':
      return new TokenBucketModel(p.limit, w, p.burst ?? p.limit);
    case 'leaky-bucket':
      return p.mode === 'shaper' ? undefined : new LeakyMeterModel(p.limit, w, p.burst ?? p.limit);
    default:
      return undefined;
  }
}

/** The decision without its lease id, which is random per limiter. */
const comparable = (d: Decision) => ({ ...d, leaseId: d.leaseId === undefined ? undefined : 'lease' });

export function storeConformance(name: string, makeStore: () => Store, options: ConformanceOptions = {}): void {
  const runs = options.runs ?? 100;

  for (const policy of conformancePolicies) {
    test(`${name}: ${policy.name} decides as the models and as the memory store`, async () => {
      await fc.assert(
        fc.asyncProperty(traceArb(Number(policy.window), policy.burst ?? policy.limit, 30), async (steps: Step[]) => {
          let now = 0;
          const clock = () => now;
          const tested = new Limiter({ policy, store: makeStore(), clock });
          const reference = new Limiter({ policy, store: new MemoryStore(), clock });
          const model = modelFor(policy);
          const keyPrefix = `conf:${Math.random().toString(36).slice(2)}:`;
          try {
            for (const [i, s] of steps.entries()) {
              now = s.at;
              const key = keyPrefix + s.key;
              const got = await tested.limit(key, { cost: s.cost });
              const want = reference.limitSync(key, { cost: s.cost });
              assert.deepEqual(comparable(got), comparable(want), `step ${i} ${JSON.stringify(s)}`);
              if (model !== undefined) assert.equal(got.allowed, model.decide(s.key, s.at, s.cost), `model, step ${i}`);
            }
          } finally {
            await options.cleanup?.();
          }
        }),
        { numRuns: runs },
      );
    });
  }

  test(`${name}: fixed window: a clock stepping back across a boundary does not reopen the window`, async () => {
    let now = 7_000_000;
    const l = new Limiter({
      policy: { algorithm: 'fixed-window', limit: 2, window: 1000 },
      store: makeStore(),
      clock: () => now,
    });
    const key = `back:${Math.random()}`;
    assert.equal((await l.limit(key, { cost: 2 })).allowed, true);
    now -= 1; // the window before
    const back = await l.limit(key);
    assert.deepEqual([back.allowed, back.retryAfterMs], [false, 1000]);
    now += 1001;
    assert.equal((await l.limit(key, { cost: 2 })).allowed, true);
  });

  for (const policy of conformancePolicies) {
    test(`${name}: ${policy.name} decides as the memory store on a clock that steps back`, async () => {
      const w = Number(policy.window);
      const stepArb = fc.record({
        dt: fc.integer({ min: -2 * w, max: 2 * w }),
        cost: fc.integer({ min: 0, max: policy.burst ?? policy.limit }),
      });
      await fc.assert(
        fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 20 }), async (steps) => {
          let now = 9_000_000;
          const clock = () => now;
          const tested = new Limiter({ policy, store: makeStore(), clock });
          const reference = new Limiter({ policy, store: new MemoryStore(), clock });
          const key = `back:${Math.random().toString(36).slice(2)}`;
          try {
            for (const [i, s] of steps.entries()) {
              now += s.dt;
              const got = await tested.limit(key, { cost: s.cost });
              const want = reference.limitSync(key, { cost: s.cost });
              assert.deepEqual(comparable(got), comparable(want), `step ${i} at ${now} ${JSON.stringify(s)}`);
            }
          } finally {
            await options.cleanup?.();
          }
        }),
        { numRuns: Math.max(5, Math.floor(runs / 3)) },
      );
    });
  }

  test(`${name}: several policies on a key are atomic`, async () => {
    let now = 1_000_000;
    const l = new Limiter({
      policies: [
        { name: 'hour', algorithm: 'fixed-window', limit: 6, window: '1h' },
        { name: 'second', algorithm: 'sliding-log', limit: 2, window: '1s' },
        { name: 'bucket', algorithm: 'gcra', limit: 100, window: '1s' },
      ],
      store: makeStore(),
      clock: () => now,
    });
    const key = `atomic:${Math.random()}`;
    const seen: string[] = [];
    for (let s = 0; s < 4; s++) {
      for (let i = 0; i < 3; i++) {
        const d = await l.limit(key);
        seen.push(d.allowed ? '+' : `-${d.policy}`);
      }
      now += 1000;
    }
    // In the third second both deny the third request; 'hour' reports, as its retry is longer.
    assert.equal(seen.join(' '), '+ + -second + + -second + + -hour -hour -hour -hour');
  });

  test(`${name}: get, reset, penalty, reward and release`, async () => {
    let now = 5_000_000;
    const store = makeStore();
    const key = `ops:${Math.random()}`;
    const l = new Limiter({ policy: { algorithm: 'fixed-window', limit: 5, window: '1m' }, store, clock: () => now });
    await l.limit(key, { cost: 2 });
    assert.equal((await l.get(key)).remaining, 3);
    assert.equal((await l.penalty(key, 4)).remaining, 0);
    assert.equal((await l.reward(key, 3)).remaining, 2);
    await l.reset(key);
    assert.equal((await l.get(key)).remaining, 5);
    const c = new Limiter({ policy: { algorithm: 'concurrency', limit: 1, window: '10s' }, store, clock: () => now });
    const lease = await c.limit(key);
    assert.equal((await c.limit(key)).allowed, false);
    assert.equal(await c.release(key, lease.leaseId!), true);
    assert.equal((await c.limit(key)).allowed, true);
    now += 10_000;
    assert.equal((await c.get(key)).remaining, 1, 'an unreleased lease times out');
  });

  test(`${name}: any non-empty string is a key, braces and all`, async () => {
    const l = new Limiter({ policy: { algorithm: 'fixed-window', limit: 1, window: '1m' }, store: makeStore() });
    const keys = ['{user}', 'a{b}c', '}{', '{{}}', 'ключ', '🔑', 'x'.repeat(2048), 'user:42', 'user:42 '];
    for (const k of keys) assert.equal((await l.limit(`${Math.random()}:${k}`)).allowed, true, k);
    const fixed = `same:${Math.random()}:{id}`;
    assert.equal((await l.limit(fixed)).allowed, true);
    assert.equal((await l.limit(fixed)).allowed, false, 'the same key maps to the same state');
  });
}
