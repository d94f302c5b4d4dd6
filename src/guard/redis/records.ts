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
 *            (9 doubles), ntags (uint16), the failed account tags (ntags bytes), then one double per tag:
 *            when it last failed
 */
import { makeDecision, TokenBucket, Verdict } from '../../core/index.js';
import type { Decision, Policy } from '../../core/index.js';
import type { AccountView, SourceSpec, SourceView } from '../state.js';

const ACCOUNT_HEAD_BYTES = 60;
const SOURCE_HEAD_BYTES = 74;

const view = (bytes: Uint8Array) => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
const f64 = (d: DataView, at: number) => d.getFloat64(at, true);

/** ASCII bytes as text (tags are base64url). */
function ascii(bytes: Uint8Array, from: number, to: number): string {
  let s = '';
  for (let i = from; i < to; i++) s += String.fromCharCode(bytes[i]!);
  return s;
}

/**
 * An account's view at `now`, or undefined if there is none or it has expired (liveAccount): failures
 * past their memory read as none, familiar sources past their end are left out.
 */
export function accountView(bytes: Uint8Array | null, now: number): AccountView | undefined {
  if (bytes === null || bytes.length < ACCOUNT_HEAD_BYTES) return undefined;
  const d = view(bytes);
  if (f64(d, 48) <= now) return undefined; // exp
  let uf = f64(d, 0);
  let ff = f64(d, 8);
  let ul = f64(d, 16);
  let fl = f64(d, 24);
  let lf = f64(d, 32);
  if (lf > 0 && f64(d, 40) <= now) uf = ff = ul = fl = lf = 0; // failures forgotten (fu passed)
  const npw = d.getUint16(56, true);
  const nfam = d.getUint16(58, true);
  const famAt = ACCOUNT_HEAD_BYTES + npw;
  const endsAt = famAt + nfam;
  const familiar: string[] = [];
  if (nfam > 0) {
    let from = famAt;
    let k = 0;
    for (let i = famAt; i <= endsAt; i++) {
      if (i < endsAt && bytes[i] !== 44) continue; // ','
      if (f64(d, endsAt + 8 * k) > now) familiar.push(ascii(bytes, from, i));
      from = i + 1;
      k++;
    }
  }
  return { unfamiliarFailures: uf, familiarFailures: ff, unfamiliarLockedUntil: ul, familiarLockedUntil: fl, lastFailureAt: lf, familiar };
}

/** A token bucket's state, as the store's slab layout (all zeros: full). */
function bucketState(d: DataView | undefined, at: number): Float64Array {
  const s = new Float64Array(2);
  if (d !== undefined) {
    s[0] = f64(d, at);
    s[1] = f64(d, at + 8);
  }
  return s;
}

/** Reads token-bucket peeks (cost 0) under one policy, as the Lua bucket's peek: the limiter's own arithmetic. */
export class BucketPeek {
  private readonly bucket: TokenBucket;
  private readonly v = new Verdict(2);

  constructor(readonly policy: Policy) {
    this.bucket = new TokenBucket(policy);
  }

  /** The peek of a pair key's value (16 bytes; anything else is a full bucket). */
  pair(bytes: Uint8Array | null, now: number): Decision {
    return this.peek(bucketState(bytes !== null && bytes.length === 16 ? view(bytes) : undefined, 0), now);
  }

  /** The peek of the bucket inside a source's record (none: full). */
  source(bytes: Uint8Array | null, now: number): Decision {
    return this.peek(bucketState(bytes !== null && bytes.length >= SOURCE_HEAD_BYTES ? view(bytes) : undefined, 48), now);
  }

  private peek(s: Float64Array, now: number): Decision {
    const v = this.v;
    this.bucket.evaluate(s, 0, now, 0, v);
    const p = this.policy;
    return makeDecision(v.allowed, p.limit, v.remaining, v.resetAfterMs, v.retryAfterMs, 0, p.name, undefined, undefined);
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
  for (let at = SOURCE_HEAD_BYTES + d.getUint16(72, true); at + 8 <= bytes.length; at += 8) {
    const seen = f64(d, at);
    if (seen + spec.distinctWindowMs > now) distinct++;
    if (seen + longMs > now) distinctLong++;
  }
  return { failures: pf * weight + f, successes: ps * weight + s, distinctFailedAccounts: distinct, distinctFailedAccountsLong: distinctLong };
}
