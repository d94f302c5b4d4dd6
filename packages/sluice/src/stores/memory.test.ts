// The memory store is bounded: idle state goes first, then the key closest to idle; and expired state is
// reclaimed as new keys arrive, with no timer per key.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Limiter, MemoryStore, SluiceError } from '../index.js';

function setup(maxKeys: number) {
  const clock = { now: 1_000_000 };
  const store = new MemoryStore({ maxKeys });
  const limiter = new Limiter({
    policy: { algorithm: 'fixed-window', limit: 1, window: '1s' },
    store,
    clock: () => clock.now,
  });
  return { clock, store, limiter };
}

test('eviction at maxKeys takes an idle key before any active one', () => {
  const { clock, store, limiter } = setup(3);
  limiter.limitSync('old');
  clock.now += 1_000; // 'old' is idle from here
  limiter.limitSync('a');
  limiter.limitSync('b');
  limiter.limitSync('c');
  assert.equal(store.size, 3);
  assert.equal(limiter.limitSync('a').allowed, false, "'a' kept its state");
  assert.equal(limiter.limitSync('b').allowed, false, "'b' kept its state");
  assert.equal(limiter.limitSync('c').allowed, false, "'c' kept its state");
});

test('with no idle key, eviction takes the key closest to idle', () => {
  const clock = { now: 0 };
  const store = new MemoryStore({ maxKeys: 2 });
  const limiter = new Limiter({
    policy: { algorithm: 'token-bucket', limit: 10, window: '10s' },
    store,
    clock: () => clock.now,
  });
  limiter.limitSync('heavy', { cost: 10 }); // full again in 10 s
  limiter.limitSync('light', { cost: 1 }); // full again in 1 s
  limiter.limitSync('new', { cost: 1 });
  assert.equal(store.size, 2);
  assert.equal(limiter.limitSync('heavy').allowed, false, "'heavy' was kept");
  assert.equal(limiter.limitSync('light', { cost: 0 }).remaining, 10, "'light' was evicted");
});

test('a flood of distinct keys stays within maxKeys', () => {
  const { clock, store, limiter } = setup(1_000);
  for (let i = 0; i < 20_000; i++) {
    limiter.limitSync(`flood:${i}`);
    if (i % 100 === 0) clock.now += 1;
  }
  assert.equal(store.size, 1_000);
});

test('expired state is reclaimed as new keys arrive, without timers', () => {
  const { clock, store, limiter } = setup(100_000);
  for (let i = 0; i < 1_000; i++) limiter.limitSync(`early:${i}`);
  clock.now += 5_000; // every early key is idle now
  for (let i = 0; i < 600; i++) limiter.limitSync(`late:${i}`);
  // each insert sweeps two entries, so 600 inserts have walked all 1000 early keys
  assert.equal(store.size, 600);
});

test('sweep() drops every idle key now', () => {
  const { clock, store, limiter } = setup(100);
  for (let i = 0; i < 10; i++) limiter.limitSync(`k${i}`);
  clock.now += 999;
  assert.equal(store.sweep(), 0);
  clock.now += 1;
  assert.equal(store.sweep(), 10);
  assert.equal(store.size, 0);
});

test('a peek or a rejection never creates a key', () => {
  const { store, limiter } = setup(10);
  limiter.limitSync('ghost', { cost: 0 });
  assert.equal(store.size, 0);
});

test('bad maxKeys is refused', () => {
  for (const maxKeys of [0, -1, 1.5, NaN]) {
    assert.throws(
      () => new MemoryStore({ maxKeys }),
      (e: unknown) => e instanceof SluiceError && /'maxKeys' must be a positive integer/.test(e.message),
    );
  }
});

test('rows freed by eviction are reused clean', () => {
  const clock = { now: 0 };
  const store = new MemoryStore({ maxKeys: 2 });
  const limiter = new Limiter({
    policies: [
      { name: 'log', algorithm: 'sliding-log', limit: 2, window: '1s' },
      { name: 'bucket', algorithm: 'token-bucket', limit: 2, window: '1s' },
    ],
    store,
    clock: () => clock.now,
  });
  // Half spent, so neither denies and either may go (a denying key would be kept).
  limiter.limitSync('a', { cost: 1 });
  limiter.limitSync('b', { cost: 1 });
  limiter.limitSync('c', { cost: 1 }); // evicts one of a, b
  const fresh = ['a', 'b'].filter((k) => limiter.limitSync(k, { cost: 0 }).remaining === 2);
  assert.equal(fresh.length, 1, 'exactly one of a, b was evicted, and reads as unused');
  assert.equal(limiter.limitSync('c', { cost: 0 }).remaining, 1);
});

// Issue #37 finding 4: a table per rule, each with a slab of 1024 rows, made 50,000 rules hold about 1 GB.
test('a table per rule preallocates little: 10,000 limiters on one memory store hold under 20 MB of slabs', async () => {
  const store = new MemoryStore();
  const before = process.memoryUsage().arrayBuffers;
  const limiters = [];
  for (let i = 0; i < 10_000; i++)
    limiters.push(
      new Limiter({ policy: { name: `rule${i}`, algorithm: 'sliding-window', limit: 100, window: 60_000 }, store }),
    );
  const held = process.memoryUsage().arrayBuffers - before;
  assert.equal(limiters.length, 10_000);
  assert.ok(held < 20 * 1024 * 1024, `${(held / 1024 / 1024).toFixed(1)} MB of slabs for 10,000 empty tables`);
  assert.equal((await limiters[9_999]!.limit('k')).allowed, true);
});
