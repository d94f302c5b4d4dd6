/**
 * SHA-256 (FIPS 180-4) in plain TypeScript, shared by the proof-of-work verifier, the Node solver and the
 * browser worker, and by the login guard's keyed tags (it depends on nothing, so any layer may use it).
 * Why not node:crypto? Each call into it costs more in binding overhead than the 64 rounds of one block
 * in JS, and proof-of-work hashes are single 40-byte blocks. The property tests check every
 * function here against node:crypto on random inputs.
 */
import { compress } from './sha256-compress.js';

/** The round constants (FIPS 180-4 §4.2.2); the compression function has them as literals (sha256-compress.ts). */
const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2,
]);

const IV = new Int32Array([
  0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
]);

/**
 * Scratch for a block's words (and puzzleHash48's message schedule); single-threaded callers only (each
 * worker has its own module copy).
 */
const W = new Int32Array(64);

/** Loads 64 bytes at `offset` into W[0..15] as big-endian words. */
function loadBlock(bytes: Uint8Array, offset: number): void {
  for (let i = 0; i < 16; i++) {
    const j = offset + i * 4;
    W[i] = (bytes[j]! << 24) | (bytes[j + 1]! << 16) | (bytes[j + 2]! << 8) | bytes[j + 3]!;
  }
}

/** Scratch for the padded tail: at most two blocks. */
const TAIL = new Uint8Array(128);
const TAIL_VIEW = new DataView(TAIL.buffer);

/**
 * Absorbs the first `length` bytes of `message` into `state` (in place) and pads, as if `prefixBlocks`
 * whole blocks had been absorbed before (HMAC precomputes its keyed first block). Allocates nothing:
 * verification and the login guard run it per request.
 */
function absorb(state: Int32Array, prefixBlocks: number, message: Uint8Array, length = message.length): void {
  const whole = length - (length % 64);
  for (let off = 0; off < whole; off += 64) {
    loadBlock(message, off);
    compress(state, W);
  }
  // Padding: 0x80, zeros, then the bit length as a 64-bit big-endian integer.
  const rest = length - whole;
  const tailLength = rest < 56 ? 64 : 128;
  TAIL.fill(0, 0, tailLength);
  for (let i = 0; i < rest; i++) TAIL[i] = message[whole + i]!;
  TAIL[rest] = 0x80;
  const bits = (prefixBlocks * 64 + length) * 8;
  TAIL_VIEW.setUint32(tailLength - 8, Math.floor(bits / 2 ** 32));
  TAIL_VIEW.setUint32(tailLength - 4, bits >>> 0);
  for (let off = 0; off < tailLength; off += 64) {
    loadBlock(TAIL, off);
    compress(state, W);
  }
}

/** Hashes `message` continuing from `state` after `prefixBlocks` blocks; returns the final state (a copy). */
export function sha256From(state: Int32Array, prefixBlocks: number, message: Uint8Array): Int32Array {
  const s = new Int32Array(state);
  absorb(s, prefixBlocks, message);
  return s;
}

/** The state after absorbing exactly one 64-byte block from the initial value. */
export function sha256Block(block: Uint8Array): Int32Array {
  const s = new Int32Array(IV);
  loadBlock(block, 0);
  compress(s, W);
  return s;
}

export function stateToBytes(state: Int32Array, out = new Uint8Array(32)): Uint8Array {
  for (let i = 0; i < 8; i++) {
    const w = state[i]!;
    out[i * 4] = w >>> 24;
    out[i * 4 + 1] = w >>> 16;
    out[i * 4 + 2] = w >>> 8;
    out[i * 4 + 3] = w;
  }
  return out;
}

/** SHA-256 of `message`. */
export function sha256(message: Uint8Array): Uint8Array {
  return stateToBytes(sha256From(IV, 0, message));
}

/** A key prepared for HMAC-SHA-256 (RFC 2104): the inner and outer padded key blocks, absorbed once. */
export interface HmacKey {
  readonly inner: Int32Array;
  readonly outer: Int32Array;
}

export function hmacKey(key: Uint8Array): HmacKey {
  const k = new Uint8Array(64);
  k.set(key.length > 64 ? sha256(key) : key);
  const ipad = k.map((x) => x ^ 0x36);
  const opad = k.map((x) => x ^ 0x5c);
  return { inner: sha256Block(ipad), outer: sha256Block(opad) };
}

/** HMAC-SHA-256 of `message` under a prepared key: two hashes, each starting after its keyed block. */
export function hmacSha256(key: HmacKey, message: Uint8Array): Uint8Array {
  hmacSha256Words(key, message, message.length, HMAC_STATE);
  return stateToBytes(HMAC_STATE);
}

