/**
 * The guard's records on Redis, read in the app: a check reads its keys' values with one MGET (no script)
 * and they are decoded here, so Redis does no more per check than hand over the bytes. Only decoding and
 * packing: what a record means at `now`, and what a success does to it, is rules.ts's (the rules guard.lua
 * is the twin of), and a bucket's peek is the limiter's own token bucket (core/token-bucket.ts).
 *
 * Layouts (little-endian doubles, as guard.lua packs them with struct):
 *   account  uf ff ul fl lf fu exp (7 doubles), npw nfam (2 uint16), the wrong password tags (npw bytes),
 *            the familiar source tags (nfam bytes, comma-joined), then one double per familiar tag: its end
 *   pair     deficit, at (the token bucket's state)
 *   source   gen f s pf ps last (ratio counts), the bucket's deficit and at, when it is full again
 *            (9 doubles), then two doubles per failed account: its 32-bit hash, and when it last failed
 */
import { type Decision, makeDecision, type Policy, TokenBucket, Verdict } from 'sluice/kit';
import {
  AccountRecord,
  DistinctCount,
  judgePath,
  liveAccount,
  roll,
  sourceIdle,
  sourceView,
  succeedAccount,
} from '../rules.js';
import type { AccountView, JudgedSuccess, SourceSpec, SourceView } from '../state.js';

const ACCOUNT_HEAD_BYTES = 60;
const SOURCE_HEAD_BYTES = 72;

const view = (bytes: Uint8Array) => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
const f64 = (d: DataView, at: number) => d.getFloat64(at, true);

/** ASCII bytes as text (tags are base64url). */
function ascii(bytes: Uint8Array, from: number, to: number): string {
  let s = '';
  for (let i = from; i < to; i++) s += String.fromCharCode(bytes[i]!);
  return s;
}

/** The record in `bytes` (as read, null for none) as it is at `now` (rules.ts liveAccount), or undefined if there is none or it has expired. The wrong password tags are not decoded: the app never needs them. */
function liveRecord(bytes: Uint8Array | null, now: number): AccountRecord | undefined {
  if (bytes === null || bytes.length < ACCOUNT_HEAD_BYTES) return undefined;
  const d = view(bytes);
  const r = new AccountRecord();
  r.expiresAt = f64(d, 48);
  if (r.expiresAt <= now) return undefined;
  r.unfamiliarFailures = f64(d, 0);
  r.familiarFailures = f64(d, 8);
  r.unfamiliarLockedUntil = f64(d, 16);
  r.familiarLockedUntil = f64(d, 24);
  r.lastFailureAt = f64(d, 32);
  r.failuresUntil = f64(d, 40);
  const npw = d.getUint16(56, true);
  const nfam = d.getUint16(58, true);
  const famAt = ACCOUNT_HEAD_BYTES + npw;
  const endsAt = famAt + nfam;
  if (nfam > 0) {
    let from = famAt;
    let k = 0;
    for (let i = famAt; i <= endsAt; i++) {
      if (i < endsAt && bytes[i] !== 44) continue; // ','
      r.familiar.push(ascii(bytes, from, i));
      r.familiarUntil.push(f64(d, endsAt + 8 * k));
      from = i + 1;
      k++;
    }
  }
  liveAccount(r, now);
  return r;
}

/** An account's view at `now`, or undefined if there is none or it has expired (liveAccount). */
export function accountView(bytes: Uint8Array | null, now: number): AccountView | undefined {
  return liveRecord(bytes, now);
}

/**
 * A success computed in the app (succeededAccount): the new record's fields (its failure counts and times
 * as the success leaves them, its familiar tags comma-joined and their ends; no wrong passwords), its time
 * to live, and the answer. The script packs the fields (guard.lua's AC), or packSuccess does.
 */
export interface AccountSuccess {
  readonly uf: number;
  readonly ul: number;
  readonly lf: number;
  readonly fu: number;
  readonly exp: number;
  readonly familiar: string;
  readonly ends: readonly number[];
  readonly ttlMs: number;
  readonly judged: JudgedSuccess;
}

/**
 * rules.ts's succeedAccount on the record `bytes` (as read, or null for none), its path judged from its
 * familiar list. The script writes the result only if the record is still `bytes` (guard.lua's AC), so a
 * success costs Redis a comparison and a write instead of the work.
 */
