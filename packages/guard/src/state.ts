/**
 * The guard-state contract: one login port per Guard (a login's reads and writes whole, with the guard's
 * token buckets), so that a check is one read and a record one write in any backend: in memory
 * (memory-state.ts, memory-login.ts), or on Redis as batched reads and script operations on the keys of
 * one account or one source, which share a hash tag (redis/state.ts, redis/login.ts); nothing needs a
 * transaction across two records.
 *
 * Every key and value passed in is already an HMAC tag (see keyed-hash.ts): an implementation never sees an
 * account name, an address or a password. Every record expires.
 */
import type { Clock, Decision, MaybePromise, Policy, Store } from 'sluice/kit';
import type { TaggedAttempt } from './attempt.js';
import type { BackoffSchedule } from './backoff.js';

/** Which of an account's two independent failure counters an attempt belongs to (as Entra smart lockout). */
export type Path = 'familiar' | 'unfamiliar';

export interface AccountView {
  /** Consecutive failures from sources the account does not know, since its last success. */
  readonly unfamiliarFailures: number;
  /** Consecutive failures from its familiar sources, since its last success. */
  readonly familiarFailures: number;
  /** Backoff lock of each path, in clock ms; 0 when none. */
  readonly unfamiliarLockedUntil: number;
  readonly familiarLockedUntil: number;
  /** When the last counted failure happened; 0 when none. */
  readonly lastFailureAt: number;
  /** Tags of sources with a success within the familiar period, newest first. */
  readonly familiar: readonly string[];
}

export interface FailOutcome {
  /** False when the password tag was among the last three wrong ones: nothing was counted. */
  readonly counted: boolean;
  /** The path's consecutive failures after this one. */
  readonly failures: number;
  /** Both paths' consecutive failures after this one (the hard stop counts these). */
  readonly total: number;
}

/** How a source's record counts: fixed by the guard's options. */
export interface SourceSpec {
  /** Window of the distinct-accounts set. */
  readonly distinctWindowMs: number;
  /**
   * Window of the long distinct-accounts count, read from the same set (which is then kept this long):
   * a low-and-slow source fails on a few accounts an hour, never ten in the short window. Default: the
   * short window, when the two counts are the same.
   */
  readonly longDistinctWindowMs?: number;
  /** Window of the failure and success counts behind the failure ratio. */
  readonly ratioWindowMs: number;
  /**
   * Distinct accounts tracked exactly; past it the oldest is replaced and a count reads "at least" this.
   * The newest are kept, so the short count stays exact up to the cap while the set covers the long window.
   */
  readonly maxDistinct: number;
}

export interface SourceView {
  /** Failures and successes in the ratio window (two-generation estimate, as the sliding-window counter). */
  readonly failures: number;
  readonly successes: number;
  /** Distinct accounts that failed from this source in the distinct window (exact up to the tracked cap). */
  readonly distinctFailedAccounts: number;
  /** The same in the long distinct window (exact up to the cap, as the newest entries are the ones kept). */
  readonly distinctFailedAccountsLong: number;
}

/** What a failure answers (LoginPort.fail): the outcome, and the path the state judged the attempt to be on. */
export interface JudgedFailure extends FailOutcome {
  readonly path: Path;
  /** True when the shared state could not be written: the failure was counted in this process only, or (counted false) nowhere. */
  readonly offline?: boolean;
}

/** What a success answers (LoginPort.succeed). */
export interface JudgedSuccess {
  readonly path: Path;
  /** Strangers' failures on the account just before this success. */
  readonly unfamiliarFailuresBefore: number;
  /** True when the shared state could not be written (see JudgedFailure). */
  readonly offline?: boolean;
}

/**
 * The guard's state, as a Guard uses it: the login port it decides through (each login's reads and
 * writes whole, with the guard's token buckets), and optionally the anomaly monitors' fleet-wide counts
 * and baselines. MemoryGuardState (memory-state.ts, with memory-login.ts) and RedisGuardState
 * (redis/state.ts, with redis/login.ts) each implement the port in full; what an attempt does to a record
 * is rules.ts's in both (guard.lua is its Lua twin).
 */
export interface GuardState {
  /**
   * The login port for a Guard with `config`, made once per Guard. `store` is the Guard's store: a state
   * that keeps no buckets of its own (the memory one) keeps them in its tables; the Redis state keeps
   * them beside its records, and takes its failure policy from `store` when that is the RedisStore it
   * was made for.
   */
  loginPort(store: Store, config: LoginConfig): LoginPort;
  /**
   * The fleet's failure counts for an anomaly monitor (`anomalyScope: 'fleet'`): adds each `[bucket, count]`
   * to the count every guard on this state shares for `monitor`, and returns the buckets' totals after it,
   * in order. A bucket's count lives `ttlMs` after its last addition. States that are not shared need not
   * have it.
   */
  shareFailures?(
    monitor: string,
    adds: readonly (readonly [bucket: number, count: number])[],
    ttlMs: number,
    now: number,
  ): MaybePromise<number[]>;
  /**
   * Optional: the anomaly monitors' baselines as a guard last wrote them (a JSON text the guard made and
   * validates), or undefined if none is held. A guard that starts reads them, so a deploy or a new region
   * tests its first bucket against what the fleet learnt instead of waiting out its warm-up.
   */
  readBaselines?(now: number): MaybePromise<string | undefined>;
  /** Optional: keeps `baselines` (replacing what was held) until `ttlMs` after `now`. */
  writeBaselines?(baselines: string, ttlMs: number, now: number): MaybePromise<void>;
}

