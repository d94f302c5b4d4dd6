// The memory spent store: once per id, forgets at expiry, sweeps without timers, refuses when full.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FULL_SWEEP_STEP, MemorySpentStore } from './spent-store.js';

test('an id is spent once until it expires, then may be spent again', () => {
  const s = new MemorySpentStore();
  assert.equal(s.spend('a', 100, 0), true);
  assert.equal(s.spend('a', 100, 99), false);
  assert.equal(s.spend('a', 200, 100), true); // expired at 100: the old record is gone
});

test('expired ids are swept as new ones arrive', () => {
  const s = new MemorySpentStore();
  for (let i = 0; i < 100; i++) s.spend(`old${i}`, 10, 0);
  for (let i = 0; i < 50; i++) s.spend(`new${i}`, 1000, 20);
  assert.ok(s.size <= 100, `size ${s.size}`); // each spend drops up to two expired ids
  s.sweep(20);
  assert.equal(s.size, 50);
});

test('a full store sweeps, then refuses rather than forget a live id', () => {
  const s = new MemorySpentStore({ maxEntries: 3 });
  assert.equal(s.spend('a', 1000, 0), true);
  assert.equal(s.spend('b', 5, 0), true);
  assert.equal(s.spend('c', 1000, 0), true);
  assert.equal(s.spend('d', 1000, 10), true); // 'b' expired and made room
  assert.equal(s.spend('e', 1000, 10), false);
  assert.equal(s.spend('a', 1000, 10), false); // still remembered
  assert.throws(() => new MemorySpentStore({ maxEntries: 0 }), /'maxEntries' must be a positive integer, got 0/);
});

/**
 * Counts the steps of every Map iterator while `f` runs: the work a spend does on the store's map, whatever
 * the code that walks it (for..of and explicit iterators both call next).
 */
function mapSteps(f: () => void): number {
  const proto = Object.getPrototypeOf(new Map().entries()) as { next: (...a: unknown[]) => unknown };
  const next = proto.next;
  let steps = 0;
  proto.next = function (this: unknown, ...a: unknown[]) {
    steps++;
    return next.apply(this, a);
  };
  try {
    f();
  } finally {
    proto.next = next;
  }
  return steps;
}

// Issue #37 finding 9: full at 1 M live entries, every spend swept the whole map (14.5 ms a spend).
test('full spent store sweep is bounded: a spend on a store full of live ids looks at a bounded number of entries', () => {
  const n = 20_000;
  const s = new MemorySpentStore({ maxEntries: n });
  for (let i = 0; i < n; i++) s.spend(`live${i}`, 1_000_000, 0);
  const spends = 100;
  const steps = mapSteps(() => {
    for (let i = 0; i < spends; i++) assert.equal(s.spend(`new${i}`, 1_000_000, 1), false);
  });
  assert.ok(steps <= spends * (FULL_SWEEP_STEP + 4), `${steps} map steps for ${spends} spends on a full store of ${n}`);
});

test('a full spent store still finds an expired id behind live ones, within size / FULL_SWEEP_STEP spends', () => {
  const n = 5000;
  const s = new MemorySpentStore({ maxEntries: n });
  // Live ids first, so the oldest-two look never reaches the expired one at the end.
  for (let i = 0; i < n - 1; i++) s.spend(`live${i}`, 1_000_000, 0);
  s.spend('short', 10, 0);
  let accepted = 0;
  for (let i = 0; i < Math.ceil(n / FULL_SWEEP_STEP) + 1; i++) if (s.spend(`new${i}`, 1_000_000, 20)) accepted++;
  assert.equal(accepted, 1, 'the one expired id made room for exactly one new id');
  assert.equal(s.spend('live0', 1_000_000, 20), false, 'a live id is never forgotten');
});
