// The privacy rule: guard state (the guard-state records and every store key) holds only keyed tags, never
// an account name, an address in any spelling, a fingerprint or a password. test/redis/guard-state.test.ts
// runs the same check over every key and value a Redis-backed guard leaves.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { makeGuard } from '../../test/support/guard-kit.js';
import { assertNoPlainValue, privacyTrace } from '../../test/support/privacy.js';
import { KeyedHasher, tagIn, tagsEqual } from './keyed-hash.js';

test('no plain account, address, fingerprint or password anywhere in guard state or store keys', async () => {
  const { guard, state, store } = makeGuard();
  await privacyTrace(guard);
  assertNoPlainValue(state.dump() + '\n' + [...store.keys].join('\n'));
});

test('tags are keyed: another secret gives other tags, and domains never collide', () => {
  const a = new KeyedHasher(Buffer.from('secret-number-one-0123'));
  const b = new KeyedHasher(Buffer.from('secret-number-two-0123'));
  assert.notEqual(a.tag('acct', 'alice'), b.tag('acct', 'alice'));
  assert.notEqual(a.tag('acct', '1.2.3.4'), a.tag('ip', '1.2.3.4'));
  assert.equal(a.tag('acct', 'alice'), a.tag('acct', 'alice'));
  assert.match(a.tag('acct', 'alice'), /^[A-Za-z0-9_-]{16}$/);
  // A password's tag depends on the account, so equal passwords on two accounts do not show as equal.
  assert.notEqual(a.passwordTag(a.tag('acct', 'alice'), 'pw'), a.passwordTag(a.tag('acct', 'bob'), 'pw'));
});

test('constant-time tag comparison', () => {
  assert.equal(tagsEqual('abcdefgh', 'abcdefgh'), true);
  assert.equal(tagsEqual('abcdefgh', 'abcdefgX'), false);
  assert.equal(tagsEqual('abc', 'abcd'), false);
  assert.equal(tagIn('b', ['a', 'b', 'c']), true);
  assert.equal(tagIn('d', ['a', 'b', 'c']), false);
});
