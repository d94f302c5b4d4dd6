/**
 * The tags of recent attempts, so that `record` finds the tags `check` computed for the same attempt instead
 * of computing the three HMAC-SHA-256 tags (account, address, subnet) again, about a third of a
 * check+record pair's work, for a SipHash of the attempt's text in each call, a small fraction of that.
 *
 * The privacy rule holds: nothing here is a plain account, address or fingerprint. An attempt is known by
 * a 128-bit SipHash-2-4 of its text under a random key drawn per process (never stored, never shared), and
 * what is kept for it is what the guard state keeps anyway: its tags, its bucket keys (made of tags) and
 * its address's standing in the configured lists. The text is packed into a scratch buffer only while it
 * is hashed, and the buffer is zeroed straight after (as KeyedHasher does with its own).
 *
 * Decisions do not change. A tag is a function of the secret and the text alone, so found tags equal
 * recomputed ones; only a different attempt with the same 128-bit SipHash could be mistaken for this one,
 * which without the key is a 2^-128 chance per lookup (less likely than two of the 96-bit tags colliding).
 * A miss (an attempt `check` never saw, or one whose slot a later attempt took) recomputes, as before.
 *
 * Bounded: a direct-mapped table of RECENT_ATTEMPT_SLOTS (1,024) entries, each emptied by its attempt's
 * record or overwritten by the next attempt checked into its slot. Full, it holds about 0.6 MB (measured:
 * 1,024 entries of tags and bucket keys that nothing else referenced), however many sources the guard
 * tracks. With k logins between a check and its record (k in flight on a busy server), a record misses
 * with a chance of about k / 1,024, and a miss only costs the recomputation this table saves.
 */
import { sipHash128 } from 'sluice/kit';
import type { AttemptMemo, TaggedAttempt } from './attempt.js';

/** Slots in the table: at most this many attempts' tags are held (a power of two). */
export const RECENT_ATTEMPT_SLOTS = 1024;

/** Longest message: an account and a fingerprint of 1024 characters, an address of 64, three bytes each at most, three headers. */
const MAX_BYTES = 3 * (1024 + 64 + 1024) + 3 * 2;

export class RecentAttempts implements AttemptMemo {
  /** The SipHash key: 128 random bits, for this process only. */
  private readonly key = crypto.getRandomValues(new Int32Array(4));
  /** The message hashed for an attempt (see putText); all zero between calls. */
  private readonly scratch = new Uint8Array(MAX_BYTES);
  /** Each slot's attempt id (its SipHash), four words a slot. */
  private readonly ids = new Int32Array(4 * RECENT_ATTEMPT_SLOTS);
  private readonly entries: (TaggedAttempt | undefined)[] = new Array<TaggedAttempt | undefined>(
    RECENT_ATTEMPT_SLOTS,
  ).fill(undefined);
  /** The id of the attempt last looked up, and its slot: where `keep` puts its tags. */
  private readonly id = new Int32Array(4);
  private slot = -1;

  /** How many slots hold an attempt (for tests). */
  get size(): number {
    let n = 0;
    for (const e of this.entries) if (e !== undefined) n++;
    return n;
  }

  /**
   * The tags kept for this attempt, or undefined. Either way it remembers the attempt's id, so that
   * `keep` right after (with nothing else in between) stores the tags computed on a miss. With `take`,
   * found tags leave the table (record's call: the attempt is over, and tags that die with it are
   * cheaper to collect than tags held until their slot is taken). The caller has checked the lengths:
   * the account and fingerprint at most 1024 characters, the address at most 64.
   */
  find(account: string, ip: string, fingerprint: string | undefined, take: boolean): TaggedAttempt | undefined {
    const b = this.scratch;
    let n = putText(b, 0, account, 0);
    n = putText(b, n, ip, 0);
    if (fingerprint === undefined) {
      b[n++] = 0; // a header of 0: no fingerprint (a fingerprint's header counts one more than its length)
      b[n++] = 0;
    } else n = putText(b, n, fingerprint, 1);
    const id = this.id;
    sipHash128(this.key, b, n, id);
    for (let i = 0; i < n; i++) b[i] = 0; // no text outlives the call
    const slot = id[0]! & (RECENT_ATTEMPT_SLOTS - 1);
    this.slot = slot;
    const ids = this.ids;
    const at = 4 * slot;
    const same =
      ((ids[at]! ^ id[0]!) | (ids[at + 1]! ^ id[1]!) | (ids[at + 2]! ^ id[2]!) | (ids[at + 3]! ^ id[3]!)) === 0;
    if (!same) return undefined;
    const found = this.entries[slot];
    if (take) this.entries[slot] = undefined;
    return found;
  }

  /** Keeps the tags of the attempt `find` was last asked about (and did not know). */
  keep(tags: TaggedAttempt): void {
    const slot = this.slot;
    if (slot < 0) return;
    this.slot = -1;
    const at = 4 * slot;
    this.ids[at] = this.id[0]!;
    this.ids[at + 1] = this.id[1]!;
    this.ids[at + 2] = this.id[2]!;
    this.ids[at + 3] = this.id[3]!;
    this.entries[slot] = tags;
  }
}

/**
 * Writes one text of the message hashed for an attempt at b[n]: a two-byte header, its length plus `bias`
 * (little-endian), then its UTF-16 code units in LEB128 (a unit below 128 is its own byte, so ASCII costs
 * a byte a character; larger units take two or three bytes, each but the last with the top bit set). The
 * header says how many units follow and LEB128 says where each ends, so no two different attempts make
 * the same message. Returns the end.
 */
function putText(b: Uint8Array, n: number, text: string, bias: number): number {
  const header = text.length + bias;
  b[n++] = header & 0xff;
  b[n++] = header >>> 8;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) b[n++] = c;
    else if (c < 0x4000) {
      b[n++] = 0x80 | (c & 0x7f);
      b[n++] = c >>> 7;
    } else {
      b[n++] = 0x80 | (c & 0x7f);
      b[n++] = 0x80 | ((c >>> 7) & 0x7f);
      b[n++] = c >>> 14;
    }
  }
  return n;
}
