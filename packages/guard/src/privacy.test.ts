// The privacy rule: guard state (the guard-state records and every store key) holds only keyed tags, never
// an account name, an address in any spelling, a fingerprint or a password. test/redis/guard-state.test.ts
// runs the same check over every key and value a Redis-backed guard leaves.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { test } from 'node:test';
import fc from 'fast-check';
import { makeGuard } from '../test/support/guard-kit.js';
import { assertNoPlainValue, privacyTrace } from '../test/support/privacy.js';
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

/** What the tags were defined as before the plain-TS HMAC: node:crypto's HMAC, first 12 bytes, base64url. */
const reference = (secret: Uint8Array, ...parts: (string | Uint8Array)[]) => {
  const h = createHmac('sha256', secret);
  for (const p of parts) h.update(p);
  return h.digest().subarray(0, 12).toString('base64url');
};

test("the tagger equals node:crypto's HMAC-SHA-256 for random secrets and inputs (tags already stored stay valid)", () => {
  const domain = fc.constantFrom('acct', 'ip', 'net', 'fp', 'pw' as const);
  // Full Unicode, lone surrogates included (UTF-8 encodes them as U+FFFD, as Buffer does), and lengths across
  // the 55/56-byte padding edge and several blocks; secrets shorter and longer than a block.
  const text = fc.oneof(
    fc.string({ maxLength: 200 }),
    fc.string({ unit: 'grapheme', maxLength: 50 }),
    fc.string({ unit: 'binary', maxLength: 100 }),
    fc.string({ minLength: 40, maxLength: 70 }),
  );
  fc.assert(
    fc.property(
      fc.uint8Array({ minLength: 1, maxLength: 150 }),
      domain,
      text,
      text,
      fc.uint8Array({ maxLength: 150 }),
      (secret, d, value, password, bytes) => {
        const h = new KeyedHasher(secret);
        const accountTag = h.tag('acct', value);
        assert.equal(h.tag(d, value), reference(secret, d, '\0', value));
        assert.equal(h.tag(d, bytes), reference(secret, d, '\0', bytes));
        assert.equal(h.passwordTag(accountTag, password), reference(secret, 'pw\0', accountTag, '\0', password));
      },
    ),
    { numRuns: 500 },
  );
  // Every length through four blocks, and inputs long enough to grow the scratch buffer, reusing one hasher.
  const secret = Buffer.from('secret-number-one-0123');
  const h = new KeyedHasher(secret);
  for (let n = 0; n <= 300; n++)
    assert.equal(h.tag('acct', 'x'.repeat(n)), reference(secret, 'acct', '\0', 'x'.repeat(n)), `length ${n}`);
  for (const v of ['é'.repeat(1024), '😀'.repeat(512), 'a'.repeat(1023) + '\ud800', 'b'.repeat(4096)]) {
    assert.equal(h.tag('fp', v), reference(secret, 'fp', '\0', v));
    assert.equal(h.passwordTag('AAAAAAAAAAAAAAAA', v), reference(secret, 'pw\0', 'AAAAAAAAAAAAAAAA', '\0', v));
  }
  assert.equal(h.tag('ip', 'short again'), reference(secret, 'ip', '\0', 'short again'));
});

test('the IPv4 subnet tag written in place equals the tag of its text, for every byte value and prefix', () => {
  const h = new KeyedHasher(Buffer.from('secret-number-one-0123'));
  for (let x = 0; x < 256; x++) {
    const [a, b, c, d, prefix] = [x, 255 - x, (x * 7) % 256, (x * 13 + 1) % 256, x % 33];
    assert.equal(h.tagDottedQuad('net', a, b, c, d, prefix), h.tag('net', `${a}.${b}.${c}.${d}/${prefix}`));
  }
  // The scratch is wiped between tags: a long tag, then a short one, then the subnet again.
  const before = h.tagDottedQuad('net', 10, 0, 0, 0, 8);
  h.tag('fp', 'z'.repeat(500));
  assert.equal(h.tagDottedQuad('net', 10, 0, 0, 0, 8), before);
});

test('an address tags the same as a dotted quad and as IPv4-mapped IPv6, so a host has one tag in state', async () => {
  for (const [plain, mapped] of [
    ['203.0.113.7', '::ffff:203.0.113.7'],
    ['10.0.0.1', '::ffff:a00:1'],
    ['0.0.0.0', '::ffff:0.0.0.0'],
  ] as const) {
    const one = makeGuard();
    await one.guard.record({ account: 'alice', ip: plain, success: false });
    const two = makeGuard();
    await two.guard.record({ account: 'alice', ip: mapped, success: false });
    assert.equal(one.state.dump(), two.state.dump(), `${plain} and ${mapped}`);
    assert.deepEqual([...one.store.keys], [...two.store.keys]);
  }
});
