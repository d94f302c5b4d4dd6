// The default coarse clock: monotonic, refreshed by its 1 ms tick or after 64 reads, whichever is first.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { coarseClock, monotonicClock } from './clock.js';

test('coarse clock: one reading serves at most 64 decisions, and a tick forces a fresh one', (t) => {
  t.mock.timers.enable({ apis: ['setInterval'] });
  let fake = 10_000_000;
  t.mock.method(performance, 'now', () => fake);
  const origin = performance.timeOrigin;

  assert.equal(coarseClock(), origin + 10_000_000); // the first read starts the (mocked) ticker
  fake = 10_000_500;
  const served = Array.from({ length: 63 }, () => coarseClock());
  assert.ok(
    served.every((v) => v === origin + 10_000_000),
    'the next 63 reads reuse the reading',
  );
  assert.equal(coarseClock(), origin + 10_000_500, 'the 64th read refreshes');

  fake = 10_000_501;
  assert.equal(coarseClock(), origin + 10_000_500);
  t.mock.timers.tick(1);
  assert.equal(coarseClock(), origin + 10_000_501, 'after a tick the next read refreshes');
});

test('both clocks read performance.now() on the Performance object, so mocking that method reaches them', (t) => {
  t.mock.method(performance, 'now', () => 20_000_000);
  assert.equal(monotonicClock(), performance.timeOrigin + 20_000_000);
});