export function succeededAccount(
  bytes: Uint8Array | null,
  now: number,
  sources: readonly string[],
  familiarMs: number,
  maxFamiliar: number,
): AccountSuccess {
  const read = liveRecord(bytes, now);
  const path = judgePath(read, sources);
  const before = read?.unfamiliarFailures ?? 0;
  const r = read ?? new AccountRecord();
  succeedAccount(r, path, sources, now, familiarMs, maxFamiliar);
  return {
    uf: r.unfamiliarFailures,
    ul: r.unfamiliarLockedUntil,
    lf: r.lastFailureAt,
    fu: r.failuresUntil,
    exp: r.expiresAt,
    familiar: r.familiar.join(','),
    ends: r.familiarUntil,
    ttlMs: Math.ceil(r.expiresAt - now),
    judged: { path, unfamiliarFailuresBefore: before },
  };
}

/** The record a success leaves, as its bytes: what guard.lua's AC packs from the same fields. */
export function packSuccess(s: AccountSuccess): Buffer {
  const text = s.familiar;
  const value = Buffer.allocUnsafe(ACCOUNT_HEAD_BYTES + text.length + 8 * s.ends.length);
  value.writeDoubleLE(s.uf, 0);
  value.writeDoubleLE(0, 8); // ff
  value.writeDoubleLE(s.ul, 16);
  value.writeDoubleLE(0, 24); // fl
  value.writeDoubleLE(s.lf, 32);
  value.writeDoubleLE(s.fu, 40);
  let at = value.writeDoubleLE(s.exp, 48);
  at = value.writeUInt16LE(0, at); // no wrong passwords
  at = value.writeUInt16LE(text.length, at);
  at += value.write(text, at, 'latin1');
  for (const e of s.ends) at = value.writeDoubleLE(e, at);
  return value;
}

/** Reads token-bucket peeks (cost 0) under one policy, as the Lua bucket's peek: the limiter's own arithmetic. */
export class BucketPeek {
  private readonly bucket: TokenBucket;
  private readonly v = new Verdict(2);
  /** The state peeked at, in the store's slab layout (all zeros: full); evaluate only reads it. */
  private readonly state = new Float64Array(2);

  constructor(readonly policy: Policy) {
    this.bucket = new TokenBucket(policy);
  }

  /** The peek of a pair key's value (16 bytes; anything else is a full bucket). */
  pair(bytes: Uint8Array | null, now: number): Decision {
    return this.peek(bytes !== null && bytes.length === 16 ? bytes : null, 0, now);
  }

  /** The peek of the bucket inside a source's record (none: full). */
  source(bytes: Uint8Array | null, now: number): Decision {
    return this.peek(bytes !== null && bytes.length >= SOURCE_HEAD_BYTES ? bytes : null, 48, now);
  }

  /** The peek of the bucket state at `at` in `bytes` (null: a full bucket). */
  private peek(bytes: Uint8Array | null, at: number, now: number): Decision {
    const s = this.state;
    if (bytes === null) s[0] = s[1] = 0;
    else {
      const d = view(bytes);
      s[0] = f64(d, at);
      s[1] = f64(d, at + 8);
    }
    const v = this.v;
    this.bucket.evaluate(s, 0, now, 0, v);
    const p = this.policy;
    return makeDecision({
      allowed: v.allowed,
      limit: p.limit,
      remaining: v.remaining,
      resetAfterMs: v.resetAfterMs,
      retryAfterMs: v.retryAfterMs,
      delayMs: 0,
      policy: p.name,
    });
  }
}

/** A source record's ratio counts, copied out of its bytes to be rolled (rules.ts). */
const counts = new Float64Array(6);
const distinctCount = new DistinctCount();

/**
 * A source's view at `now` (readSource and sourceView), or undefined if there is none or it has been idle
 * for two of its longest windows: rules.ts's roll and sourceView on the counts read.
 */
export function sourceViewOf(bytes: Uint8Array | null, now: number, spec: SourceSpec): SourceView | undefined {
  if (bytes === null || bytes.length < SOURCE_HEAD_BYTES) return undefined;
  const d = view(bytes);
  if (sourceIdle(f64(d, 40), now, spec)) return undefined; // last
  for (let i = 0; i < 6; i++) counts[i] = f64(d, 8 * i);
  roll(counts, 0, now, spec.ratioWindowMs);
  const distinct = distinctCount.start(now, spec);
  for (let at = SOURCE_HEAD_BYTES + 8; at + 8 <= bytes.length; at += 16) distinct.add(f64(d, at));
  return sourceView(counts, 0, now, spec, distinct);
}
