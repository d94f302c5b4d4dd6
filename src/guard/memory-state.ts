/**
 * Guard state in process memory: bounded maps of small records, reclaimed as they expire.
 *
 * Bounds: at most `maxAccounts` account records and `maxSources` source records, in separate maps so a
 * flood of new addresses can never push out what the guard knows about accounts. Each insert first looks at
 * the next two records in sweep order (insertion order, cycling) and drops expired ones (no timer per
 * record). At the cap, an insert drops the oldest-inserted record: under a flood, the guard forgets the
 * sources it met longest ago, which are the flood's own first addresses once the flood has run a while.
 */
import { SluiceError, show } from '../core/errors.js';
import type { AccountView, FailOutcome, GuardState, Path, SourceSpec, SourceView } from './state.js';

export interface MemoryGuardStateOptions {
  /** Most account records kept. Default 1,000,000. */
  maxAccounts?: number;
  /** Most source (address, subnet, fingerprint) records kept. Default 1,000,000. */
  maxSources?: number;
}

/** Wrong password tags remembered per account (Entra smart lockout: the last three). */
export const REMEMBERED_PASSWORDS = 3;
const SWEEP_PER_INSERT = 2;

class AccountRecord implements AccountView {
  unfamiliarFailures = 0;
  familiarFailures = 0;
  unfamiliarLockedUntil = 0;
  familiarLockedUntil = 0;
  lastFailureAt = 0;
  /** When the failure counters (and locks, and password tags) are forgotten: memoryMs after the last failure. */
  failuresUntil = 0;
  /** When every part of the record has expired. */
  expiresAt = 0;
  /** Newest first. */
  passwords: string[] | null = null;
  familiar: string[] = [];
  familiarUntil: number[] = [];
}

/** 32-bit FNV-1a of a tag: enough to tell apart the few dozen accounts one source's set holds. */
function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

class SourceRecord {
  /** Ratio-window generation of `failures`/`successes`: floor(now / ratioWindowMs). */
  gen = 0;
  failures = 0;
  successes = 0;
  prevFailures = 0;
  prevSuccesses = 0;
  lastAt = 0;
  /** Distinct failed accounts: [hash32, last seen in whole seconds] pairs, grown on demand up to the cap. */
  distinct: Uint32Array | null = null;
  distinctCount = 0;
}

export class MemoryGuardState implements GuardState {
  readonly maxAccounts: number;
  readonly maxSources: number;
  private readonly accounts = new Map<string, AccountRecord>();
  private readonly sources = new Map<string, SourceRecord>();
  private accountCursor: MapIterator<[string, AccountRecord]> | undefined;
  private sourceCursor: MapIterator<[string, SourceRecord]> | undefined;
  /**
   * Eviction cursors: each only moves past what it deletes, so it always stands on the oldest record left
   * (inserts go to the end). A fresh keys().next() would find the same record, but V8 keeps deleted
   * entries as holes at the front of the table until it rehashes, so each call would scan every hole.
   */
  private accountEvictor: MapIterator<string> | undefined;
  private sourceEvictor: MapIterator<string> | undefined;
  /** The longest window sources were noted with, for expiry during sweeps. */
  private windowMs = 0;

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
    if (r.expiresAt <= now) {
      this.accounts.delete(account);
      return undefined;
    }
    // Failures past their memory are forgotten lazily, on the next look, when familiar sources keep the record.
    if (r.lastFailureAt > 0 && r.failuresUntil <= now) forgetFailures(r);
    if (r.familiar.length > 0) pruneFamiliar(r, now);
    return r;
  }

  readAccount(account: string, now: number): AccountView | undefined {
    return this.liveAccount(account, now);
  }

  failAccount(account: string, path: Path, passwordTag: string | undefined, now: number, memoryMs: number): FailOutcome {
    let r = this.liveAccount(account, now);
    if (passwordTag !== undefined && r?.passwords != null && r.passwords.includes(passwordTag)) {
      return { counted: false, failures: path === 'familiar' ? r.familiarFailures : r.unfamiliarFailures, total: r.familiarFailures + r.unfamiliarFailures };
    }
    if (r === undefined) r = this.insertAccount(account, now);
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
    return { counted: true, failures: path === 'familiar' ? r.familiarFailures : r.unfamiliarFailures, total: r.familiarFailures + r.unfamiliarFailures };
  }

  lockAccount(account: string, path: Path, until: number): void {
    const r = this.accounts.get(account);
    if (r === undefined) return; // failAccount created it; gone only if evicted, and then there is nothing to lock
    if (path === 'familiar') r.familiarLockedUntil = Math.max(r.familiarLockedUntil, until);
    else r.unfamiliarLockedUntil = Math.max(r.unfamiliarLockedUntil, until);
    r.expiresAt = Math.max(r.expiresAt, until);
  }

  succeedAccount(account: string, path: Path, sources: readonly string[], now: number, familiarMs: number, maxFamiliar: number): void {
    const r = this.liveAccount(account, now) ?? this.insertAccount(account, now);
    if (path === 'unfamiliar') forgetFailures(r);
    else {
      r.familiarFailures = 0;
      r.familiarLockedUntil = 0;
      r.passwords = null;
      if (r.unfamiliarFailures === 0) r.lastFailureAt = 0;
    }
    const until = now + familiarMs;
    for (let i = sources.length - 1; i >= 0; i--) {
      const tag = sources[i]!;
      const at = r.familiar.indexOf(tag);
      if (at >= 0) {
        r.familiar.splice(at, 1);
        r.familiarUntil.splice(at, 1);
      }
      r.familiar.unshift(tag);
      r.familiarUntil.unshift(until);
    }
    if (r.familiar.length > maxFamiliar) {
      r.familiar.length = maxFamiliar;
      r.familiarUntil.length = maxFamiliar;
    }
    r.expiresAt = Math.max(...r.familiarUntil, r.lastFailureAt > 0 ? r.failuresUntil : now, r.unfamiliarLockedUntil);
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

  noteSource(source: string, account: string, failed: boolean, now: number, spec: SourceSpec): SourceView {
    this.windowMs = Math.max(this.windowMs, spec.distinctWindowMs, spec.ratioWindowMs);
    const r = this.sources.get(source) ?? this.insertSource(source, now);
    roll(r, now, spec.ratioWindowMs);
    r.lastAt = now;
    if (failed) {
      r.failures++;
      noteDistinct(r, hash32(account), now, spec.distinctWindowMs, spec.maxDistinct);
    } else {
      r.successes++;
    }
    return view(r, now, spec);
  }

  readSource(source: string, now: number, spec: SourceSpec): SourceView | undefined {
    const r = this.sources.get(source);
    if (r === undefined) return undefined;
    if (r.lastAt + 2 * Math.max(spec.distinctWindowMs, spec.ratioWindowMs) <= now) {
      this.sources.delete(source);
      return undefined;
    }
    roll(r, now, spec.ratioWindowMs);
    return view(r, now, spec);
  }

  /** The next source in sweep (insertion) order, wrapping around. */
  private nextSource(): [string, SourceRecord] | undefined {
    let step = this.sourceCursor?.next();
    if (step === undefined || step.done) step = (this.sourceCursor = this.sources.entries()).next();
    return step.done ? undefined : step.value;
  }

  private insertSource(source: string, now: number): SourceRecord {
    for (let n = 0; n < SWEEP_PER_INSERT && this.sources.size > 0; n++) {
      const e = this.nextSource();
      if (e !== undefined && e[1].lastAt + 2 * this.windowMs <= now) this.sources.delete(e[0]);
    }
    if (this.sources.size >= this.maxSources) {
      let step = this.sourceEvictor?.next();
      if (step === undefined || step.done) step = (this.sourceEvictor = this.sources.keys()).next();
      if (!step.done) this.sources.delete(step.value);
    }
    const r = new SourceRecord();
    this.sources.set(source, r);
    return r;
  }

  /** Everything held, as JSON: for audits and the privacy test (it must hold no plain value). */
  dump(): string {
    const accounts = [...this.accounts].map(([k, r]) => [k, { ...r }]);
    const sources = [...this.sources].map(([k, r]) => [k, { ...r, distinct: r.distinct === null ? null : [...r.distinct] }]);
    return JSON.stringify({ accounts, sources });
  }
}

