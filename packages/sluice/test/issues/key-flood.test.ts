// Issue 28, finding 4: a key flood reset a victim. MemoryStore({ maxKeys: 1000 }) evicted a denied key to
// make room for fresh attacker keys that each spent their own limit, and the victim was then admitted again
// in the same window. A denying key is now the last to go, and a new key the store has no room for is
// decided by `onFull` with reason 'store-full'.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Limiter, MemoryStore } from '../../src/index.js';
import type { AlgorithmName, PolicyOptions } from '../../src/index.js';

const MAX_KEYS = 1000;
const LIMIT = 10;

const POLICIES: Record<AlgorithmName, PolicyOptions> = {
  'fixed-window': { algorithm: 'fixed-window', limit: LIMIT, window: '1m' },
  'sliding-window': { algorithm: 'sliding-window', limit: LIMIT, window: '1m' },
  'sliding-log': { algorithm: 'sliding-log', limit: LIMIT, window: '1m' },
  'token-bucket': { algorithm: 'token-bucket', limit: LIMIT, window: '1m' },
  gcra: { algorithm: 'gcra', limit: LIMIT, window: '1m' },
  'leaky-bucket': { algorithm: 'leaky-bucket', limit: LIMIT, window: '1m' },
  concurrency: { algorithm: 'concurrency', limit: LIMIT, window: '1m' },
};

for (const [algorithm, policy] of Object.entries(POLICIES)) {
  for (const cost of [1, LIMIT]) {
    test(`a key flood resets a victim: ${algorithm}, cost ${cost}, a denied victim stays denied after 20 x maxKeys fresh keys that each spend their limit`, () => {
      const clock = { now: 1_000_000 };
      const store = new MemoryStore({ maxKeys: MAX_KEYS });
      const limiter = new Limiter({ policy, store, clock: () => clock.now });
      const spend = (key: string) => {
        for (let n = 0; n < LIMIT / cost; n++) limiter.limitSync(key, { cost });
      };
      spend('victim');
      assert.equal(limiter.limitSync('victim', { cost }).allowed, false, 'the victim is denied before the flood');
      for (let i = 0; i < 20 * MAX_KEYS; i++) {
        spend(`attacker:${i}`);
        if (i % 1000 === 999) clock.now += 1; // the flood takes time, far less than a window
      }
      assert.ok(store.size <= MAX_KEYS, `the store holds ${store.size} keys, more than maxKeys`);
      const after = limiter.limitSync('victim', { cost });
      assert.equal(after.allowed, false, 'the victim is still denied');
      assert.equal(after.reason, undefined, 'by its own state, not by a full store');
      assert.ok(store.stats.storeFull > 0, 'new keys found the store full');
    });
  }
}

test("a full store of denying keys answers a new key with reason 'store-full': denied by default, counted", () => {
  const clock = { now: 0 };
  const store = new MemoryStore({ maxKeys: 3 });
  const limiter = new Limiter({
    policy: { algorithm: 'fixed-window', limit: 1, window: '1s' },
    store,
    clock: () => clock.now,
  });
  for (const k of ['a', 'b', 'c']) limiter.limitSync(k);
  const d = limiter.limitSync('d');
  assert.equal(d.allowed, false);
  assert.equal(d.reason, 'store-full');
  assert.ok(
    d.retryAfterMs > 0 && d.retryAfterMs <= 1000,
    `retryAfterMs ${d.retryAfterMs}: when a tracked key stops denying`,
  );
  assert.equal(store.stats.storeFull, 1);
  assert.equal(store.size, 3);
  clock.now += 1000; // every key is idle: room again
  assert.equal(limiter.limitSync('d').allowed, true);
  assert.equal(limiter.limitSync('d').reason, undefined);
});

test("onFull: 'allow' admits a new key the store has no room for, untracked, with reason 'store-full'", () => {
  const store = new MemoryStore({ maxKeys: 2, onFull: 'allow' });
  const limiter = new Limiter({ policy: { algorithm: 'fixed-window', limit: 1, window: '1s' }, store, clock: () => 0 });
  limiter.limitSync('a');
  limiter.limitSync('b');
  const d = limiter.limitSync('c');
  assert.equal(d.allowed, true);
  assert.equal(d.reason, 'store-full');
  assert.equal(store.size, 2);
  assert.equal(limiter.limitSync('a').allowed, false, "'a' kept its denial");
});

test("MemoryStore rejects an onFull that is not 'allow' or 'deny'", () => {
  assert.throws(
    () => new MemoryStore({ onFull: 'drop' as never }),
    /MemoryStore 'onFull' must be 'allow' or 'deny', got "drop"/,
  );
});

test('a live key that is not denying goes before a denying one', () => {
  const store = new MemoryStore({ maxKeys: 2 });
  const limiter = new Limiter({ policy: { algorithm: 'fixed-window', limit: 2, window: '1s' }, store, clock: () => 0 });
  limiter.limitSync('denied', { cost: 2 });
  limiter.limitSync('live', { cost: 1 });
  assert.equal(limiter.limitSync('new').allowed, true);
  assert.equal(limiter.limitSync('denied').allowed, false, 'the denying key was kept');
  assert.equal(limiter.limitSync('live', { cost: 0 }).remaining, 2, "'live' was evicted");
  assert.equal(store.stats.evicted, 1);
});

test('a key flood resets a victim: a banned key (blockFor) stays banned after 20 x maxKeys fresh keys', () => {
  const clock = { now: 1_000_000 };
  const store = new MemoryStore({ maxKeys: MAX_KEYS });
  const limiter = new Limiter({
    policy: { algorithm: 'fixed-window', limit: LIMIT, window: '1s', blockFor: '1h' },
    store,
    clock: () => clock.now,
  });
  for (let n = 0; n <= LIMIT; n++) limiter.limitSync('victim'); // the 11th is denied, which starts the ban
  clock.now += 2000; // its window is long over; only the ban denies now
  assert.equal(limiter.limitSync('victim').allowed, false, 'banned before the flood');
  for (let i = 0; i < 20 * MAX_KEYS; i++) limiter.limitSync(`attacker:${i}`, { cost: LIMIT });
  const after = limiter.limitSync('victim');
  assert.equal(after.allowed, false, 'still banned');
  assert.equal(after.reason, undefined);
});
