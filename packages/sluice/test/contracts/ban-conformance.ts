// Bans (blockFor) on any store: random traces through each algorithm with a ban, fixed or growing, decided
// as the ban model around the algorithm's reference model decides them, with `blocked` and the ban's
// retryAfterMs, and field for field as the memory store decides them. Memory and Redis run it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { Limiter, MemoryStore } from '../../src/index.js';
import type { Decision, PolicyOptions, Store } from '../../src/index.js';
import {
  BanModel,
  FixedWindowModel,
  GcraModel,
  SlidingCounterModel,
  SlidingLogModel,
  TokenBucketModel,
} from '../models.js';

const WINDOW = 1000;
const fixed = { blockFor: 2500 };
const growing = { blockFor: { duration: 1500, factor: 2, max: 10_000, decay: 4000 } };
const tripling = { blockFor: { duration: '1s', factor: 3, max: '20s' } };

export const banPolicies: PolicyOptions[] = [
  { name: 'fw', algorithm: 'fixed-window', limit: 4, window: WINDOW, ...fixed },
  { name: 'fw-grow', algorithm: 'fixed-window', limit: 3, window: WINDOW, ...growing },
  { name: 'log', algorithm: 'sliding-log', limit: 4, window: WINDOW, ...growing },
  { name: 'sw', algorithm: 'sliding-window', limit: 4, window: WINDOW, buckets: 2, ...tripling },
  { name: 'tb', algorithm: 'token-bucket', limit: 5, window: WINDOW, burst: 3, ...growing },
  { name: 'gcra', algorithm: 'gcra', limit: 4, window: WINDOW, burst: 2, ...fixed },
  { name: 'meter', algorithm: 'leaky-bucket', limit: 5, window: WINDOW, burst: 4, ...tripling },
  {
    name: 'shaper',
    algorithm: 'leaky-bucket',
    mode: 'shaper',
    limit: 5,
    window: WINDOW,
    burst: 4,
    delay: 2,
    ...growing,
  },
];

function banOf(p: PolicyOptions): { durationMs: number; factor: number; maxMs: number; decayMs: number } {
  const b = p.blockFor!;
  if (typeof b === 'number') return { durationMs: b, factor: 1, maxMs: b, decayMs: b };
  if (typeof b === 'string') throw new Error('give numbers or objects here');
  const ms = (v: number | string | undefined) => (typeof v === 'string' ? Number(v.replace('s', '')) * 1000 : v);
  const maxMs = ms(b.max)!;
  return { durationMs: ms(b.duration)!, factor: b.factor ?? 2, maxMs, decayMs: ms(b.decay) ?? maxMs };
}

function innerModel(p: PolicyOptions): (key: string, now: number, cost: number) => boolean {
  switch (p.algorithm) {
    case 'fixed-window': {
      const m = new FixedWindowModel(p.limit, WINDOW);
      return (k, t, c) => m.decide(k, t, c);
    }
    case 'sliding-log': {
      const m = new SlidingLogModel(p.limit, WINDOW);
      return (k, t, c) => m.decide(k, t, c);
    }
    case 'sliding-window': {
      const m = new SlidingCounterModel(p.limit, WINDOW, p.buckets ?? 1);
      return (k, t, c) => m.decide(k, t, c);
    }
    case 'token-bucket': {
      const m = new TokenBucketModel(p.limit, WINDOW, p.burst ?? p.limit);
      return (k, t, c) => m.decide(k, t, c);
    }
    default: {
      const m = new GcraModel(p.limit, WINDOW, p.burst ?? p.limit);
      return (k, t, c) => m.decide(k, t, c);
    }
  }
}

function stepsArb(capacity: number): fc.Arbitrary<{ at: number; key: string; cost: number }[]> {
  return fc
    .tuple(
      fc.integer({ min: 0, max: 2_000_000_000 }),
      fc.array(
        fc.record({
          dt: fc.oneof(
            fc.constant(0),
            fc.integer({ min: 0, max: 400 }),
            fc.integer({ min: 0, max: 6000 }),
            fc.constantFrom(1500, 2500, 3000, 4000),
          ),
          key: fc.constantFrom('a', 'b'),
          cost: fc.oneof(fc.constant(1), fc.integer({ min: 0, max: capacity })),
        }),
        { minLength: 1, maxLength: 40 },
      ),
    )
    .map(([start, raw]) => {
      let at = start;
      return raw.map((r) => ({ at: (at += r.dt), key: r.key, cost: r.cost }));
    });
}

const comparable = (d: Decision) => ({ ...d, leaseId: d.leaseId === undefined ? undefined : 'lease' });