function positive(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `MemoryGuardState '${field}' must be a positive integer, got ${show(value)}`);
  }
  return value;
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

function pruneFamiliar(r: AccountRecord, now: number): void {
  for (let i = r.familiar.length - 1; i >= 0; i--) {
    if (r.familiarUntil[i]! <= now) {
      r.familiar.splice(i, 1);
      r.familiarUntil.splice(i, 1);
    }
  }
}

/** Moves the counters to the window generation of `now`. */
function roll(r: SourceRecord, now: number, windowMs: number): void {
  const gen = Math.floor(now / windowMs);
  if (gen === r.gen) return;
  if (gen === r.gen + 1) {
    r.prevFailures = r.failures;
    r.prevSuccesses = r.successes;
  } else {
    r.prevFailures = 0;
    r.prevSuccesses = 0;
  }
  r.failures = 0;
  r.successes = 0;
  r.gen = gen;
}

function noteDistinct(r: SourceRecord, tag: number, now: number, windowMs: number, maxDistinct: number): void {
  const seconds = Math.floor(now / 1000);
  let d = r.distinct;
  if (d === null) d = r.distinct = new Uint32Array(2 * Math.min(2, maxDistinct));
  let oldest = -1;
  let oldestSeen = Infinity;
  for (let i = 0; i < r.distinctCount; i++) {
    if (d[2 * i] === tag) {
      d[2 * i + 1] = seconds;
      return;
    }
    const seen = d[2 * i + 1]!;
    if (seen < oldestSeen) {
      oldestSeen = seen;
      oldest = i;
    }
  }
  let at: number;
  if (oldest >= 0 && (oldestSeen + 1) * 1000 + windowMs <= now) at = oldest; // reuse an entry past the window
  else if (r.distinctCount < maxDistinct) {
    if (2 * (r.distinctCount + 1) > d.length) {
      const grown = new Uint32Array(Math.min(2 * maxDistinct, d.length * 2));
      grown.set(d);
      d = r.distinct = grown;
    }
    at = r.distinctCount++;
  } else at = oldest;
  d[2 * at] = tag;
  d[2 * at + 1] = seconds;
}

function view(r: SourceRecord, now: number, spec: SourceSpec): SourceView {
  const ratioMs = spec.ratioWindowMs;
  const weight = (ratioMs - (now - r.gen * ratioMs)) / ratioMs;
  const windowMs = spec.distinctWindowMs;
  let distinct = 0;
  const d = r.distinct;
  // An entry seen in second s was last seen at most at (s + 1)·1000 ms; count it while that is in the window.
  if (d !== null) for (let i = 0; i < r.distinctCount; i++) if ((d[2 * i + 1]! + 1) * 1000 + windowMs > now) distinct++;
  return {
    failures: r.prevFailures * weight + r.failures,
    successes: r.prevSuccesses * weight + r.successes,
    distinctFailedAccounts: distinct,
  };
}
