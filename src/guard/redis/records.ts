/**
 * The guard's records on Redis, read in the app: a check reads its keys' values with one MGET (no script)
 * and decodes them here, so Redis does no more per check than hand over the bytes. This is the twin of
 * guard.lua's decodeAccount / liveAccount and decodeSource / readSource, and of the limiter's token bucket
 * (core/token-bucket.ts, whose Lua twin writes the buckets): the same layouts, the same expiry.
 *
 * Layouts (little-endian doubles, as guard.lua packs them with struct):
 *   account  uf ff ul fl lf fu exp (7 doubles), npw nfam (2 uint16), the wrong password tags (npw bytes),
 *            the familiar source tags (nfam bytes, comma-joined), then one double per familiar tag: its end
 *   pair     deficit, at (the token bucket's state)
 *   source   gen f s pf ps last (ratio counts), the bucket's deficit and at, when it is full again
 *            (9 doubles), then two doubles per failed account: its 32-bit hash, and when it last failed
 */
import { makeDecision, TokenBucket, Verdict } from '../../core/index.js';
import type { Decision, Policy } from '../../core/index.js';
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

/** An account record whole, as guard.lua's liveAccount leaves it: failures past their memory forgotten, familiar sources past their end left out. */
interface AccountRecord {
  uf: number;
  ff: number;
  ul: number;
  fl: number;
  lf: number;
  fu: number;
  exp: number;
  familiar: string[];
  ends: number[];
}

/** The live record at `now`, or undefined if there is none or it has expired (liveAccount). */
function liveAccount(bytes: Uint8Array | null, now: number): AccountRecord | undefined {
  if (bytes === null || bytes.length < ACCOUNT_HEAD_BYTES) return undefined;
  const d = view(bytes);
  const exp = f64(d, 48);
  if (exp <= now) return undefined;
  const npw = d.getUint16(56, true);
  const nfam = d.getUint16(58, true);
  const r: AccountRecord = { uf: f64(d, 0), ff: f64(d, 8), ul: f64(d, 16), fl: f64(d, 24), lf: f64(d, 32), fu: f64(d, 40), exp, familiar: [], ends: [] };
  if (r.lf > 0 && r.fu <= now) r.uf = r.ff = r.ul = r.fl = r.lf = r.fu = 0; // the failures are forgotten
  const famAt = ACCOUNT_HEAD_BYTES + npw;
  const endsAt = famAt + nfam;
  if (nfam > 0) {
    let from = famAt;
    let k = 0;
    for (let i = famAt; i <= endsAt; i++) {
      if (i < endsAt && bytes[i] !== 44) continue; // ','
      const end = f64(d, endsAt + 8 * k);
      if (end > now) {
        r.familiar.push(ascii(bytes, from, i));
        r.ends.push(end);
      }
      from = i + 1;
      k++;
    }
  }
  return r;
}

/** An account's view at `now`, or undefined if there is none or it has expired (liveAccount). */
export function accountView(bytes: Uint8Array | null, now: number): AccountView | undefined {
  const r = liveAccount(bytes, now);
  if (r === undefined) return undefined;
  return { unfamiliarFailures: r.uf, familiarFailures: r.ff, unfamiliarLockedUntil: r.ul, familiarLockedUntil: r.fl, lastFailureAt: r.lf, familiar: r.familiar };
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
 * guard.lua's succeedAccount on the record `bytes` (as read, or null for none): the path judged from its
 * familiar list, the path's failures forgotten (a stranger's success forgets both paths'), the wrong
 * passwords forgotten, and `sources` made familiar first, then the others it held, at most `maxFamiliar`.
 * The script writes the result only if the record is still `bytes` (guard.lua's AC), so a success costs
 * Redis a comparison and a write instead of the work.
 */
export function succeededAccount(bytes: Uint8Array | null, now: number, sources: readonly string[], familiarMs: number, maxFamiliar: number): AccountSuccess {
  const r = liveAccount(bytes, now);
  let familiarPath = false;
  if (r !== undefined) for (const s of sources) if (r.familiar.includes(s)) familiarPath = true;
  const fam: string[] = [];
  const ends: number[] = [];
  const until = now + familiarMs;
  for (let i = 0; i < sources.length; i++) {
    const tag = sources[i]!;
    if (fam.length < maxFamiliar && sources.indexOf(tag) === i) {
      fam.push(tag);
      ends.push(until);
    }
  }
  if (r !== undefined) {
    for (let j = 0; j < r.familiar.length && fam.length < maxFamiliar; j++) {
      if (!sources.includes(r.familiar[j]!)) {
        fam.push(r.familiar[j]!);
        ends.push(r.ends[j]!);
      }
    }
  }
  const before = r?.uf ?? 0;
  // A stranger's success forgets both paths' failures and locks; the owner's, its own path's.
  const uf = familiarPath ? before : 0;
  const ul = familiarPath ? r!.ul : 0;
  const lf = familiarPath && uf > 0 ? r!.lf : 0;
  const fu = familiarPath ? r!.fu : 0;
  let exp = Math.max(ul, lf > 0 ? fu : now);
  for (const e of ends) if (e > exp) exp = e;
  return { uf, ul, lf, fu, exp, familiar: fam.join(','), ends, ttlMs: Math.ceil(exp - now), judged: { path: familiarPath ? 'familiar' : 'unfamiliar', unfamiliarFailuresBefore: before } };
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
    return makeDecision({ allowed: v.allowed, limit: p.limit, remaining: v.remaining, resetAfterMs: v.resetAfterMs, retryAfterMs: v.retryAfterMs, delayMs: 0, policy: p.name });
  }
}

/**
 * A source's view at `now` (readSource and sourceView), or undefined if there is none or it has been idle
 * for two of its longest windows. The previous ratio window fades linearly across this one (source-table.ts).
 */
export function sourceView(bytes: Uint8Array | null, now: number, spec: SourceSpec): SourceView | undefined {
  if (bytes === null || bytes.length < SOURCE_HEAD_BYTES) return undefined;
  const d = view(bytes);
  const longMs = spec.longDistinctWindowMs ?? spec.distinctWindowMs;
  const ratioMs = spec.ratioWindowMs;
  const idleMs = 2 * Math.max(spec.distinctWindowMs, longMs, ratioMs);
  if (f64(d, 40) + idleMs <= now) return undefined; // last
  // The ratio counts as of the generation of `now` (roll).
  let gen = f64(d, 0);
  let f = f64(d, 8);
  let s = f64(d, 16);
  let pf = f64(d, 24);
  let ps = f64(d, 32);
  const nowGen = Math.floor(now / ratioMs);
  if (nowGen !== gen) {
    if (nowGen === gen + 1) [pf, ps] = [f, s];
    else pf = ps = 0;
    f = s = 0;
    gen = nowGen;
  }
  const weight = (ratioMs - (now - gen * ratioMs)) / ratioMs;
  let distinct = 0;
  let distinctLong = 0;
  for (let at = SOURCE_HEAD_BYTES + 8; at + 8 <= bytes.length; at += 16) {
    const seen = f64(d, at);
    if (seen + spec.distinctWindowMs > now) distinct++;
    if (seen + longMs > now) distinctLong++;
  }
  return { failures: pf * weight + f, successes: ps * weight + s, distinctFailedAccounts: distinct, distinctFailedAccountsLong: distinctLong };
}
