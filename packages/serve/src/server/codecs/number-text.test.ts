// The /json path's number printing must be byte for byte what String() and a template literal print.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { integerText, millisAsSeconds } from './number-text.js';

const EDGES = [
  0,
  -0,
  1,
  9,
  10,
  999,
  1000,
  1001,
  2 ** 31 - 1,
  2 ** 31,
  2 ** 31 + 1,
  2 ** 32,
  3999999999,
  4e9,
  1e9,
  1e9 + 1,
  999999999999999,
  1e15,
  1e15 + 1,
  2 ** 53,
  1e21,
  1.5,
  -1,
  -(2 ** 31),
  NaN,
  Infinity,
  -Infinity,
  0.1,
  123456.789,
];

test('integerText is String(n), for edges, repeats and random numbers', () => {
  for (const n of EDGES) {
    assert.equal(integerText(n), String(n), String(n));
    assert.equal(integerText(n), String(n), `${n} again`);
  }
  fc.assert(
    fc.property(
      fc.oneof(fc.integer({ min: 0, max: 2 ** 31 + 10 }), fc.maxSafeInteger(), fc.double()),
      (n) => integerText(n) === String(n),
    ),
    { numRuns: 20000 },
  );
});

test('millisAsSeconds is `${ms / 1000}`, for edges, every ms of a window and random numbers', () => {
  for (const ms of EDGES) assert.equal(millisAsSeconds(ms), `${ms / 1000}`, String(ms));
  for (let ms = 0; ms < 100_000; ms++)
    if (millisAsSeconds(ms) !== `${ms / 1000}`) assert.fail(`${ms}: ${millisAsSeconds(ms)}`);
  for (let ms = 2 ** 31 * 1000 - 50_000; ms < 2 ** 31 * 1000 + 50_000; ms++)
    if (millisAsSeconds(ms) !== `${ms / 1000}`) assert.fail(`${ms}: ${millisAsSeconds(ms)}`);
  fc.assert(
    fc.property(fc.oneof(fc.nat(), fc.maxSafeInteger(), fc.double()), (ms) => millisAsSeconds(ms) === `${ms / 1000}`),
    { numRuns: 20000 },
  );
});
