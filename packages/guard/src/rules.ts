/**
 * The guard's record rules, pure, as core/ holds the limiter's algorithms: a record and an attempt in,
 * the record as the rule leaves it and the answer out, no I/O, no clock, no storage. The memory state
 * (memory-records.ts, source-table.ts) keeps its records and applies these; the Redis state decodes a record
 * read in the app (redis/records.ts) and applies them too, and guard.lua is their Lua twin, operation for
 * operation (its liveAccount, judge, failAccount, lock and succeedAccount; roll and live), held to them by
 * the Redis-against-memory differential and the guard conformance suites. Where a source's set of failed
 * accounts gains one (source-table.ts's noteDistinct, guard.lua's) is written beside each store's layout.
 *
 * Accounts (Entra smart lockout's shape): two failure counters, familiar and unfamiliar path, each with its
 * backoff lock; the last three wrong password tags, a repeat of which counts nothing; the familiar sources,
 * newest first, each until its own end. Failures are forgotten `memoryMs` after the last one.
 *
 * Sources: failures and successes in two generations of the ratio window (the previous one fades linearly
 * across the current one, as the sliding-window counter), and the distinct accounts that failed there,
 * each with when it last did.
 */
import type { AccountView, FailOutcome, Path, SourceSpec, SourceView } from './state.js';
import { tagIn } from './keyed-hash.js';

/** Wrong password tags remembered per account (Entra smart lockout: the last three). */
export const REMEMBERED_PASSWORDS = 3;

/** An account's record whole: its view, and what only the rules read. */
export class AccountRecord implements AccountView {
  unfamiliarFailures = 0;
  familiarFailures = 0;
  unfamiliarLockedUntil = 0;
  familiarLockedUntil = 0;
  lastFailureAt = 0;
  /** When the failure counters (and locks, and password tags) are forgotten: memoryMs after the last failure. */
  failuresUntil = 0;
  /** When every part of the record has expired. */
  expiresAt = 0;
  /** Newest first; null when none. */
  passwords: string[] | null = null;
  /** Newest first, each until its `familiarUntil`. */
  familiar: string[] = [];
  familiarUntil: number[] = [];
}

/**
 * Whether the record is live at `now`; if it is, failures past their memory are forgotten and familiar
 * sources past their end dropped (lazily, on the next look: familiar sources keep the record longer).
 */
export function liveAccount(r: AccountRecord, now: number): boolean {
  if (r.expiresAt <= now) return false;
  if (r.lastFailureAt > 0 && r.failuresUntil <= now) forgetFailures(r);
  if (r.familiar.length > 0) pruneFamiliar(r, now);
  return true;
}

/**
 * The path of an attempt from `sources` (its location and device tags): familiar if the account knows any.
 * Every tag is compared, as tagIn compares every entry, so the time taken does not say which one matched.
 */
export function judgePath(account: AccountView | undefined, sources: readonly string[]): Path {
  if (account === undefined || account.familiar.length === 0) return 'unfamiliar';
  let familiar = false;
  for (const s of sources) if (tagIn(s, account.familiar)) familiar = true;
  return familiar ? 'familiar' : 'unfamiliar';
}

/** Whether `passwordTag` is one of the last wrong ones: a repeat, which counts nothing. */
export function repeatsPassword(r: AccountRecord | undefined, passwordTag: string | undefined): boolean {
  return passwordTag !== undefined && (r?.passwords?.includes(passwordTag) ?? false);
}

/** What a failure on `path` finds or leaves: the path's count and both paths'. */
export function failureOutcome(r: AccountRecord, path: Path, counted: boolean): FailOutcome {
  return {
    counted,
    failures: path === 'familiar' ? r.familiarFailures : r.unfamiliarFailures,
    total: r.familiarFailures + r.unfamiliarFailures,
  };
}

/**
 * A counted failure on `path` (the caller has ruled out a repeated password): the path's counter up, the
 * failures remembered `memoryMs` from now, the password tag the newest of the last three.
 */
export function failAccount(
  r: AccountRecord,
  path: Path,
  passwordTag: string | undefined,
  now: number,
  memoryMs: number,
): FailOutcome {
  if (path === 'familiar') r.familiarFailures++;
  else r.unfamiliarFailures++;
  r.lastFailureAt = now;
  r.failuresUntil = now + memoryMs;
  if (passwordTag !== undefined) {
    const list = r.passwords ?? (r.passwords = []);
    list.unshift(passwordTag);
    if (list.length > REMEMBERED_PASSWORDS) list.length = REMEMBERED_PASSWORDS;
  }
  r.expiresAt = Math.max(r.expiresAt, now + memoryMs);
  return failureOutcome(r, path, true);
}

/** Locks `path` until `until`, keeping a later lock already set (so concurrent writers commute). */
export function lockAccount(r: AccountRecord, path: Path, until: number): void {
  if (path === 'familiar') r.familiarLockedUntil = Math.max(r.familiarLockedUntil, until);
  else r.unfamiliarLockedUntil = Math.max(r.unfamiliarLockedUntil, until);
  r.expiresAt = Math.max(r.expiresAt, until);
}

/**
 * A success on `path`: a stranger's (the password typed right from somewhere new) forgets both paths'
 * failures and locks, the owner's only its own path's, so that the owner logging in at home does not give
 * a slow guesser fresh free tries; the wrong password tags are forgotten; `sources` become familiar first
 * (each until `now + familiarMs`), then the others held, at most `maxFamiliar`. The record lives until
 * the latest of what it keeps.
 */
