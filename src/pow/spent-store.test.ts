// The memory spent store: once per id, forgets at expiry, sweeps without timers, refuses when full.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemorySpentStore } from './spent-store.js';

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
