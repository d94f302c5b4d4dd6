// The local deny cache only ever answers "over", only for requests at least as heavy as the refused one,
// and only until the retry time the store gave: it can never admit what the store would not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LocalDenyCache } from './deny-cache.js';

test('a refusal is repeated until its retry time, for requests at least as heavy', () => {
  const c = new LocalDenyCache();
  c.add('rule', 'k', 3, 1_000);
  assert.equal(c.check('rule', 'k', 3, 400), 600);
  assert.equal(c.check('rule', 'k', 5, 400), 600);
  assert.equal(c.check('rule', 'k', 2, 400), 0, 'a lighter request may pass: ask the store');
  assert.equal(c.check('other', 'k', 3, 400), 0, 'rules do not share refusals');
  assert.equal(c.check('rule', 'k', 3, 1_000), 0, 'expired at the retry time');
  assert.equal(c.size, 0, 'and forgotten');
});

test('bounded: at maxEntries it starts again rather than grow', () => {
  const c = new LocalDenyCache(3);
  for (let i = 0; i < 3; i++) c.add('r', `k${i}`, 1, 100);
  assert.equal(c.size, 3);
  c.add('r', 'k3', 1, 100);
  assert.equal(c.size, 1);
  assert.equal(c.check('r', 'k3', 1, 0), 100);
});
