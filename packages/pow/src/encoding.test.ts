// The canonical encoding: round trip, injectivity, and strict base64url.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decodeBase64url, encodeBase64url } from '../../sluice/src/crypto/base64url.js';
import { decodeChallenge, encodeChallenge, LIMITS, type ChallengeFields } from './encoding.js';

const text = (maxBytes: number) =>
  fc.string({ unit: 'binary', maxLength: maxBytes }).filter((s) => new TextEncoder().encode(s).length <= maxBytes);
const fields: fc.Arbitrary<ChallengeFields> = fc.record({
  version: fc.constant(1),
  kid: text(LIMITS.kidBytes),
  algorithm: text(LIMITS.algorithmBytes),
  salt: fc.uint8Array({ maxLength: LIMITS.saltBytes }),
  target: fc.integer({ min: 1, max: LIMITS.targetSpace }),
  puzzles: fc.integer({ min: 1, max: LIMITS.maxPuzzles }),
  expiresAt: fc.integer({ min: 0, max: 2 ** 48 - 1 }),
  scope: text(LIMITS.scopeBytes),
});
const same = (a: ChallengeFields, b: ChallengeFields) => {
  try {
    assert.deepStrictEqual({ ...a, salt: [...a.salt] }, { ...b, salt: [...b.salt] });
    return true;
  } catch {
    return false;
  }
};

test('decode(encode(f)) is f: the encoding has a left inverse, so it is injective', () => {
  fc.assert(fc.property(fields, (f) => same(decodeChallenge(encodeChallenge(f))!, f)));
});

test('distinct challenges never share an encoding (including fields that differ only at a boundary)', () => {
  fc.assert(
    fc.property(fields, fields, (a, b) => same(a, b) || Buffer.compare(encodeChallenge(a), encodeChallenge(b)) !== 0),
  );
  // The ALTCHA splice: moving bytes from the end of one field to the start of the next.
  const base: ChallengeFields = {
    version: 1,
    kid: 'k1',
    algorithm: 'SHA-256',
    salt: new Uint8Array([1, 2]),
    target: 5,
    puzzles: 1,
    expiresAt: 9,
    scope: 'ab',
  };
  const moved = { ...base, kid: 'k', algorithm: '1SHA-256' };
  assert.notDeepEqual(encodeChallenge(base), encodeChallenge(moved));
});

test('the decoder rejects truncation, trailing bytes and a future version', () => {
  fc.assert(
    fc.property(fields, fc.uint8Array({ minLength: 1, maxLength: 8 }), (f, extra) => {
      const bytes = encodeChallenge(f);
      for (let cut = 0; cut < bytes.length; cut++)
        if (decodeChallenge(bytes.subarray(0, cut)) !== undefined) return false;
      const longer = new Uint8Array([...bytes, ...extra]);
      const future = bytes.slice();
      future[0] = 2;
      return decodeChallenge(longer) === undefined && decodeChallenge(future) === undefined;
    }),
  );
});

test('the decoder never throws on arbitrary bytes', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 400 }), (b) => {
      decodeChallenge(b);
      return true;
    }),
  );
});

test('base64url round-trips and accepts exactly one spelling per byte string', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 100 }), (b) => {
      const t = encodeBase64url(b);
      return t === Buffer.from(b).toString('base64url') && Buffer.compare(decodeBase64url(t)!, b) === 0;
    }),
  );
  fc.assert(
    fc.property(fc.string({ maxLength: 40 }), (t) => {
      const d = decodeBase64url(t);
      return d === undefined || encodeBase64url(d) === t;
    }),
  );
  assert.equal(decodeBase64url('AB'), undefined); // non-zero trailing bits: 'AA' is the spelling of [0]
  assert.equal(decodeBase64url('AA=='), undefined);
  assert.equal(decodeBase64url('A+'), undefined);
});
