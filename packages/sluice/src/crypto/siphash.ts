/**
 * SipHash-2-4 with its 128-bit output (Aumasson and Bernstein; the reference is github.com/veorq/SipHash),
 * in plain TypeScript on 32-bit halves. It is a keyed pseudorandom function made for hash-table keys: far
 * cheaper than an HMAC-SHA-256 (a short input is a dozen or so rounds of adds, rotations and xors, against
 * two 64-round compressions), and without the key no one can find two inputs with the same output. The
 * login guard uses it to recognise an attempt it tagged moments ago without keeping the attempt's text
 * (src/guard/recent-attempts.ts). Tested against the reference vectors (siphash.test.ts).
 */

/**
 * SipHash-2-4-128 of `message[0..byteLength)` under the 16-byte key packed little-endian four bytes to a
 * word in `key` (word i holds bytes 4i..4i+3, byte 4i in its low bits). Writes the 16-byte output to `out`
 * packed the same way. Allocates nothing.
 *
 * One loop runs every round, the message's and the finalisation's, with the state in local variables
 * (v0..v3 as high and low halves): a separate round function over a state array cost about twice the
 * instructions under V8. The 64-bit add carries out of the low half by the sign bit of
 * (a & b) | ((a | b) & ~sum), which stays in int32.
 */
export function sipHash128(key: Int32Array, message: Uint8Array, byteLength: number, out: Int32Array): void {
  const k0l = key[0]!,
    k0h = key[1]!,
    k1l = key[2]!,
    k1h = key[3]!;
  let v0h = k0h ^ 0x736f6d65,
    v0l = k0l ^ 0x70736575;
  let v1h = k1h ^ 0x646f7261,
    v1l = k1l ^ 0x6e646f6d ^ 0xee; // 0xee: the 128-bit variant
  let v2h = k0h ^ 0x6c796765,
    v2l = k0l ^ 0x6e657261;
  let v3h = k1h ^ 0x74656462,
    v3l = k1l ^ 0x79746573;
  const blocks = byteLength >>> 3;
  // The last block: the 0-7 bytes left, and the length (mod 256) in the top byte.
  let lastLo = 0;
  let lastHi = byteLength << 24;
  for (let i = byteLength - 1; i >= 8 * blocks; i--) {
    const at = i - 8 * blocks;
    if (at < 4) lastLo |= message[i]! << (8 * at);
    else lastHi |= message[i]! << (8 * (at - 4));
  }
  let mh = 0,
    ml = 0,
    l = 0,
    t = 0;
  // Steps 0..blocks absorb the message (the last one its final block), step blocks + 1 makes the first
  // half of the output, step blocks + 2 the second.
  for (let step = 0; step <= blocks + 2; step++) {
    let rounds = 2;
    if (step < blocks) {
      const i = 8 * step;
      ml = message[i]! | (message[i + 1]! << 8) | (message[i + 2]! << 16) | (message[i + 3]! << 24);
      mh = message[i + 4]! | (message[i + 5]! << 8) | (message[i + 6]! << 16) | (message[i + 7]! << 24);
    } else if (step === blocks) {
      ml = lastLo;
      mh = lastHi;
    } else {
      rounds = 4;
      mh = 0;
      ml = 0;
      if (step === blocks + 1) v2l ^= 0xee;
      else v1l ^= 0xdd;
    }
    v3h ^= mh;
    v3l ^= ml;
    for (let r = 0; r < rounds; r++) {
      // v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32)
      l = (v0l + v1l) | 0;
      v0h = (v0h + v1h + (((v0l & v1l) | ((v0l | v1l) & ~l)) >>> 31)) | 0;
      v0l = l;
      t = (v1h << 13) | (v1l >>> 19);
      v1l = ((v1l << 13) | (v1h >>> 19)) ^ v0l;
      v1h = t ^ v0h;
      t = v0h;
      v0h = v0l;
      v0l = t;
      // v2 += v3; v3 = rotl(v3, 16); v3 ^= v2
      l = (v2l + v3l) | 0;
      v2h = (v2h + v3h + (((v2l & v3l) | ((v2l | v3l) & ~l)) >>> 31)) | 0;
      v2l = l;
      t = (v3h << 16) | (v3l >>> 16);
      v3l = ((v3l << 16) | (v3h >>> 16)) ^ v2l;
      v3h = t ^ v2h;
      // v0 += v3; v3 = rotl(v3, 21); v3 ^= v0
      l = (v0l + v3l) | 0;
      v0h = (v0h + v3h + (((v0l & v3l) | ((v0l | v3l) & ~l)) >>> 31)) | 0;
      v0l = l;
      t = (v3h << 21) | (v3l >>> 11);
      v3l = ((v3l << 21) | (v3h >>> 11)) ^ v0l;
      v3h = t ^ v0h;
      // v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32)
      l = (v2l + v1l) | 0;
      v2h = (v2h + v1h + (((v2l & v1l) | ((v2l | v1l) & ~l)) >>> 31)) | 0;
      v2l = l;
      t = (v1h << 17) | (v1l >>> 15);
      v1l = ((v1l << 17) | (v1h >>> 15)) ^ v2l;
      v1h = t ^ v2h;
      t = v2h;
      v2h = v2l;
      v2l = t;
    }
    v0h ^= mh;
    v0l ^= ml;
    if (step === blocks + 1) {
      out[0] = v0l ^ v1l ^ v2l ^ v3l;
      out[1] = v0h ^ v1h ^ v2h ^ v3h;
    } else if (step === blocks + 2) {
      out[2] = v0l ^ v1l ^ v2l ^ v3l;
      out[3] = v0h ^ v1h ^ v2h ^ v3h;
    }
  }
}
