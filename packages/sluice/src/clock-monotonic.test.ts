// The coarse clock on the real monotonic clock (its own file: clock.test.ts mocks time in-process).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { coarseClock, monotonicClock } from './clock.js';

test('coarse clock never runs backwards and stays within 64 reads of the monotonic clock', () => {
  let last = -Infinity;
  for (let i = 0; i < 100_000; i++) {
    const v = coarseClock();
    assert.ok(v >= last);
    last = v;
  }
  assert.ok(monotonicClock() >= last);
});
