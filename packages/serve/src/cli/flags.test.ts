// The simulate commands' positive integer flags: one parser, one wording, safe integers only.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { positiveIntegerFlag } from './flags.js';

test('positiveIntegerFlag passes 1 and the largest safe integer', () => {
  assert.equal(positiveIntegerFlag('--users', '1'), 1);
  assert.equal(positiveIntegerFlag('--users', String(Number.MAX_SAFE_INTEGER)), Number.MAX_SAFE_INTEGER);
});

test('positiveIntegerFlag refuses 0, signs, fractions, words, a missing value and unsafe digits, naming flag and text', () => {
  for (const bad of ['0', '-1', '+1', '1.5', '1e3', 'ten', '', ' 1', '9007199254740993']) {
    assert.equal(positiveIntegerFlag('--users', bad), `--users needs a positive integer, got ${JSON.stringify(bad)}`);
  }
  assert.equal(positiveIntegerFlag('--seed', undefined), '--seed needs a positive integer, got ""');
});