/**
 * What check() reads of an attempt (LoginPort.read): its account with the account+address pair's bucket,
 * and for a stranger the address's and subnet's buckets and the records of its address, subnet and
 * fingerprint. The per-source ones are undefined when they were not read (a familiar or allow-listed
 * source), and are to be ignored for a familiar source when they were.
 */
export interface LoginReads {
  readonly account: AccountView | undefined;
  /** The peek (cost 0) of the account+address pair's bucket; undefined only when read without buckets. */
  readonly pair: Decision | undefined;
  /** The peeks of the address's and the subnet's buckets. */
  readonly ip: Decision | undefined;
  readonly subnet: Decision | undefined;
  readonly ipSource: SourceView | undefined;
  readonly netSource: SourceView | undefined;
  readonly fingerprintSource: SourceView | undefined;
  /** True when the shared state could not be read (its store did not answer): what was read is this process's, or nothing. */
  readonly offline?: boolean;
}

/** A guard's options as a login port needs them (fixed per Guard). */
export interface LoginConfig {
  readonly spec: SourceSpec;
  readonly memoryMs: number;
  readonly familiarMs: number;
  readonly maxFamiliar: number;
  readonly backoff: BackoffSchedule;
  /** The guard's token buckets: per address and per subnet (a day), per account+address pair (an hour). */
  readonly ip: Policy;
  readonly subnet: Policy;
  readonly pair: Policy;
  readonly clock: Clock;
}

/**
 * The guard's state as the Guard decides on it: a login's reads and writes, whole, with the guard's token
 * buckets. check() makes one read and at most one refusal; record() one success or one failure. Every
 * Guard talks to its state through one of these, whatever the backend:
 * - memory-login.ts: the memory state's records, with the buckets in the Guard's store;
 * - redis/login.ts: the Redis state's, the buckets in the state's keys, each operation one batched
 *   call; redis/offline.ts answers for it from a memory state (or nothing) while Redis cannot.
 * An implementation answers synchronously where it can (the memory state), so a login in memory waits
 * for no Promise; a rejection stands (the Guard's check or record rejects with it).
 */
export interface LoginPort {
  /**
   * check()'s reads. `sources`: whether the attempt may be a stranger's (its address is not allow-listed);
   * the per-source reads are then made, all of them or only if the account does not know the source.
   * `buckets` false: only the records are wanted (record()'s step-up, for an attempt this process did not
   * check), and a port whose buckets cost a call of their own leaves them out.
   */
  read(t: TaggedAttempt, now: number, sources: boolean, buckets?: boolean): MaybePromise<LoginReads>;
  /** A refused stranger: every source noted as failed (no bucket charged, no account touched), as check() does. */
  refuse(t: TaggedAttempt, now: number): MaybePromise<void>;
  /**
   * A success: judged, the pair bucket forgotten, every source noted (a stranger's success only where the
   * source is tracked: see noteSource). `familiar`: the path as check() found it, if this process checked
   * the attempt; the state may judge it again when it writes.
   */
  succeed(t: TaggedAttempt, now: number, familiar: boolean | undefined): MaybePromise<JudgedSuccess>;
  /**
   * A failure: counted unless the password repeats, its backoff lock (jittered by a draw of `random`), the
   * buckets charged, every source noted. A port draws `random` once per failure it counts or sends, as the
   * guard's random sequence is part of its behaviour (the simulator replays it).
   */
  fail(
    t: TaggedAttempt,
    passwordTag: string | undefined,
    random: () => number,
    now: number,
  ): MaybePromise<JudgedFailure>;
}

/**
 * A Store that can keep guard state beside its buckets. A Guard given such a store and no `state` takes
 * its state from the store, so `new Guard({ secret, store })` shares everything the store shares. A
 * RedisStore does not implement this (the store knows nothing of the guard): the Guard builds the
 * guard's Redis state on the store's client itself (redis/state.ts, redisGuardStateOf).
 */
export interface GuardStateSource {
  guardState(): GuardState;
}

/** The store's own guard state, if it offers one. */
export function guardStateOf(store: unknown): GuardState | undefined {
  const f = (store as Partial<GuardStateSource> | null)?.guardState;
  return typeof f === 'function' ? f.call(store) : undefined;
}