export function succeedAccount(
  r: AccountRecord,
  path: Path,
  sources: readonly string[],
  now: number,
  familiarMs: number,
  maxFamiliar: number,
): void {
  if (path === 'unfamiliar') forgetFailures(r);
  else {
    r.familiarFailures = 0;
    r.familiarLockedUntil = 0;
    r.passwords = null;
    if (r.unfamiliarFailures === 0) r.lastFailureAt = 0;
  }
  const until = now + familiarMs;
  for (let i = sources.length - 1; i >= 0; i--) moveToFront(r, sources[i]!, until);
  if (r.familiar.length > maxFamiliar) {
    r.familiar.length = maxFamiliar;
    r.familiarUntil.length = maxFamiliar;
  }
  // The latest of every expiry, by a loop: Math.max(...spread) builds an argument list per success.
  let expiresAt = Math.max(r.lastFailureAt > 0 ? r.failuresUntil : now, r.unfamiliarLockedUntil);
  for (const t of r.familiarUntil) if (t > expiresAt) expiresAt = t;
  r.expiresAt = expiresAt;
}

function forgetFailures(r: AccountRecord): void {
  r.unfamiliarFailures = 0;
  r.familiarFailures = 0;
  r.unfamiliarLockedUntil = 0;
  r.familiarLockedUntil = 0;
  r.lastFailureAt = 0;
  r.failuresUntil = 0;
  r.passwords = null;
}

/**
 * Puts `tag` first in the account's familiar list with `until`, removing its older entry: the lists hold
 * at most a few dozen entries, shifted by hand rather than by splice and unshift (which allocate).
 */
function moveToFront(r: AccountRecord, tag: string, until: number): void {
  const tags = r.familiar;
  const times = r.familiarUntil;
  let at = tags.indexOf(tag);
  if (at < 0) {
    at = tags.length;
    tags.push(tag);
    times.push(until);
  }
  for (let j = at; j > 0; j--) {
    tags[j] = tags[j - 1]!;
    times[j] = times[j - 1]!;
  }
  tags[0] = tag;
  times[0] = until;
}

function pruneFamiliar(r: AccountRecord, now: number): void {
  for (let i = r.familiar.length - 1; i >= 0; i--) {
    if (r.familiarUntil[i]! <= now) {
      r.familiar.splice(i, 1);
      r.familiarUntil.splice(i, 1);
    }
  }
}

// ---- sources ----

// A source's ratio counts, at `o` in a row of doubles (the memory table's slab, a record read from Redis).
export const GEN = 0;
export const FAILURES = 1;
export const SUCCESSES = 2;
export const PREV_FAILURES = 3;
export const PREV_SUCCESSES = 4;
export const LAST_AT = 5;

/** How long a distinct entry can still count: the longer of the two distinct windows. */
export function setWindow(spec: SourceSpec): number {
  return Math.max(spec.distinctWindowMs, spec.longDistinctWindowMs ?? 0);
}

/**
 * How long a source's record serves after its last attempt: a distinct entry counts for the set's window,
 * the ratio counts for two generations of theirs. Past it the record reads as a new source's, so it is
 * forgotten then (it was kept two of the longest windows, 14 days by default, for nothing).
 */
export function longestWindow(spec: SourceSpec): number {
  return Math.max(setWindow(spec), 2 * spec.ratioWindowMs);
}

/** Whether a source last noted at `lastAt` has been idle long enough to be forgotten. */
export function sourceIdle(lastAt: number, now: number, spec: SourceSpec): boolean {
  return lastAt + longestWindow(spec) <= now;
}

/** Moves the counts at `o` to the ratio-window generation of `now`. */
export function roll(s: Float64Array, o: number, now: number, windowMs: number): void {
  const gen = Math.floor(now / windowMs);
  const was = s[o + GEN]!;
  if (gen === was) return;
  if (gen === was + 1) {
    s[o + PREV_FAILURES] = s[o + FAILURES]!;
    s[o + PREV_SUCCESSES] = s[o + SUCCESSES]!;
  } else {
    s[o + PREV_FAILURES] = 0;
    s[o + PREV_SUCCESSES] = 0;
  }
  s[o + FAILURES] = 0;
  s[o + SUCCESSES] = 0;
  s[o + GEN] = gen;
}

/**
 * A source's distinct failed accounts at `now`, in the short and the long window, from when each account
 * last failed there: start, add each entry's time, read `short` and `long`. One instance per reader, reused,
 * so that counting a set allocates nothing (the memory table's rows, a record read from Redis).
 */
export class DistinctCount {
  short = 0;
  long = 0;
  private now = 0;
  private shortMs = 0;
  private longMs = 0;

  start(now: number, spec: SourceSpec): this {
    this.now = now;
    this.shortMs = spec.distinctWindowMs;
    this.longMs = spec.longDistinctWindowMs ?? spec.distinctWindowMs;
    this.short = 0;
    this.long = 0;
    return this;
  }

  /** An account that last failed at `seen`. */
  add(seen: number): void {
    if (seen + this.shortMs > this.now) this.short++;
    if (seen + this.longMs > this.now) this.long++;
  }
}

/** The view of the rolled counts at `o` with the distinct counts given: the previous generation weighted by what is left of it. */
export function sourceView(
  s: Float64Array,
  o: number,
  now: number,
  spec: SourceSpec,
  distinct: DistinctCount,
): SourceView {
  const ratioMs = spec.ratioWindowMs;
  const weight = (ratioMs - (now - s[o + GEN]! * ratioMs)) / ratioMs;
  return {
    failures: s[o + PREV_FAILURES]! * weight + s[o + FAILURES]!,
    successes: s[o + PREV_SUCCESSES]! * weight + s[o + SUCCESSES]!,
    distinctFailedAccounts: distinct.short,
    distinctFailedAccountsLong: distinct.long,
  };
}