export function banConformance(name: string, makeStore: () => Store, runs = 100, cleanup?: () => Promise<void>): void {
  for (const policy of banPolicies) {
    test(`${name}: ${policy.name} with blockFor bans as the model: denied, blocked, for as long as it says`, async () => {
      await fc.assert(
        fc.asyncProperty(stepsArb(policy.burst ?? policy.limit), async (steps) => {
          let now = 0;
          const clock = () => now;
          const store = makeStore();
          const tested = new Limiter({ policy, store, clock });
          const reference = new Limiter({ policy, store: new MemoryStore(), clock });
          const model = new BanModel(innerModel(policy), banOf(policy));
          const prefix = `ban:${Math.random().toString(36).slice(2)}:`;
          try {
            for (const [i, s] of steps.entries()) {
              now = s.at;
              const got = await tested.limit(prefix + s.key, { cost: s.cost });
              const want = model.decide(s.key, s.at, s.cost);
              const where = `step ${i} ${JSON.stringify(s)}`;
              assert.equal(got.allowed, want.allowed, `allowed, ${where}`);
              assert.equal(got.blocked, want.blocked, `blocked, ${where}`);
              if (want.blocked)
                assert.ok(
                  got.retryAfterMs >= want.end - s.at,
                  `retryAfterMs ${got.retryAfterMs} covers the ban to ${want.end}, ${where}`,
                );
              if (store instanceof MemoryStore) continue;
              assert.deepEqual(
                comparable(got),
                comparable(reference.limitSync(prefix + s.key, { cost: s.cost })),
                `memory store, ${where}`,
              );
            }
          } finally {
            await cleanup?.();
          }
        }),
        { numRuns: runs },
      );
    });
  }

  test(`${name}: a retry at a ban's retryAfterMs passes, and a millisecond earlier is still banned`, async () => {
    let now = 3_000_000;
    const l = new Limiter({
      policy: { name: 'p', algorithm: 'fixed-window', limit: 2, window: '1s', blockFor: '1m' },
      store: makeStore(),
      clock: () => now,
    });
    const key = `ban-retry:${Math.random()}`;
    await l.limit(key, { cost: 2 });
    const first = await l.limit(key);
    assert.deepEqual([first.allowed, first.blocked, first.retryAfterMs], [false, true, 60_000]);
    now += 30_000;
    const during = await l.limit(key, { cost: 0 });
    assert.deepEqual(
      [during.allowed, during.blocked, during.retryAfterMs, during.remaining],
      [false, true, 30_000, 0],
      'a peek sees the ban',
    );
    now += 29_999;
    assert.equal((await l.limit(key)).blocked, true);
    now += 1;
    const after = await l.limit(key);
    assert.deepEqual([after.allowed, after.blocked], [true, false]);
  });

  test(`${name}: bans grow by the factor, stop at the cap, and are forgotten one per decay`, async () => {
    let now = 4_000_000;
    const l = new Limiter({
      policy: {
        name: 'p',
        algorithm: 'fixed-window',
        limit: 1,
        window: '1s',
        blockFor: { duration: '10s', factor: 3, max: '60s', decay: '1h' },
      },
      store: makeStore(),
      clock: () => now,
    });
    const key = `ban-grow:${Math.random()}`;
    const bans: number[] = [];
    for (let i = 0; i < 5; i++) {
      assert.equal((await l.limit(key)).allowed, true);
      const d = await l.limit(key);
      bans.push(d.retryAfterMs);
      now += d.retryAfterMs;
    }
    assert.deepEqual(bans, [10_000, 30_000, 60_000, 60_000, 60_000]);
    now += 2 * 3_600_000; // two of the three remembered bans forgotten
    assert.equal((await l.limit(key)).allowed, true);
    assert.equal((await l.limit(key)).retryAfterMs, 30_000);
  });

  test(`${name}: with several policies, a ban of one denies the key, and only the banning policy bans`, async () => {
    let now = 5_000_000;
    const l = new Limiter({
      policies: [
        { name: 'burst', algorithm: 'token-bucket', limit: 2, window: '1s' },
        { name: 'hour', algorithm: 'fixed-window', limit: 5, window: '1h', blockFor: '2h' },
      ],
      store: makeStore(),
      clock: () => now,
    });
    const key = `ban-multi:${Math.random()}`;
    assert.equal((await l.limit(key, { cost: 2 })).allowed, true);
    const byBurst = await l.limit(key);
    assert.deepEqual(
      [byBurst.allowed, byBurst.blocked, byBurst.policy],
      [false, false, 'burst'],
      'the bucket denies, no ban',
    );
    now += 1000;
    assert.equal((await l.limit(key, { cost: 2 })).allowed, true);
    now += 1000;
    assert.equal((await l.limit(key, { cost: 1 })).allowed, true);
    const byHour = await l.limit(key, { cost: 1 });
    assert.deepEqual(
      [byHour.allowed, byHour.blocked, byHour.policy, byHour.retryAfterMs],
      [false, true, 'hour', 7_200_000],
    );
    now += 7_199_999;
    assert.equal((await l.limit(key)).blocked, true, 'the ban outlasts the hour');
    now += 1;
    assert.equal((await l.limit(key)).allowed, true);
  });
}