/**
 * HMAC-SHA-256 of the first `length` bytes of `message` under a prepared key, written to `out` as the
 * digest's eight big-endian words. Allocates nothing: a message under 56 bytes costs two compressions
 * (the inner block and the outer one), as the keyed first blocks are precomputed in `key`.
 */
export function hmacSha256Words(key: HmacKey, message: Uint8Array, length: number, out: Int32Array): void {
  out.set(key.inner);
  if (length < 56) {
    // One padded block, built straight in W: the bytes, 0x80, zeros, the bit length (keyed block included).
    const whole = length & ~3;
    let j = 0;
    let i = 0;
    for (; i < whole; i += 4)
      W[j++] = (message[i]! << 24) | (message[i + 1]! << 16) | (message[i + 2]! << 8) | message[i + 3]!;
    let last = 0x80 << (24 - 8 * (length - whole));
    for (let shift = 24; i < length; i++, shift -= 8) last |= message[i]! << shift;
    W[j++] = last;
    while (j < 15) W[j++] = 0;
    W[15] = (64 + length) * 8;
    compress(out, W);
  } else absorb(out, 1, message, length);
  // The outer hash's message is the 32-byte inner digest: with its padding one block, loaded from the words.
  for (let i = 0; i < 8; i++) W[i] = out[i]!;
  W[8] = 0x80000000 | 0;
  W[9] = 0;
  W[10] = 0;
  W[11] = 0;
  W[12] = 0;
  W[13] = 0;
  W[14] = 0;
  W[15] = (64 + 32) * 8; // the keyed block and the digest, in bits
  out.set(key.outer);
  compress(out, W);
}

const HMAC_STATE = new Int32Array(8);

/**
 * A challenge seed prepared for puzzle hashing: its eight words, and the working variables after the
 * first eight rounds, which read only those words and so are the same for every index and nonce.
 */
export interface PuzzleSeed {
  readonly words: Int32Array;
  readonly mid: Int32Array;
}

export function puzzleSeed(seed: Uint8Array): PuzzleSeed {
  const words = toWords(seed);
  let a = IV[0]!,
    b = IV[1]!,
    c = IV[2]!,
    d = IV[3]!,
    e = IV[4]!,
    f = IV[5]!,
    g = IV[6]!,
    h = IV[7]!;
  for (let t = 0; t < 8; t++) {
    const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[t]! + words[t]!) | 0;
    const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    h = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  return { words, mid: new Int32Array([a, b, c, d, e, f, g, h]) };
}

/**
 * The proof-of-work hash: SHA-256(seed ‖ u32 index ‖ u32 nonce), 40 bytes so one padded block, returning
 * its first 48 bits as an integer (exact in a double). It is compress() resumed at round 8 from the
 * seed's precomputed state, kept as its own loop because it is the solver's and verifier's hot path.
 */
export function puzzleHash48(seed: PuzzleSeed, index: number, nonce: number): number {
  const words = seed.words;
  for (let i = 0; i < 8; i++) W[i] = words[i]!;
  W[8] = index;
  W[9] = nonce;
  W[10] = 0x80000000 | 0;
  W[11] = 0;
  W[12] = 0;
  W[13] = 0;
  W[14] = 0;
  W[15] = 320; // 40 bytes in bits
  for (let t = 16; t < 64; t++) {
    const x = W[t - 15]!;
    const y = W[t - 2]!;
    const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
    const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
    W[t] = (W[t - 16]! + s0 + W[t - 7]! + s1) | 0;
  }
  const m = seed.mid;
  let a = m[0]!,
    b = m[1]!,
    c = m[2]!,
    d = m[3]!,
    e = m[4]!,
    f = m[5]!,
    g = m[6]!,
    h = m[7]!;
  for (let t = 8; t < 64; t++) {
    const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[t]! + W[t]!) | 0;
    const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    h = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  return (((IV[0]! + a) | 0) >>> 0) * 65536 + (((IV[1]! + b) | 0) >>> 16);
}

/** Bytes to big-endian words (length must be a multiple of 4). */
export function toWords(bytes: Uint8Array): Int32Array {
  const out = new Int32Array(bytes.length >>> 2);
  for (let i = 0; i < out.length; i++) {
    const j = i * 4;
    out[i] = (bytes[j]! << 24) | (bytes[j + 1]! << 16) | (bytes[j + 2]! << 8) | bytes[j + 3]!;
  }
  return out;
}
