// Every bad policy field is an Error whose message names the field and quotes the value.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compilePolicy, parseDuration, SluiceError } from './index.js';
import type { PolicyOptions } from './index.js';

function rejects(options: unknown, message: RegExp): void {
  assert.throws(
    () => compilePolicy(options as PolicyOptions),
    (e: unknown) => e instanceof SluiceError && e.code === 'ERR_SLUICE_INVALID_POLICY' && message.test(e.message),
  );
}

const base = { name: 'p', algorithm: 'token-bucket', limit: 10, window: '1m' } as const;

test('unknown algorithm', () =>
  rejects({ ...base, algorithm: 'leaky' }, /policy "p": unknown 'algorithm' "leaky"; choose one of fixed-window/));

for (const [value, shown] of [
  [undefined, 'undefined'],
  [0, '0'],
  [-1, '-1'],
  [NaN, 'NaN'],
  [Infinity, 'Infinity'],
  [1.5, '1.5'],
  ['10', '"10"'],
] as const) {
  test(`limit ${shown} is rejected`, () =>
    rejects(
      { ...base, limit: value },
      new RegExp(
        `'limit' must be a positive integer, got ${shown.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}( \\(.*\\))?$`,
      ),
    ));
  if (value !== undefined) {
    test(`burst ${shown} is rejected`, () => rejects({ ...base, burst: value }, /'burst' must be a positive integer/));
  }
}

for (const [value, shown] of [
  [0, '0'],
  [-5, '-5'],
  [NaN, 'NaN'],
  [Infinity, 'Infinity'],
  [2.5, '2.5'],
  ['', '""'],
  ['1 minute', '"1 minute"'],
  ['1y', '"1y"'],
  ['-1s', '"-1s"'],
  ['0s', '"0s"'],
  ['0.1ms', '"0.1ms"'],
] as const) {
  test(`window ${shown} is rejected`, () =>
    rejects(
      { ...base, window: value },
      new RegExp(`'window' must .*got ${shown.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
    ));
}

test('window is required', () => rejects({ name: 'p', algorithm: 'gcra', limit: 1 }, /'window' is required/));
test('burst on a window algorithm is refused, not ignored', () =>
  rejects({ name: 'p', algorithm: 'fixed-window', limit: 1, window: 1000, burst: 3 }, /'burst' applies to/));
test('misspelt fields are refused', () => rejects({ ...base, bursts: 3 }, /unknown field 'bursts'/));
test('delay above burst', () =>
  rejects(
    { name: 'p', algorithm: 'leaky-bucket', mode: 'shaper', limit: 5, window: '1s', burst: 3, delay: 4 },
    /'delay' \(4\) cannot exceed 'burst' \(3\)/,
  ));
test('delay without the shaper', () =>
  rejects(
    { name: 'p', algorithm: 'leaky-bucket', limit: 5, window: '1s', delay: 2 },
    /'delay' and 'nodelay' apply to a leaky-bucket with mode 'shaper'/,
  ));
test('buckets must divide the window', () =>
  rejects(
    { name: 'p', algorithm: 'sliding-window', limit: 5, window: 1000, buckets: 3 },
    /must divide evenly into 'buckets' \(3\)/,
  ));
test('a policy that is not an object', () => rejects(null, /policy #0: must be an object/));

test('durations parse to whole milliseconds', () => {
  assert.equal(parseDuration('500ms', 'w'), 500);
  assert.equal(parseDuration('1s', 'w'), 1000);
  assert.equal(parseDuration('1.5m', 'w'), 90_000);
  assert.equal(parseDuration('0.1s', 'w'), 100);
  assert.equal(parseDuration('1h', 'w'), 3_600_000);
  assert.equal(parseDuration('1d', 'w'), 86_400_000);
  assert.equal(parseDuration(250, 'w'), 250);
});

test('defaults: burst = limit, capacity follows the algorithm', () => {
  const tb = compilePolicy({ algorithm: 'token-bucket', limit: 100, window: '1m' });
  assert.equal(tb.burst, 100);
  assert.equal(tb.capacity, 100);
  assert.equal(tb.name, 'token-bucket-100-60000ms');
  assert.equal(compilePolicy({ algorithm: 'gcra', limit: 100, window: '1m', burst: 20 }).capacity, 20);
  assert.equal(compilePolicy({ algorithm: 'fixed-window', limit: 7, window: '1s' }).capacity, 7);
});
