/**
 * Keyed hashes: everything the guard keeps about an account, an address or a password is an HMAC-SHA-256
 * under the server secret, cut to 96 bits. Without the secret a stored tag cannot be reversed by guessing
 * (a plain hash of an IPv4 address is undone by hashing all 2^32 of them); with 96 bits, a million tracked
 * sources collide with probability about 1e-17.
 */
import { hmacKey, type HmacKey, hmacSha256Words } from 'sluice/kit';

/** Domains separate what a tag is of, so an account named like an address never shares its tag. */
export type TagDomain = 'acct' | 'ip' | 'net' | 'fp' | 'pw';

const BASE64URL = Array.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_', (c) =>
  c.charCodeAt(0),
);
const encoder = new TextEncoder();

/**
 * Computes the tags with the plain-TypeScript HMAC-SHA-256 (src/crypto/sha256.ts) under a key whose inner
 * and outer padded blocks are absorbed once, here: a short tag costs two compressions and no allocation
 * but its string, where node:crypto's createHmac costs more than that in object and binding overhead per
 * call. The input is encoded as UTF-8 into a scratch buffer that this hasher reuses (cleared after each
 * tag, so no plain account, address or password outlives the call that tags it); the result equals
 * `createHmac('sha256', secret).update(domain + '\0').update(value).digest().subarray(0, 12)` in
 * base64url (privacy.test.ts checks it on random secrets and inputs).
 */
export class KeyedHasher {
  private readonly key: HmacKey;
  /** UTF-8 of the message being tagged: grown on demand, zeroed after each use. */
  private scratch = new Uint8Array(256);
  private readonly digest = new Int32Array(8);

  constructor(secret: Uint8Array) {
    this.key = hmacKey(secret);
  }

  /**
   * The tag of `value` in `domain`. The domain and value are joined with a NUL, which no domain contains,
   * so ('ip', 'x') and ('i', 'px') can never be spliced into the same input.
   */
  tag(domain: TagDomain, value: string | Uint8Array): string {
    let n = this.put(0, domain);
    n = this.putByte(n, 0);
    n = typeof value === 'string' ? this.put(n, value) : this.putBytes(n, value);
    return this.finish(n);
  }

  /**
   * The tag of the IPv4 subnet text `a.b.c.d/prefix` in `domain`, written straight into the scratch buffer:
   * equal to `tag(domain, \`${a}.${b}.${c}.${d}/${prefix}\`)` without the dozen short strings that
   * text costs to build (the guard tags a subnet on every call).
   */
  tagDottedQuad(domain: TagDomain, a: number, b: number, c: number, d: number, prefix: number): string {
    let n = this.put(0, domain);
    n = this.putByte(n, 0);
    this.room(n, 19); // 4 × 3 digits, 3 dots, a slash and 3 digits
    n = this.putDecimal(n, a);
    n = this.putByte(n, 0x2e);
    n = this.putDecimal(n, b);
    n = this.putByte(n, 0x2e);
    n = this.putDecimal(n, c);
    n = this.putByte(n, 0x2e);
    n = this.putDecimal(n, d);
    n = this.putByte(n, 0x2f);
    n = this.putDecimal(n, prefix);
    return this.finish(n);
  }

  /**
   * A password's tag, salted with the account's tag so that two accounts with the same wrong password do
   * not share a tag (which would tell a reader of the state that they did).
   */
  passwordTag(accountTag: string, password: string): string {
    let n = this.put(0, 'pw');
    n = this.putByte(n, 0);
    n = this.put(n, accountTag);
    n = this.putByte(n, 0);
    n = this.put(n, password);
    return this.finish(n);
  }

  /** HMACs scratch[0..n), wipes it, and encodes the first 96 bits of the digest: 16 base64url characters. */
  private finish(n: number): string {
    const d = this.digest;
    hmacSha256Words(this.key, this.scratch, n, d);
    this.scratch.fill(0, 0, n);
    const a = d[0]!,
      b = d[1]!,
      c = d[2]!;
    const s = BASE64URL;
    return String.fromCharCode(
      s[a >>> 26]!,
      s[(a >>> 20) & 63]!,
      s[(a >>> 14) & 63]!,
      s[(a >>> 8) & 63]!,
      s[(a >>> 2) & 63]!,
      s[((a & 3) << 4) | (b >>> 28)]!,
      s[(b >>> 22) & 63]!,
      s[(b >>> 16) & 63]!,
      s[(b >>> 10) & 63]!,
      s[(b >>> 4) & 63]!,
      s[((b & 15) << 2) | (c >>> 30)]!,
      s[(c >>> 24) & 63]!,
      s[(c >>> 18) & 63]!,
      s[(c >>> 12) & 63]!,
      s[(c >>> 6) & 63]!,
      s[c & 63]!,
    );
  }

  private room(n: number, more: number): Uint8Array {
    if (n + more > this.scratch.length) {
      const grown = new Uint8Array(Math.max(2 * this.scratch.length, n + more));
      grown.set(this.scratch.subarray(0, n));
      this.scratch.fill(0, 0, n);
      this.scratch = grown;
    }
    return this.scratch;
  }

  private putByte(n: number, byte: number): number {
    this.room(n, 1)[n] = byte;
    return n + 1;
  }

  /** Writes an integer from 0 to 999 in decimal, without leading zeros, as String(value) would. */
  private putDecimal(n: number, value: number): number {
    const buf = this.room(n, 3);
    if (value >= 100) buf[n++] = 0x30 + Math.floor(value / 100);
    if (value >= 10) buf[n++] = 0x30 + (Math.floor(value / 10) % 10);
    buf[n++] = 0x30 + (value % 10);
    return n;
  }

  private putBytes(n: number, bytes: Uint8Array): number {
    this.room(n, bytes.length).set(bytes, n);
    return n + bytes.length;
  }

  /** Writes `text` as UTF-8 at n (as Buffer does: a lone surrogate becomes U+FFFD); returns the new end. */
  private put(n: number, text: string): number {
    const buf = this.room(n, 3 * text.length);
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c >= 0x80) return n + encoder.encodeInto(text.slice(i), buf.subarray(n)).written;
      buf[n++] = c;
    }
    return n;
  }
}

/**
 * Compares two tags in time that depends only on their length, never on where they first differ: every
 * character is compared, the differences are OR-ed together and looked at once at the end (no early exit,
 * no branch on the data; what node:crypto's timingSafeEqual does, without two Buffers per comparison).
 */
export function tagsEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** Whether `tag` is one of `tags`, comparing every entry in constant time (no early exit). */
export function tagIn(tag: string, tags: readonly string[]): boolean {
  let found = false;
  for (const t of tags) if (tagsEqual(tag, t)) found = true;
  return found;
}
