/**
 * Guard state in process memory: bounded maps of small records, reclaimed as they expire.
 *
 * Bounds: at most `maxAccounts` account records and `maxSources` source records, in separate maps so a
 * flood of new addresses can never push out what the guard knows about accounts. Each insert first looks at
 * the next two records in sweep order (insertion order, cycling) and drops expired ones (no timer per
 * record). At the cap, an insert drops the oldest-inserted record: under a flood, the guard forgets the
 * sources it met longest ago, which are the flood's own first addresses once the flood has run a while.
 *
 * This file only keeps the records; what an attempt does to one is rules.ts's (guard.lua is its twin).
 */
import { SluiceError, show } from '../core/errors.js';
import { SourceTable } from './source-table.js';
import { AccountRecord, failAccount, failureOutcome, judgePath, liveAccount, lockAccount, repeatsPassword, succeedAccount } from './rules.js';
import type { AccountView, FailOutcome, GuardState, JudgedFailure, JudgedSuccess, Path, SourceSpec, SourceView } from './state.js';

export interface MemoryGuardStateOptions {
  /** Most account records kept. Default 1,000,000. */
  maxAccounts?: number;
  /** Most source (address, subnet, fingerprint) records kept. Default 1,000,000. */
  maxSources?: number;
}

export { REMEMBERED_PASSWORDS } from './rules.js';
const SWEEP_PER_INSERT = 2;

export class MemoryGuardState implements GuardState {
  readonly maxAccounts: number;
  readonly maxSources: number;
  private readonly accounts = new Map<string, AccountRecord>();
  private readonly sources: SourceTable;
  private accountCursor: MapIterator<[string, AccountRecord]> | undefined;
  /**
   * Eviction cursors: each only moves past what it deletes, so it always stands on the oldest record left
   * (inserts go to the end). A fresh keys().next() would find the same record, but V8 keeps deleted
   * entries as holes at the front of the table until it rehashes, so each call would scan every hole.
   */
  private accountEvictor: MapIterator<string> | undefined;
  /** shareFailures' counts: by monitor and bucket, with when each expires. A few per monitor at a time. */
  private readonly failureCounts = new Map<string, { count: number; expiresAt: number }>();
  /** writeBaselines' text, with when it expires. */
  private baselines: { text: string; expiresAt: number } | undefined;

  constructor(options: MemoryGuardStateOptions = {}) {
    if (typeof options !== 'object' || options === null) {
      throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `MemoryGuardState options must be an object, got ${show(options)}`);
    }
    for (const field of Object.keys(options)) {
      if (field !== 'maxAccounts' && field !== 'maxSources') {
        throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `unknown MemoryGuardState option '${field}'; known options are maxAccounts, maxSources`);
      }
    }
    this.maxAccounts = positive(options.maxAccounts ?? 1_000_000, 'maxAccounts');
    this.maxSources = positive(options.maxSources ?? 1_000_000, 'maxSources');
    this.sources = new SourceTable(this.maxSources);
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

  readAccount(account: string, now: number): AccountView | undefined {
    return this.liveAccount(account, now);
  }

  failAccount(account: string, path: Path, passwordTag: string | undefined, now: number, memoryMs: number): FailOutcome {
    const r = this.liveAccount(account, now);
    if (repeatsPassword(r, passwordTag)) return failureOutcome(r!, path, false);
    return failAccount(r ?? this.insertAccount(account, now), path, passwordTag, now, memoryMs);
  }

  failAccountJudged(account: string, sources: readonly string[], passwordTag: string | undefined, now: number, memoryMs: number): JudgedFailure {
    const path = judgePath(this.liveAccount(account, now), sources);
    return { ...this.failAccount(account, path, passwordTag, now, memoryMs), path };
  }

  succeedAccountJudged(account: string, sources: readonly string[], now: number, familiarMs: number, maxFamiliar: number): JudgedSuccess {
    const before = this.liveAccount(account, now);
    const path = judgePath(before, sources);
    const unfamiliarFailuresBefore = before?.unfamiliarFailures ?? 0; // read before succeedAccount changes the record
    this.succeedAccount(account, path, sources, now, familiarMs, maxFamiliar);
    return { path, unfamiliarFailuresBefore };
  }

  lockAccount(account: string, path: Path, until: number): void {
    const r = this.accounts.get(account);
    if (r === undefined) return; // failAccount created it; gone only if evicted, and then there is nothing to lock
    lockAccount(r, path, until);
  }

  succeedAccount(account: string, path: Path, sources: readonly string[], now: number, familiarMs: number, maxFamiliar: number): void {
    succeedAccount(this.liveAccount(account, now) ?? this.insertAccount(account, now), path, sources, now, familiarMs, maxFamiliar);
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

  noteSource(source: string, account: string, failed: boolean, now: number, spec: SourceSpec, onlyIfTracked = false): SourceView {
    return this.sources.note(source, account, failed, now, spec, onlyIfTracked);
  }

  readSource(source: string, now: number, spec: SourceSpec): SourceView | undefined {
    return this.sources.read(source, now, spec);
  }

  /** Guards of one process sharing this state share their anomaly counts, as guards on one Redis do. */
  shareFailures(monitor: string, adds: readonly (readonly [bucket: number, count: number])[], ttlMs: number, now: number): number[] {
    for (const [k, v] of this.failureCounts) if (v.expiresAt <= now) this.failureCounts.delete(k);
    return adds.map(([bucket, count]) => {
      const key = `${monitor}\u0000${bucket}`;
      const held = this.failureCounts.get(key) ?? { count: 0, expiresAt: now + ttlMs };
      if (count > 0) {
        held.count += count;
        held.expiresAt = now + ttlMs;
        this.failureCounts.set(key, held);
      }
      return held.count;
    });
  }

  readBaselines(now: number): string | undefined {
    const b = this.baselines;
    return b !== undefined && b.expiresAt > now ? b.text : undefined;
  }

  writeBaselines(baselines: string, ttlMs: number, now: number): void {
    this.baselines = { text: baselines, expiresAt: now + ttlMs };
  }

  /** Everything held, as JSON: for audits and the privacy test (it must hold no plain value). */
  dump(): string {
    const accounts = [...this.accounts].map(([k, r]) => [k, { ...r }]);
    return JSON.stringify({ accounts, sources: this.sources.entries() });
  }
}

function positive(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `MemoryGuardState '${field}' must be a positive integer, got ${show(value)}`);
  }
  return value;
}
