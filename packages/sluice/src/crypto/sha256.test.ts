// Checks the plain-TS SHA-256, HMAC and puzzle hash against node:crypto on random inputs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, createHmac } from 'node:crypto';
import fc from 'fast-check';
import { hmacKey, hmacSha256, puzzleHash48, puzzleSeed, sha256 } from './sha256.js';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

test('sha256 equals node:crypto for every length across block and padding edges', () => {
  for (let n = 0; n <= 200; n++) {
    const m = Uint8Array.from({ length: n }, (_, i) => (i * 31 + n) & 255);
    assert.equal(hex(sha256(m)), createHash('sha256').update(m).digest('hex'), `length ${n}`);
  }
  fc.assert(
    fc.property(
      fc.uint8Array({ maxLength: 300 }),
      (m) => hex(sha256(m)) === createHash('sha256').update(m).digest('hex'),
    ),
  );
});

test('hmacSha256 equals node:crypto, including keys longer than a block', () => {
  fc.assert(
    fc.property(
      fc.uint8Array({ maxLength: 150 }),
      fc.uint8Array({ maxLength: 300 }),
      (key, m) => hex(hmacSha256(hmacKey(key), m)) === createHmac('sha256', key).update(m).digest('hex'),
    ),
  );
});

test('puzzleHash48 is the first 48 bits of SHA-256(seed ‖ u32 index ‖ u32 nonce)', () => {
  fc.assert(
    fc.property(
      fc.uint8Array({ minLength: 32, maxLength: 32 }),
      fc.nat({ max: 63 }),
      fc.nat({ max: 0xffffffff }),
      (seed, index, nonce) => {
        const input = Buffer.alloc(40);
        input.set(seed);
        input.writeUInt32BE(index, 32);
        input.writeUInt32BE(nonce, 36);
        return (
          puzzleHash48(puzzleSeed(seed), index, nonce | 0) ===
          createHash('sha256').update(input).digest().readUIntBE(0, 6)
        );
      },
    ),
  );
});

test('the written-out compression function is what its generator writes (no hand edits drift from it)', () => {
  const run = spawnSync(
    process.execPath,
    [new URL('../../../../scripts/gen-sha256-compress.mjs', import.meta.url).pathname, '--check'],
    { encoding: 'utf8' },
  );
  assert.equal(run.status, 0, run.stderr);
});
