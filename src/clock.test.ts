// The default coarse clock: monotonic, refreshed by its 1 ms tick or after 64 reads, whichever is first.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { coarseClock, monotonicClock } from './clock.js';

// The real-clock test runs first: the mocked one leaves a reading from a fake future behind.
test('coarse clock never runs backwards and stays within 64 reads of the monotonic clock', () => {
  let last = -Infinity;
  for (let i = 0; i < 100_000; i++) {
    const v = coarseClock();
    assert.ok(v >= last);
    last = v;
  }
  assert.ok(monotonicClock() >= last);
});

test('coarse clock: one reading serves at most 64 decisions, and a tick forces a fresh one', (t) => {
  t.mock.timers.enable({ apis: ['setInterval'] });
  let fake = 1_000;
  t.mock.method(performance, 'now', () => fake);
  const origin = performance.timeOrigin;

  assert.equal(coarseClock(), origin + 1_000); // first read starts the ticker
  fake = 1_500;
  const served = Array.from({ length: 63 }, () => coarseClock());
  assert.ok(served.every((v) => v === origin + 1_000), 'the next 63 reads reuse the reading');
  assert.equal(coarseClock(), origin + 1_500, 'the 64th read refreshes');

  fake = 1_501;
  assert.equal(coarseClock(), origin + 1_500);
  t.mock.timers.tick(1);
  assert.equal(coarseClock(), origin + 1_501, 'after a tick the next read refreshes');
});
