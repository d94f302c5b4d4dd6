/**
 * The memory guard state's records: bounded maps of small records, reclaimed as they expire.
 *
 * Bounds: at most `maxAccounts` account records and `maxSources` source records, in separate maps so a
 * flood of new addresses can never push out what the guard knows about accounts. Each insert first looks at
 * the next two records in sweep order (insertion order, cycling) and drops expired ones (no timer per
 * record). At the cap, an insert drops the oldest-inserted record: under a flood, the guard forgets the
 * sources it met longest ago, which are the flood's own first addresses once the flood has run a while.
 *
 * This file only keeps the records; what an attempt does to one is rules.ts's (guard.lua is its twin), and
 * a login's reads and writes over them, with the guard's buckets, are memory-login.ts's.
 */
import { SourceTable } from './source-table.js';
import {
  AccountRecord,
  failAccount,
  failureOutcome,
  judgePath,
  liveAccount,
  lockAccount,
  repeatsPassword,
  succeedAccount,
} from './rules.js';
import type { AccountView, FailOutcome, JudgedFailure, JudgedSuccess, Path, SourceSpec, SourceView } from './state.js';

const SWEEP_PER_INSERT = 2;

export class MemoryRecords {
  private readonly accounts = new Map<string, AccountRecord>();
  private readonly sources: SourceTable;
  private accountCursor: MapIterator<[string, AccountRecord]> | undefined;
  /**
   * Eviction cursors: each only moves past what it deletes, so it always stands on the oldest record left
   * (inserts go to the end). A fresh keys().next() would find the same record, but V8 keeps deleted
   * entries as holes at the front of the table until it rehashes, so each call would scan every hole.
   */
  private accountEvictor: MapIterator<string> | undefined;

  constructor(
    readonly maxAccounts: number,
    readonly maxSources: number,
  ) {
    this.sources = new SourceTable(maxSources);
  }

  get accountCount(): number {
    return this.accounts.size;
  }

  get sourceCount(): number {
    return this.sources.size;
  }

  // ---- accounts ----

  private liveAccount(account: string, now: number): AccountRecord | undefined {
    const r = this.accounts.get(account);
    if (r === undefined) return undefined;
    if (!liveAccount(r, now)) {
      this.accounts.delete(account);
      return undefined;
    }
    return r;
  }

  /** The account's record, or undefined if it has none (never seen, or expired). */
  readAccount(account: string, now: number): AccountView | undefined {
    return this.liveAccount(account, now);
  }

  /**
   * Counts a failure on `path` unless `passwordTag` is one of the last three wrong password tags (which it
   * then keeps as they are). A counted tag becomes the newest of the three. The record expires
   * `memoryMs` after this failure unless something else keeps it.
   */
  failAccount(
    account: string,
    path: Path,
    passwordTag: string | undefined,
    now: number,
    memoryMs: number,
  ): FailOutcome {
    return this.fail(this.liveAccount(account, now), account, path, passwordTag, now, memoryMs);
  }

  /** failAccount on the path judged from the account's familiar list (familiar if it holds any of `sources`). */
  failAccountJudged(
    account: string,
    sources: readonly string[],
    passwordTag: string | undefined,
    now: number,
    memoryMs: number,
  ): JudgedFailure {
    const r = this.liveAccount(account, now);
    const path = judgePath(r, sources);
    return { ...this.fail(r, account, path, passwordTag, now, memoryMs), path };
  }

  /** succeedAccount on the path judged as failAccountJudged; answers it with the strangers' failures before. */
  succeedAccountJudged(
    account: string,
    sources: readonly string[],
    now: number,
    familiarMs: number,
    maxFamiliar: number,
  ): JudgedSuccess {
    const r = this.liveAccount(account, now);
    const path = judgePath(r, sources);
    const unfamiliarFailuresBefore = r?.unfamiliarFailures ?? 0; // read before the success changes the record
    succeedAccount(r ?? this.insertAccount(account, now), path, sources, now, familiarMs, maxFamiliar);
    return { path, unfamiliarFailuresBefore };
  }

  /** A failure on the account's live record `r` (undefined: none yet). */
  private fail(
    r: AccountRecord | undefined,
    account: string,
    path: Path,
    passwordTag: string | undefined,
    now: number,
    memoryMs: number,
  ): FailOutcome {
    if (repeatsPassword(r, passwordTag)) return failureOutcome(r!, path, false);
    return failAccount(r ?? this.insertAccount(account, now), path, passwordTag, now, memoryMs);
  }

  /** Locks `path` until `until` (keeps a later lock already set, so concurrent writers commute). */
  lockAccount(account: string, path: Path, until: number): void {
    const r = this.accounts.get(account);
    if (r === undefined) return; // failAccount created it; gone only if evicted, and then there is nothing to lock
    lockAccount(r, path, until);
  }

  /** A success on `path` (rules.ts succeedAccount): `sources` become familiar, for `familiarMs`, at most `maxFamiliar`. */
  succeedAccount(
    account: string,
    path: Path,
    sources: readonly string[],
    now: number,
    familiarMs: number,
    maxFamiliar: number,
  ): void {
    succeedAccount(
      this.liveAccount(account, now) ?? this.insertAccount(account, now),
      path,
      sources,
      now,
      familiarMs,
      maxFamiliar,
    );
  }

  /** The next account in sweep (insertion) order, wrapping around. */
  private nextAccount(): [string, AccountRecord] | undefined {
    let step = this.accountCursor?.next();
    if (step === undefined || step.done) step = (this.accountCursor = this.accounts.entries()).next();
    return step.done ? undefined : step.value;
  }

  private insertAccount(account: string, now: number): AccountRecord {
    for (let n = 0; n < SWEEP_PER_INSERT && this.accounts.size > 0; n++) {
      const e = this.nextAccount();
      if (e !== undefined && e[1].expiresAt <= now) this.accounts.delete(e[0]);
    }
    if (this.accounts.size >= this.maxAccounts) {
      let step = this.accountEvictor?.next();
      if (step === undefined || step.done) step = (this.accountEvictor = this.accounts.keys()).next();
      if (!step.done) this.accounts.delete(step.value);
    }
    const r = new AccountRecord();
    r.expiresAt = now;
    this.accounts.set(account, r);
    return r;
  }

  // ---- sources ----

  /**
   * Notes one attempt from `source` (an address, subnet or fingerprint tag): a failure on `account`, or a
   * success. Returns the view after it. The record expires two of its longer window after its last attempt.
   * With `onlyIfTracked`, a success is noted only on a source that has a live record (one that failed
   * within its windows), and otherwise nothing is written and the view is all zeros: a stranger's first
   * success somewhere says little of the source, and most sources never fail, so tracking each one's
   * successes would cost a write per login. Successes on familiar paths are always noted: they are what
   * vouches for a shared network (see guard.ts, vouched).
   */
  noteSource(
    source: string,
    account: string,
    failed: boolean,
    now: number,
    spec: SourceSpec,
    onlyIfTracked = false,
  ): SourceView {
    return this.sources.note(source, account, failed, now, spec, onlyIfTracked);
  }

  /** The source's view now, or undefined if it has none. */
  readSource(source: string, now: number, spec: SourceSpec): SourceView | undefined {
    return this.sources.read(source, now, spec);
  }

  /** Everything held, as JSON: for audits and the privacy test (it must hold no plain value). */
  dump(): string {
    const accounts = [...this.accounts].map(([k, r]) => [k, { ...r }]);
    return JSON.stringify({ accounts, sources: this.sources.entries() });
  }
}
