/**
 * Per-source records (an address, a subnet or a device fingerprint) for the memory guard state, packed
 * for floods: a Map from tag to row and one Float64Array slab of fixed-size rows, as the memory store
 * keeps its buckets, so a million sources are a million map entries and no per-source object. A source's
 * first two distinct failed accounts live in its row; only a source failing on more (an attacker, a big
 * NAT) gets an overflow array. The set is kept for the longer of the two distinct windows and both
 * counts are read from it.
 *
 * Row: [ratio generation, failures, successes, previous failures, previous successes, last attempt,
 *       distinct count, account hash 0, last seen 0, account hash 1, last seen 1]
 */
import {
  DistinctCount,
  FAILURES,
  LAST_AT,
  longestWindow,
  roll,
  setWindow,
  sourceIdle,
  sourceView,
  SUCCESSES,
} from './rules.js';
import type { SourceSpec, SourceView } from './state.js';

// The ratio counts (rules.ts: GEN to LAST_AT) first, then:
const DISTINCT = 6;
const INLINE_AT = 7;
/** Distinct accounts kept in the row itself. */
const INLINE = 2;
const SLOTS = INLINE_AT + 2 * INLINE;
const SWEEP_PER_INSERT = 2;

/** 32-bit FNV-1a of a tag: enough to tell apart the few dozen accounts one source's set holds. */
export function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

export class SourceTable {
  readonly max: number;
  private readonly index = new Map<string, number>();
  private slab = new Float64Array(SLOTS * 1024);
  private rows = 0;
  private readonly free: number[] = [];
  /** Distinct entries past the inline ones: [hash, last seen] pairs, by row. */
  private readonly overflow = new Map<number, Float64Array>();
  private cursor: MapIterator<[string, number]> | undefined;
  /** Only moves past what it deletes, so it stands on the oldest row left (see MemoryGuardState). */
  private evictor: MapIterator<string> | undefined;
  /** The longest window any source was noted with: a row idle for two of them has expired. */
  private longestWindowMs = 0;
  private readonly distinct = new DistinctCount();

  constructor(max: number) {
    this.max = max;
  }

  get size(): number {
    return this.index.size;
  }

  /** A failure or a success; with `onlyIfTracked`, a success only on a live row (GuardState.noteSource). */
  note(
    source: string,
    account: string,
    failed: boolean,
    now: number,
    spec: SourceSpec,
    onlyIfTracked = false,
  ): SourceView {
    this.longestWindowMs = Math.max(this.longestWindowMs, longestWindow(spec));
    const row = this.index.get(source);
    if (!failed && onlyIfTracked && (row === undefined || sourceIdle(this.slab[row * SLOTS + LAST_AT]!, now, spec)))
      return UNTRACKED;
    const o = (row ?? this.insert(source, now)) * SLOTS;
    const s = this.slab;
    roll(s, o, now, spec.ratioWindowMs);
    s[o + LAST_AT] = now;
    if (failed) {
      s[o + FAILURES]++;
      this.noteDistinct(o, hash32(account), now, spec);
    } else {
      s[o + SUCCESSES]++;
    }
    return this.view(o, now, spec);
  }

  read(source: string, now: number, spec: SourceSpec): SourceView | undefined {
    const row = this.index.get(source);
    if (row === undefined) return undefined;
    const o = row * SLOTS;
    if (sourceIdle(this.slab[o + LAST_AT]!, now, spec)) {
      this.drop(source, row);
      return undefined;
    }
    roll(this.slab, o, now, spec.ratioWindowMs);
    return this.view(o, now, spec);
  }

  /** Every row, decoded: for audits and the privacy test. */
  entries(): [string, number[]][] {
    return [...this.index].map(([k, row]) => {
      const values = [...this.slab.subarray(row * SLOTS, (row + 1) * SLOTS)];
      const more = this.overflow.get(row);
      return [k, more === undefined ? values : [...values, ...more]];
    });
  }

  // ---- distinct accounts ----

