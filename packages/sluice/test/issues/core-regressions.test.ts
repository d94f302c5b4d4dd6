// Regression tests, each named after the bug it pins (found by the property tests while building the core).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Limiter } from '../../src/index.js';
import type { PolicyOptions } from '../../src/index.js';

function at(policy: PolicyOptions) {
  const clock = { now: 0 };
  return { clock, limiter: new Limiter({ policy, clock: () => clock.now }) };
}

test('gcra denied a request at an exact tie because its float TAT rounded up (limit 3, window 1 ms, burst 5)', () => {
  const { clock, limiter } = at({ algorithm: 'gcra', limit: 3, window: 1, burst: 5 });
  clock.now = 7;
  assert.equal(limiter.limitSync('a', { cost: 4 }).allowed, true);
  // 4/3 + 1/3 ms of queue is exactly the 5/3 ms burst: the token bucket admits it, so must GCRA.
  assert.equal(limiter.limitSync('a', { cost: 1 }).allowed, true);
  assert.equal(limiter.limitSync('a', { cost: 1 }).allowed, false);
});

test('the shaper reported remaining 4 but admitted only 3 (float TAT drift over back-to-back requests)', () => {
  const { clock, limiter } = at({ algorithm: 'leaky-bucket', mode: 'shaper', limit: 3, window: 10, burst: 6 });
  clock.now = 19;
  const first = limiter.limitSync('a', { cost: 2 });
  assert.equal(first.remaining, 4);
  for (let i = 0; i < 4; i++) assert.equal(limiter.limitSync('a').allowed, true, `request ${i + 1} of 4`);
  assert.equal(limiter.limitSync('a').allowed, false);
});

test('a denial never says retry after 0 ms, even when a float tie caused it', () => {
  const { clock, limiter } = at({ algorithm: 'gcra', limit: 7, window: 100, burst: 15 });
  clock.now = 1_073_741_459;
  for (let i = 0; i < 40; i++) {
    const d = limiter.limitSync('a');
    if (!d.allowed) assert.ok(d.retryAfterMs >= 1, `retryAfterMs ${d.retryAfterMs}`);
    clock.now += i % 3;
  }
});

test('fixed window reported negative remaining after a penalty pushed it past the limit', async () => {
  const { limiter } = at({ algorithm: 'fixed-window', limit: 5, window: '1m' });
  const d = await limiter.penalty('k', 12);
  assert.equal(d.remaining, 0);
  assert.equal(d.allowed, false);
});

test('a peek (cost 0) on a concurrency policy handed out a lease id', () => {
  const { limiter } = at({ algorithm: 'concurrency', limit: 1, window: '1s' });
  assert.equal(limiter.limitSync('k', { cost: 0 }).leaseId, undefined);
  assert.deepEqual(limiter.limitSync('k', { cost: 0 }), limiter.limitSync('k', { cost: 0 }));
});

test('gcra admitted requests without bound at 1e9 per minute (each step was below the float resolution of its TAT)', () => {
  assert.throws(
    () => at({ algorithm: 'gcra', limit: 1e9, window: '1m', burst: 1000 }),
    /gcra resolves at most 64 requests per ms per key, got 'limit' 1000000000 per 'window' 60000 ms; use token-bucket/,
  );
  // At the fastest rate it accepts, a burst admits exactly its size at epoch magnitude.
  const { clock, limiter } = at({ algorithm: 'gcra', limit: 64_000, window: '1s', burst: 1000 });
  clock.now = 1_800_000_000_000;
  let admitted = 0;
  while (limiter.limitSync('a').allowed && admitted < 2000) admitted++;
  assert.equal(admitted, 1000);
  const token = at({ algorithm: 'token-bucket', limit: 1e9, window: '1m', burst: 1000 });
  token.clock.now = 1_800_000_000_000;
  let viaBucket = 0;
  while (token.limiter.limitSync('a').allowed && viaBucket < 2000) viaBucket++;
  assert.equal(viaBucket, 1000, 'the token bucket stays exact at that rate');
});

test('fixed window: a clock stepping back across a boundary does not reopen the window', () => {
  const { clock, limiter } = at({ algorithm: 'fixed-window', limit: 2, window: 1000 });
  clock.now = 5_000;
  assert.equal(limiter.limitSync('a', { cost: 2 }).allowed, true);
  clock.now = 4_999; // into the window before: it was a fresh window, and admitted 2 more
  const back = limiter.limitSync('a');
  assert.equal(back.allowed, false);
  assert.equal(back.retryAfterMs, 1_000, 'the clock stands still at the start of the stored window');
  clock.now = 6_000;
  assert.equal(limiter.limitSync('a', { cost: 2 }).allowed, true);
});

test('concurrency: a lease taken on a clock stepped back does not time out sooner than the one before it', () => {
  const { clock, limiter } = at({ algorithm: 'concurrency', limit: 2, window: 1000 });
  clock.now = 10_000;
  assert.equal(limiter.limitSync('a').allowed, true);
  clock.now = 9_500; // this lease timed out at 10_500, freeing a slot while the first is still held
  assert.equal(limiter.limitSync('a').allowed, true);
  clock.now = 10_600;
  assert.equal(limiter.limitSync('a').allowed, false);
  clock.now = 11_000;
  assert.equal(limiter.limitSync('a', { cost: 2 }).allowed, true);
});

test('sliding log: an entry logged on a clock stepped back made the log look idle while an entry was live', () => {
  const { clock, limiter } = at({ algorithm: 'sliding-log', limit: 2, window: 1000 });
  clock.now = 10_000;
  assert.equal(limiter.limitSync('a').allowed, true);
  clock.now = 9_000; // logged after 10_000, out of order: the log looked idle from 10_000 on
  assert.equal(limiter.limitSync('a').allowed, true);
  assert.equal(limiter.limitSync('a').allowed, false);
  clock.now = 10_500;
  limiter.limitSync('b'); // a new key sweeps idle ones: 'a' was dropped with 10_000 still in its window
  assert.equal(limiter.limitSync('a').allowed, false);
  clock.now = 11_000;
  assert.equal(limiter.limitSync('a', { cost: 2 }).allowed, true);
});
