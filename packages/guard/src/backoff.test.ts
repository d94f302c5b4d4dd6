import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { backoffMs } from './backoff.js';

const schedule = { freeFailures: 3, baseMs: 1000, maxMs: 900_000, jitter: 0.25 };

test('free failures wait nothing; then 1 s doubling, capped', () => {
  const waits = [1, 2, 3, 4, 5, 6, 7, 13, 14, 15, 200].map((n) => backoffMs({ ...schedule, jitter: 0 }, n, 0.99));
  assert.deepEqual(waits, [0, 0, 0, 1000, 2000, 4000, 8000, 512_000, 900_000, 900_000, 900_000]);
});

test('property: the wait lies in [w, w·(1 + jitter)) and never shrinks with more failures', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 2000 }),
      fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
      (n, r) => {
        const w = n <= 3 ? 0 : Math.min(900_000, 1000 * 2 ** (n - 4));
        const got = backoffMs(schedule, n, r);
        assert.ok(got >= w && (w === 0 ? got === 0 : got < w * 1.25 + 1), `${n} ${r} ${got}`);
        assert.ok(backoffMs(schedule, n + 1, 0) >= backoffMs(schedule, n, 0));
      },
    ),
  );
});
