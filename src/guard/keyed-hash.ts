/**
 * Keyed hashes: everything the guard keeps about an account, an address or a password is an HMAC-SHA-256
 * under the server secret, cut to 96 bits. Without the secret a stored tag cannot be reversed by guessing
 * (a plain hash of an IPv4 address is undone by hashing all 2^32 of them); with 96 bits, a million tracked
 * sources collide with probability about 1e-17.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Bytes kept of each HMAC: 12 bytes, 16 base64url characters. */
const TAG_BYTES = 12;

/** Domains separate what a tag is of, so an account named like an address never shares its tag. */
export type TagDomain = 'acct' | 'ip' | 'net' | 'fp' | 'pw';

export class KeyedHasher {
  private readonly secret: Buffer;

  constructor(secret: Uint8Array) {
    this.secret = Buffer.from(secret);
  }

  /**
   * The tag of `value` in `domain`. The domain and value are joined with a NUL, which no domain contains,
   * so ('ip', 'x') and ('i', 'px') can never be spliced into the same input.
   */
  tag(domain: TagDomain, value: string | Uint8Array): string {
    const h = createHmac('sha256', this.secret);
    h.update(domain);
    h.update('\0');
    h.update(value);
    return h.digest().subarray(0, TAG_BYTES).toString('base64url');
  }

  /**
   * A password's tag, salted with the account's tag so that two accounts with the same wrong password do
   * not share a tag (which would tell a reader of the state that they did).
   */
  passwordTag(accountTag: string, password: string): string {
    const h = createHmac('sha256', this.secret);
    h.update('pw\0');
    h.update(accountTag);
    h.update('\0');
    h.update(password);
    return h.digest().subarray(0, TAG_BYTES).toString('base64url');
  }
}

/** Compares two tags in time that depends only on their length, never on where they first differ. */
export function tagsEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Whether `tag` is one of `tags`, comparing every entry in constant time (no early exit). */
export function tagIn(tag: string, tags: readonly string[]): boolean {
  let found = false;
  for (const t of tags) if (tagsEqual(tag, t)) found = true;
  return found;
}
