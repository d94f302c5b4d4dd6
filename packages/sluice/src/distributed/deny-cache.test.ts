// The deny cache never admits what the atomic strategy would deny: random traces on every algorithm it
// accepts, the same clock for both, decisions compared one by one; and denied keys cost no store calls.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { Limiter, MemoryStore, SluiceError } from '../index.js';
import type { PolicyOptions, Store, StoreTable, TableSpec } from '../index.js';
import { DeniedKeys, type DenyCacheTable } from './deny-cache.js';

/** A MemoryStore that counts the calls its table gets. */
class CountingStore implements Store {
  calls = 0;
  private readonly inner = new MemoryStore();
  bind(spec: TableSpec): StoreTable {
    const t = this.inner.bind(spec);
    const count =
      <A extends unknown[], R>(f: (...a: A) => R) =>
      (...a: A): R => (this.calls++, f(...a));
    return {
      sync: t.sync,
      decide: count(t.decide.bind(t)),
      adjust: count(t.adjust.bind(t)),
      release: count(t.release.bind(t)),
      reset: count(t.reset.bind(t)),
    };
  }
}

const policies: PolicyOptions[] = [
  { algorithm: 'fixed-window', limit: 5, window: 100 },
  { algorithm: 'sliding-log', limit: 5, window: 100 },
  { algorithm: 'sliding-window', limit: 5, window: 100 },
  { algorithm: 'sliding-window', limit: 7, window: 100, buckets: 4 },
  { algorithm: 'token-bucket', limit: 5, window: 100, burst: 3 },
  { algorithm: 'gcra', limit: 5, window: 100, burst: 2 },
  { algorithm: 'leaky-bucket', limit: 5, window: 100 },
  { algorithm: 'leaky-bucket', limit: 5, window: 100, mode: 'shaper', delay: 2 },
];

const op = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant('limit' as const),
      key: fc.constantFrom('a', 'b'),
      cost: fc.integer({ min: 0, max: 2 }),
      dt: fc.integer({ min: 0, max: 40 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constantFrom('reward' as const, 'penalty' as const, 'reset' as const),
      key: fc.constantFrom('a', 'b'),
      cost: fc.integer({ min: 1, max: 3 }),
      dt: fc.integer({ min: 0, max: 40 }),
    }),
  },
);

test('the deny cache decides every request as the atomic strategy does', async () => {
  for (const policy of policies) {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 120 }), async (ops) => {
        let now = 1_000;
        const clock = () => now;
        const atomic = new Limiter({ policy, clock });
        const cached = new Limiter({ policy, clock, denyCache: { maxKeys: 1 } }); // 1 key: eviction is exercised too
        for (const o of ops) {
          now += o.dt;
          if (o.kind === 'limit') {
            const [x, y] = [await atomic.limit(o.key, { cost: o.cost }), await cached.limit(o.key, { cost: o.cost })];
            assert.equal(y.allowed, x.allowed, `${policy.algorithm} at ${now}: ${o.key} cost ${o.cost}`);
            if (!y.allowed)
              assert.ok(y.retryAfterMs <= x.retryAfterMs, 'a cached retryAfterMs is never later than the store says');
          } else if (o.kind === 'reset') {
            await atomic.reset(o.key);
            await cached.reset(o.key);
          } else {
            await atomic[o.kind](o.key, o.cost);
            await cached[o.kind](o.key, o.cost);
          }
        }
      }),
      { seed: 4, numRuns: 150 },
    );
  }
});

test('a denied key is answered with zero store calls until retryAfterMs passes', async () => {
  let now = 0;
  const store = new CountingStore();
  const l = new Limiter({
    policy: { algorithm: 'fixed-window', limit: 2, window: 1000 },
    store,
    clock: () => now,
    denyCache: true,
  });
  await l.limit('k');
  await l.limit('k');
  const first = await l.limit('k');
  assert.equal(first.allowed, false);
  assert.equal(store.calls, 3);
  now = 400;
  for (let i = 0; i < 1000; i++) assert.equal((await l.limit('k')).allowed, false);
  assert.equal(store.calls, 3, 'no store call while the denial holds');
  assert.equal((await l.limit('k')).retryAfterMs, 600);
  now = 1000;
  assert.equal((await l.limit('k')).allowed, true);
  assert.equal(store.calls, 4);
  assert.equal((l.table as DenyCacheTable).hits, 1001);
});

test('the deny cache holds at most maxKeys keys and refuses concurrency policies', async () => {
  const l = new Limiter({
    policy: { algorithm: 'fixed-window', limit: 1, window: 1000 },
    clock: () => 0,
    denyCache: { maxKeys: 3 },
  });
  for (let i = 0; i < 10; i++) {
    await l.limit(`k${i}`);
    await l.limit(`k${i}`);
  }
  assert.equal((l.table as DenyCacheTable).size, 3);
  assert.throws(
    () => new Limiter({ policy: { algorithm: 'concurrency', limit: 1, window: 1000 }, denyCache: true }),
    (e: unknown) =>
      e instanceof SluiceError && /'denyCache' cannot be used with the concurrency policy/.test(e.message),
  );
  assert.throws(
    () => new Limiter({ policy: { algorithm: 'gcra', limit: 1, window: 1000 }, denyCache: { maxKeys: 0 } }),
    /'denyCache.maxKeys' must be a positive integer, got 0/,
  );
  assert.throws(
    () => new Limiter({ policy: { algorithm: 'gcra', limit: 1, window: 1000 }, strategy: 'central' as never }),
    /'strategy' must be one of 'atomic', 'local-sync', 'lease', 'regions', got "central"/,
  );
  assert.throws(
    () => new Limiter({ policy: { algorithm: 'gcra', limit: 1, window: 1000 }, strategy: 'lease' }),
    /strategy "lease" needs a RedisStore/,
  );
});

// DeniedKeys is also the service's local cache (server/service.ts), keyed by rule and key, cleared when full.
test('a refusal is repeated until its retry time, for requests at least as heavy', () => {
  const c = new DeniedKeys(100_000, 'start-again');
  const wait = (key: string, cost: number, now: number) => {
    const d = c.covering(key, cost, now);
    return d === undefined ? 0 : d.until - now;
  };
  c.remember('rule\u0000k', { until: 1_000, cost: 3 });
  assert.equal(wait('rule\u0000k', 3, 400), 600);
  assert.equal(wait('rule\u0000k', 5, 400), 600);
  assert.equal(wait('rule\u0000k', 2, 400), 0, 'a lighter request may pass: ask the store');
  assert.equal(wait('other\u0000k', 3, 400), 0, 'rules do not share refusals');
  assert.equal(wait('rule\u0000k', 3, 1_000), 0, 'expired at the retry time');
  assert.equal(c.size, 0, 'and forgotten');
});

test('bounded: at maxEntries it starts again rather than grow', () => {
  const c = new DeniedKeys(3, 'start-again');
  for (let i = 0; i < 3; i++) c.remember(`r\u0000k${i}`, { until: 100, cost: 1 });
  assert.equal(c.size, 3);
  c.remember('r\u0000k3', { until: 100, cost: 1 });
  assert.equal(c.size, 1);
  assert.equal(c.covering('r\u0000k3', 1, 0)?.until, 100);
});
