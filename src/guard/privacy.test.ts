// The privacy rule: guard state (the guard-state records and every store key) holds only keyed tags, never
// an account name, an address in any spelling, a fingerprint or a password.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { makeGuard } from '../../test/support/guard-kit.js';
import { KeyedHasher, tagIn, tagsEqual } from './keyed-hash.js';

const accounts = ['alice@example.com', 'Bob.Builder', 'carol'];
const ips = ['203.0.113.77', '2001:db8:abcd:12::7', '::ffff:198.51.100.23'];
const passwords = ['hunter2-secret', 'correct horse battery', 'P@ssw0rd!'];
const fingerprint = 'device-fingerprint-xyz';

/** Every spelling of a value that would give it away: as is, lowercased, hex and base64 of its text. */
function spellings(value: string): string[] {
  const out = [value, value.toLowerCase(), Buffer.from(value).toString('hex'), Buffer.from(value).toString('base64')];
  if (value.includes('.')) out.push(...value.split(':').filter((p) => p.includes('.')));
  if (value.includes(':')) out.push(value.replace(/::.*/, ''));
  return out.filter((s) => s.length >= 4);
}

test('no plain account, address, fingerprint or password anywhere in guard state or store keys', async () => {
  const { guard, state, store } = makeGuard();
  for (const account of accounts) {
    for (const ip of ips) {
      for (const password of passwords) await guard.record({ account, ip, fingerprint, success: false, password });
      await guard.check({ account, ip, fingerprint });
    }
    await guard.record({ account, ip: ips[0]!, fingerprint, success: true });
  }
  const everything = state.dump() + '\n' + [...store.keys].join('\n');
  assert.ok(everything.length > 1000, 'the state is not empty');
  for (const value of [...accounts, ...ips, ...passwords, fingerprint, '198.51.100', '203.0.113', '2001:db8']) {
    for (const s of spellings(value)) assert.ok(!everything.includes(s), `found ${JSON.stringify(s)} in guard state`);
  }
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