  /**
   * Distinct entry `k` of the row at `o` lives in the slab at `o + INLINE_AT + 2k` when k < INLINE, else in
   * the row's overflow array at `2(k − INLINE)`. The loops below address both without a [array, index]
   * pair per entry: that tuple was an allocation per entry on every read and note.
   */
  private overflowOf(o: number, count: number): Float64Array | undefined {
    return count > INLINE ? this.overflow.get(o / SLOTS) : undefined;
  }

  private noteDistinct(o: number, hash: number, now: number, spec: SourceSpec): void {
    const s = this.slab;
    const count = s[o + DISTINCT]!;
    const more = this.overflowOf(o, count);
    let oldest = -1;
    let oldestSeen = Infinity;
    for (let k = 0; k < count; k++) {
      const a = k < INLINE ? s : more!;
      const i = k < INLINE ? o + INLINE_AT + 2 * k : 2 * (k - INLINE);
      if (a[i] === hash) {
        a[i + 1] = now;
        return;
      }
      if (a[i + 1]! < oldestSeen) {
        oldestSeen = a[i + 1]!;
        oldest = k;
      }
    }
    let k: number;
    if (oldest >= 0 && oldestSeen + setWindow(spec) <= now)
      k = oldest; // reuse one past both windows
    else if (count < spec.maxDistinct) {
      k = count;
      s[o + DISTINCT] = count + 1;
      if (k >= INLINE) this.reserve(o / SLOTS, k - INLINE + 1, spec.maxDistinct - INLINE);
    } else k = oldest; // full: the count now reads "at least maxDistinct"
    if (k < INLINE) {
      s[o + INLINE_AT + 2 * k] = hash;
      s[o + INLINE_AT + 2 * k + 1] = now;
    } else {
      const a = this.overflow.get(o / SLOTS)!; // reserve() may have replaced it
      a[2 * (k - INLINE)] = hash;
      a[2 * (k - INLINE) + 1] = now;
    }
  }

  /** Makes the row's overflow hold `entries`, doubling up to `max`. */
  private reserve(row: number, entries: number, max: number): void {
    const have = this.overflow.get(row);
    if (have !== undefined && have.length >= 2 * entries) return;
    const grown = new Float64Array(2 * Math.min(max, Math.max(entries, have === undefined ? 2 : have.length)));
    if (have !== undefined) grown.set(have);
    this.overflow.set(row, grown);
  }

  private view(o: number, now: number, spec: SourceSpec): SourceView {
    const s = this.slab;
    const distinct = this.distinct.start(now, spec);
    const count = s[o + DISTINCT]!;
    const more = this.overflowOf(o, count);
    for (let k = 0; k < count; k++)
      distinct.add(k < INLINE ? s[o + INLINE_AT + 2 * k + 1]! : more![2 * (k - INLINE) + 1]!);
    return sourceView(s, o, now, spec, distinct);
  }

  // ---- rows, sweeping and eviction ----

  private insert(source: string, now: number): number {
    for (let n = 0; n < SWEEP_PER_INSERT && this.index.size > 0; n++) {
      let step = this.cursor?.next();
      if (step === undefined || step.done) step = (this.cursor = this.index.entries()).next();
      if (!step.done && this.slab[step.value[1] * SLOTS + LAST_AT]! + this.longestWindowMs <= now)
        this.drop(step.value[0], step.value[1]);
    }
    if (this.index.size >= this.max) {
      let step = this.evictor?.next();
      if (step === undefined || step.done) step = (this.evictor = this.index.keys()).next();
      if (!step.done) this.drop(step.value, this.index.get(step.value)!);
    }
    let row = this.free.pop();
    if (row === undefined) {
      row = this.rows++;
      if ((row + 1) * SLOTS > this.slab.length) {
        const grown = new Float64Array(this.slab.length * 2);
        grown.set(this.slab);
        this.slab = grown;
      }
    }
    this.index.set(source, row);
    return row;
  }

  private drop(source: string, row: number): void {
    this.index.delete(source);
    this.slab.fill(0, row * SLOTS, (row + 1) * SLOTS);
    this.overflow.delete(row);
    this.free.push(row);
  }
}

/** The view of a source not tracked. */
const UNTRACKED: SourceView = Object.freeze({
  failures: 0,
  successes: 0,
  distinctFailedAccounts: 0,
  distinctFailedAccountsLong: 0,
});
