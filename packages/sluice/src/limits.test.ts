// Per-call limits through the facade: validation that names the field and the value, burst scaling, the
// decision's limit, and the deny cache. Agreement with the models is test/contracts/override-conformance.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Limiter, SluiceError } from './index.js';
import type { LimiterOptions } from './index.js';

function limiter(options: Omit<LimiterOptions, 'clock'>, clock = { now: 1_000_000 }): Limiter {
  return new Limiter({ ...options, clock: () => clock.now });
}

const isSluice = (code: string, message: RegExp) => (e: unknown) =>
  e instanceof SluiceError && e.code === code && message.test(e.message);

test('per-call limits: bad entries are errors naming the field and the value', async () => {
  const l = limiter({
    policies: [
      { name: 'minute', algorithm: 'token-bucket', limit: 10, window: '1m' },
      { name: 'day', algorithm: 'fixed-window', limit: 100, window: '1d' },
    ],
  });
  const cases: [unknown, RegExp][] = [
    [{ hour: 5 }, /'limits' names no policy of this limiter: "hour"; its policies are "minute", "day"/],
    [{ minute: 0 }, /'limits.minute' must be a positive integer, got 0/],
    [{ minute: -3 }, /'limits.minute' must be a positive integer, got -3/],
    [{ minute: 2.5 }, /'limits.minute' must be a positive integer, got 2.5/],
    [{ minute: '10' }, /'limits.minute' must be a positive integer, got "10"/],
    [{ minute: { limit: 0 } }, /'limits.minute.limit' must be a positive integer, got 0/],
    [{ minute: { limit: '5' } }, /'limits.minute.limit' must be a positive integer, got "5"/],
    [{ minute: { limit: 5, burst: 0 } }, /'limits.minute.burst' must be a positive integer, got 0/],
    [{ minute: { limit: 5, bust: 2 } }, /'limits.minute' has unknown field 'bust'/],
    [
      { day: { limit: 5, burst: 2 } },
      /'limits.day.burst' applies to token-bucket, gcra and leaky-bucket, not fixed-window/,
    ],
    [[5], /'limits' must be an object of limits by policy name/],
    [null, /'limits' must be an object of limits by policy name, such as \{ "minute": 100 \}, got null/],
  ];
  for (const [limits, message] of cases) {
    await assert.rejects(
      l.limit('k', { limits: limits as Record<string, number> }),
      isSluice('ERR_SLUICE_INVALID_OPTION', message),
      String(message),
    );
    assert.throws(
      () => l.limitSync('k', { limits: limits as Record<string, number> }),
      isSluice('ERR_SLUICE_INVALID_OPTION', message),
    );
  }
  // A valid entry once cached does not let an invalid one of the same look through.
  assert.equal((await l.limit('k', { limits: { minute: 10 } })).allowed, true);
  await assert.rejects(
    l.limit('k', { limits: { minute: '10' as unknown as number } }),
    isSluice('ERR_SLUICE_INVALID_OPTION', /got "10"/),
  );
});

test("per-call limits: a cost above the call's capacity can never pass, and says so", async () => {
  const l = limiter({ policy: { name: 'p', algorithm: 'fixed-window', limit: 100, window: '1m' } });
  assert.throws(
    () => l.limitSync('k', { cost: 6, limits: { p: 5 } }),
    isSluice('ERR_SLUICE_COST_EXCEEDS_CAPACITY', /'cost' 6 can never pass policy "p", whose capacity is 5/),
  );
  assert.equal(l.limitSync('k', { cost: 50, limits: { p: 500 } }).allowed, true, 'a raised limit raises the capacity');
  assert.throws(() => l.limitSync('k', { cost: 101 }), isSluice('ERR_SLUICE_COST_EXCEEDS_CAPACITY', /capacity is 100/));
});

test("per-call limits: a bucket's burst scales with the limit unless given", () => {
  const clock = { now: 5_000_000 };
  const l = limiter({ policy: { name: 'p', algorithm: 'token-bucket', limit: 10, window: '1m', burst: 4 } }, clock);
  const run = (key: string, limits: Record<string, number | { limit: number; burst?: number }>) => {
    let n = 0;
    while (l.limitSync(key, { limits }).allowed) n++;
    return n;
  };
  assert.equal(run('scaled', { p: 100 }), 40, 'burst 4 of 10 is 40 of 100');
  assert.equal(run('given', { p: { limit: 100, burst: 7 } }), 7);
  assert.equal(run('small', { p: 1 }), 1, 'never below 1');
  assert.equal(run('own', {}), 4);
});

test("per-call limits: the decision reports the call's limit, and calls without share the count", () => {
  const l = limiter({ policy: { name: 'daily', algorithm: 'fixed-window', limit: 10, window: '1d' } });
  assert.deepEqual(
    [l.limitSync('t', { cost: 8, limits: { daily: 1000 } })].map((d) => [d.allowed, d.limit, d.remaining]),
    [[true, 1000, 992]],
  );
  const own = l.limitSync('t');
  assert.deepEqual([own.allowed, own.limit, own.remaining], [true, 10, 1], 'the 8 charged under 1000 count against 10');
  assert.equal(l.limitSync('t', { cost: 2 }).allowed, false);
  assert.equal(l.limitSync('t', { cost: 2, limits: { daily: 1000 } }).allowed, true);
});

test("per-call limits: a bucket emptied under one limit is empty under another, and refills at the call's rate", () => {
  const clock = { now: 9_000_000 };
  const l = limiter({ policy: { name: 'p', algorithm: 'token-bucket', limit: 2, window: '1m' } }, clock);
  assert.equal(l.limitSync('k', { cost: 2 }).allowed, true);
  const raised = l.limitSync('k', { limits: { p: 20 } });
  assert.deepEqual(
    [raised.allowed, raised.retryAfterMs],
    [false, 3000],
    'empty is empty: one of 20 a minute refills in 3 s',
  );
  clock.now += 3000;
  assert.equal(l.limitSync('k', { limits: { p: 20 } }).allowed, true);
  assert.equal(l.limitSync('k').allowed, false, 'and the key is as empty under its own limit');
});

test('per-call limits: the deny cache leaves calls with limits to the store', async () => {
  const clock = { now: 9_000_000 };
  const l = limiter({ policy: { name: 'p', algorithm: 'gcra', limit: 2, window: '1m' }, denyCache: true }, clock);
  assert.equal((await l.limit('k', { cost: 2 })).allowed, true);
  assert.equal((await l.limit('k')).retryAfterMs, 30_000);
  clock.now += 3000;
  assert.equal((await l.limit('k')).allowed, false, 'answered by the cache');
  assert.equal((await l.limit('k', { limits: { p: 20 } })).allowed, true, 'one of 20 a minute has refilled');
});
