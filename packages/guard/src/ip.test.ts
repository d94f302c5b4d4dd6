// How the guard reads an address (core/ip.ts, plus brackets) and its CIDR lists: the tags are those of the
// canonical address, and bad input names the field.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { tagAttempt, type AttemptTagger } from './attempt.js';
import { KeyedHasher } from './keyed-hash.js';
import { Reputation } from './reputation.js';

const tagger: AttemptTagger = {
  hasher: new KeyedHasher(Buffer.from('k'.repeat(32))),
  reputation: new Reputation([], ['203.0.113.0/24'], []),
  ipv4Subnet: 24,
  ipv6Subnet: 64,
  ipv6AddressPrefix: 64,
};
const tags = (ip: string) => {
  const t = tagAttempt('check', { account: 'alice', ip }, tagger);
  return { address: t.address, subnet: t.subnet };
};

test('one host, one tag: mapped, bracketed, zoned and upper-case forms tag as the canonical address', () => {
  assert.deepEqual(tags('::ffff:203.0.113.7'), tags('203.0.113.7'));
  assert.deepEqual(tags('::ffff:cb00:7107'), tags('203.0.113.7'));
  for (const form of [
    '2001:db8::1',
    '[2001:db8::1]',
    '2001:db8:0:0::1',
    '2001:DB8::1',
    '2001:0db8:0000:0000:0000:0000:0000:0001',
  ]) {
    assert.deepEqual(tags(form), tags('2001:db8::1'), form);
  }
  assert.deepEqual(tags('fe80::1%eth0'), tags('fe80::1'));
  assert.equal(tags('203.0.113.7').subnet, tags('203.0.113.200').subnet);
  assert.equal(tags('2001:db8:1:2::1').subnet, tags('2001:db8:1:2:ffff::9').subnet);
});

test('malformed addresses are rejected, naming the field and quoting the value', () => {
  for (const bad of [
    '1.2.3',
    '1.2.3.256',
    '01.2.3.4',
    '[1.2.3.4]',
    '1::2::3',
    'localhost',
    ' 1.2.3.4',
    `${'1:'.repeat(40)}1`,
  ]) {
    assert.throws(() => tags(bad), { code: 'ERR_SLUICE_INVALID_IP' }, bad);
  }
  assert.throws(() => tags('1.2.3.999'), {
    code: 'ERR_SLUICE_INVALID_IP',
    message: `[sluice] guard.check(): 'ip' must be an IPv4 or IPv6 address, got "1.2.3.999"`,
  });
});

test('the lists are CIDR ranges; a bad one names the list and the entry', () => {
  assert.equal(tagAttempt('check', { account: 'a', ip: '203.0.113.9' }, tagger).standing.denied, true);
  assert.equal(tagAttempt('check', { account: 'a', ip: '::ffff:203.0.113.9' }, tagger).standing.denied, true);
  assert.equal(tagAttempt('check', { account: 'a', ip: '198.51.100.1' }, tagger).standing.denied, false);
  assert.throws(() => new Reputation([], ['10.0.0.0/33'], []), {
    code: 'ERR_SLUICE_INVALID_IP',
    message: /denyList\[0\].*"10\.0\.0\.0\/33"/,
  });
});

// Issue 46 finding 4: 5,000 blocked checks from random addresses in one IPv6 /64 wrote 5,056 keys kept
// 336 h. An IPv6 address counts at `ipv6AddressPrefix` (one /64): its records, buckets and pairs.
test('addresses in one IPv6 /64 share one address tag (its records and buckets); ipv6AddressPrefix 128 keeps them apart', () => {
  assert.equal(tags('2001:db8:1:2::1').address, tags('2001:db8:1:2:ffff:ee:dd:9').address);
  assert.notEqual(tags('2001:db8:1:2::1').address, tags('2001:db8:1:3::1').address);
  assert.notEqual(
    tags('2001:db8:1:2::1').address,
    tags('2001:db8:1:2::1').subnet,
    'the address and the subnet are two records',
  );
  const apart = { ...tagger, ipv6AddressPrefix: 128 };
  const tag128 = (ip: string) => tagAttempt('check', { account: 'alice', ip }, apart).address;
  assert.notEqual(tag128('2001:db8:1:2::1'), tag128('2001:db8:1:2:ffff:ee:dd:9'));
  assert.equal(tags('203.0.113.7').address === tags('203.0.113.8').address, false, 'IPv4 addresses stay apart');
});
