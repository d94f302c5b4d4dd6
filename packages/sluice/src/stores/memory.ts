/**
 * The in-memory store: exact, bounded, and fast enough to sit on every request.
 *
 * Layout: per limiter, a Map from key to row number, and one Float64Array slab holding every row's
 * fixed-size algorithm state side by side (about 16 bytes per token bucket), so a million keys cost a
 * million Map entries and strings, not a million objects. Variable-size state (sliding log, leases) lives in
 * per-column arrays indexed by the same row.
 *
 * Bounds: at most `maxKeys` keys across all limiters sharing the store. Each new key first sweeps two
 * entries in insertion order and drops those that are idle (their state is as if unused), so expired state
 * is reclaimed with no timer per key. At `maxKeys` a new key evicts an idle key if one is found among the
 * next 32 in sweep order, and otherwise the sampled key closest to idle that is not denying: the one whose
 * loss forgives least. A key that denies now (a request of cost 1 would get retryAfterMs > 0, a ban
 * included) is never evicted, so minting fresh keys cannot buy a denied key its reset (nginx's limit_req
 * answers 503 rather than forget a key over its limit). When every sampled key denies, the new key is not
 * tracked: it is decided by `onFull`, with `reason: 'store-full'`.
 */
import { brandOf, isInstance, SLUICE_VERSION } from '../core/brand.js';
import { combine, makeDecision, SluiceError, show, Verdict } from '../core/index.js';
import { evaluateEvery, writeEvery, writeOf, type RowObjects } from '../core/every-policy.js';
import type { Algorithm, Clock, Decision, ObjectAlgorithm, Policy, SlabAlgorithm } from '../core/index.js';
import { check } from '../core/option-checks.js';
import type { Store, StoreTable, TableSpec } from './store.js';

export interface MemoryStoreOptions {
  /** Most keys kept across every limiter using this store. Default 1,000,000. */
  maxKeys?: number;
  /**
   * A new key when the store is at `maxKeys` and every key it could evict is denying: 'deny' (default)
   * refuses it, as nginx's limit_req does, since an untracked key would otherwise pass every time; 'allow'
   * admits it without tracking it. Either way the decision carries `reason: 'store-full'`.
   */
  onFull?: 'allow' | 'deny';
}

/** What the memory store counts. */
export interface MemoryStoreStats {
  /** Keys dropped to make room at `maxKeys` (idle sweeps not counted). */
  evicted: number;
  /** New keys decided by `onFull` because every key the store could evict was denying. */
  storeFull: number;
}

const SWEEP_PER_INSERT = 2;
const EVICTION_SAMPLE = 32;

const MEMORY_STORE = brandOf('MemoryStore');

export class MemoryStore implements Store {
  /** One from another copy of sluice (require and import each load one) of this release is a MemoryStore too. */
  static [Symbol.hasInstance](x: unknown): boolean {
    return isInstance(this, MemoryStore, MEMORY_STORE, x);
  }

  get [MEMORY_STORE](): string {
    return SLUICE_VERSION;
  }

  readonly maxKeys: number;
  readonly onFull: 'allow' | 'deny';
  /** Keys held across all tables. */
  size = 0;
  readonly stats: MemoryStoreStats = { evicted: 0, storeFull: 0 };
  /** After a makeRoom() that failed: the soonest a sampled denying key stops denying (ms from now). */
  fullRetryMs = 0;
  /** The tables bound and not closed: a closed one's keys are gone, and eviction never looks at it. */
  private readonly tables = new Set<MemoryTable>();

  constructor(options: MemoryStoreOptions = {}) {
    if (typeof options !== 'object' || options === null) {
      throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `MemoryStore options must be an object, got ${show(options)}`);
    }
    this.maxKeys = check.positiveInteger(options.maxKeys ?? 1_000_000, "MemoryStore 'maxKeys'");
    const onFull = check.oneOf(options.onFull ?? 'deny', ['allow', 'deny'], "MemoryStore 'onFull'");
    this.onFull = onFull;
  }

  bind(spec: TableSpec): MemoryTable {
    const table = new MemoryTable(this, spec);
    this.tables.add(table);
    return table;
  }

  /** Tables bound and not closed (a service's live rules' tables, once each has decided). */
  get tableCount(): number {
    return this.tables.size;
  }

  /** A table closed (its keys already dropped) leaves; one used again after close() comes back. */
  unlist(table: MemoryTable): void {
    this.tables.delete(table);
  }

  relist(table: MemoryTable): void {
    this.tables.add(table);
  }

  /**
   * Makes room for one key: from `preferred` if it can, else from the fullest other table, then the rest.
   * False when every key sampled is denying (then `fullRetryMs` says how soon one stops). Costs one pass
   * over the live tables at most: a closed table is not among them.
   */
  makeRoom(preferred: MemoryTable, now: number): boolean {
    this.fullRetryMs = Infinity;
    if (preferred.size > 0 && preferred.evictOne(now)) return true;
    if (this.tables.size > 1) {
      let fullest: MemoryTable | undefined;
      for (const t of this.tables) if (t !== preferred && t.size > (fullest?.size ?? 0)) fullest = t;
      if (fullest !== undefined) {
        if (fullest.evictOne(now)) return true;
        for (const t of this.tables) if (t !== preferred && t !== fullest && t.size > 0 && t.evictOne(now)) return true;
      }
    }
    this.stats.storeFull++;
    return false;
  }

  /** Drops every idle key now, in every table. Returns how many were dropped. */
  sweep(): number {
    let dropped = 0;
    for (const t of this.tables) dropped += t.sweepAll();
    return dropped;
  }
}

/**
 * Rows of a new table's slab, which doubles as keys arrive: a service with many rules has a table per rule,
 * most holding a few keys (1024 rows each made 50,000 rules hold about 1 GB before any request).
 */
const INITIAL_ROWS = 16;

export class MemoryTable implements StoreTable {
  readonly sync = true;
  private readonly store: MemoryStore;
  private readonly policies: readonly Policy[];
  private readonly algorithms: readonly Algorithm[];
  private readonly clock: Clock;
  private readonly index = new Map<string, number>();
  /** Per algorithm: its slot offset within a row, or -1 for object state. */
  private readonly offsets: number[];
  /** Per algorithm: object state by row (empty for slab algorithms). */
  private readonly objects: unknown[][];
  /** The object states of one row, by policy, for core/every-policy.ts (its `row` set per call). */
  private readonly rowObjects: ColumnObjects;
  private readonly rowSlots: number;
  private readonly verdicts: Verdict[];
  /** Scratch verdicts for asking whether a key denies now, apart from `verdicts`, which may hold a pending commit. */
  private readonly probes: Verdict[];
  /** A row of zeros: the state of a key never seen, evaluated without creating it. */
  private readonly idleRow: Float64Array;
  private slab: Float64Array;
  private rows = 0;
  private readonly freeRows: number[] = [];
  private cursor: MapIterator<[string, number]> | undefined;
  /** Set by close(): the table is off the store's list until a key arrives again. */
  private closed = false;
  /** Set when the table has one slab policy: the hot path then skips the loop and the fold. */
  private readonly single: SlabAlgorithm | undefined;
  /** Whether a policy bans after a denial (blockFor). */
  private readonly bans: boolean;

  constructor(store: MemoryStore, spec: TableSpec) {
    this.store = store;
    this.policies = spec.policies;
    this.algorithms = spec.algorithms;
    this.clock = spec.clock;
    let slots = 0;
    this.offsets = this.algorithms.map((a) => (a.kind === 'slab' ? (slots += a.slots) - a.slots : -1));
    this.objects = this.algorithms.map(() => []);
    this.rowObjects = new ColumnObjects(this.objects);
    this.rowSlots = slots;
    this.verdicts = this.algorithms.map((a) => new Verdict(a.kind === 'slab' ? a.slots : 0));
    this.probes = this.algorithms.map((a) => new Verdict(a.kind === 'slab' ? a.slots : 0));
    this.idleRow = new Float64Array(Math.max(1, slots));
    this.slab = new Float64Array(Math.max(1, slots) * INITIAL_ROWS);
    const only = this.algorithms[0]!;
    this.bans = this.policies.some((p) => p.block !== undefined || p.countRejected);
    // A ban writes on a denial, which the single-policy path never does: a banning policy takes the general
    // one. A counted rejection (countRejected) is a plain write, which it does.
    this.single =
      this.algorithms.length === 1 && only.kind === 'slab' && only.policy.block === undefined ? only : undefined;
  }

  get size(): number {
    return this.index.size;
  }

  decide(key: string, cost: number, leaseId: string | undefined): Decision {
    if (this.single !== undefined) return this.decideSingle(this.single, key, cost);
    return this.decideAll(key, cost, leaseId, this.algorithms, this.policies);
  }

  /** decide() with per-call limits: `algorithms` decide on this table's state in place of its own. */
  decideWith(key: string, cost: number, leaseId: string | undefined, algorithms: readonly Algorithm[]): Decision {
    return this.decideAll(
      key,
      cost,
      leaseId,
      algorithms,
      algorithms.map((a) => a.policy),
    );
  }

  /** Every policy on the key: charged only if every one admits, a denial writing only its bans (core/every-policy.ts). */
  private decideAll(
    key: string,
    cost: number,
    leaseId: string | undefined,
    algorithms: readonly Algorithm[],
    policies: readonly Policy[],
  ): Decision {
    const now = this.clock();
    const row = this.index.get(key);
    const objects = this.rowObjects;
    objects.row = row ?? -1;
    const allowed = evaluateEvery(
      algorithms,
      this.offsets,
      this.verdicts,
      row === undefined ? this.idleRow : this.slab,
      row === undefined ? 0 : row * this.rowSlots,
      objects,
      now,
      cost,
    );
    const write = writeOf(allowed, cost, this.bans);
    if (write !== undefined) {
      const r = row ?? this.insert(key, now);
      // No room for a new key: a charge answers as the store does when full; a ban is not remembered.
      if (r < 0)
        return write === 'charge'
          ? this.full(policies[0]!, this.verdicts[0]!)
          : combine(policies, this.verdicts, leaseId);
      objects.row = r;
      writeEvery(
        write,
        algorithms,
        this.offsets,
        this.verdicts,
        this.slab,
        r * this.rowSlots,
        objects,
        now,
        cost,
        leaseId,
      ); // insert() may have grown the slab
    }
    return combine(policies, this.verdicts, leaseId);
  }

  /** The decision for a new key the store had no room for (every key it could evict is denying). */
  private full(policy: Policy, v: Verdict): Decision {
    if (this.store.onFull === 'allow')
      return makeDecision({
        allowed: true,
        limit: policy.limit,
        remaining: v.remaining,
        resetAfterMs: v.resetAfterMs,
        retryAfterMs: 0,
        delayMs: v.delayMs,
        policy: policy.name,
        reason: 'store-full',
      });
    const retryMs = this.store.fullRetryMs;
    return makeDecision({
      allowed: false,
      limit: policy.limit,
      remaining: 0,
      resetAfterMs: retryMs,
      retryAfterMs: retryMs,
      delayMs: 0,
      policy: policy.name,
      reason: 'store-full',
    });
  }

  /** decide() for one slab policy, the common case, with nothing on the path that it does not need. */
  private decideSingle(a: SlabAlgorithm, key: string, cost: number): Decision {
    const now = this.clock();
    const row = this.index.get(key);
    const v = this.verdicts[0]!;
    const slab = this.slab;
    if (row === undefined) a.evaluate(this.idleRow, 0, now, cost, v);
    else a.evaluate(slab, row * this.rowSlots, now, cost, v);
    // v.bans: a counted rejection (countRejected) writes too.
    if ((v.allowed || v.bans) && cost > 0) {
      if (row !== undefined) this.writeRow(row * this.rowSlots, v.next);
      else {
        const r = this.insert(key, now);
        if (r < 0 && !v.allowed)
          return makeDecision({
            allowed: false,
            limit: a.policy.limit,
            remaining: v.remaining,
            resetAfterMs: v.resetAfterMs,
            retryAfterMs: v.retryAfterMs,
            delayMs: 0,
            policy: a.policy.name,
          });
        if (r < 0) return this.full(a.policy, v);
        this.writeRow(r * this.rowSlots, v.next);
      }
    }
    return makeDecision({
      allowed: v.allowed,
      limit: a.policy.limit,
      remaining: v.remaining,
      resetAfterMs: v.resetAfterMs,
      retryAfterMs: v.retryAfterMs,
      delayMs: v.delayMs,
      policy: a.policy.name,
    });
  }

  private writeRow(o: number, next: Float64Array): void {
    const slab = this.slab; // insert() may have grown it
    for (let j = 0; j < next.length; j++) slab[o + j] = next[j]!;
  }

  adjust(key: string, delta: number): Decision {
    const now = this.clock();
    if (delta !== 0) {
      const row = this.index.get(key) ?? (delta > 0 ? this.insert(key, now) : undefined);
      if (row !== undefined && row < 0) {
        // No room to charge a new key: the peek below stands, marked as the store's, not the policies'.
        const d = this.decide(key, 0, undefined);
        return { ...d, reason: 'store-full' };
      }
      if (row !== undefined) {
        for (let i = 0; i < this.algorithms.length; i++) {
          const a = this.algorithms[i]!;
          if (a.kind === 'slab') a.adjust(this.slab, row * this.rowSlots + this.offsets[i]!, now, delta);
          else this.objects[i]![row] = a.adjust(this.objects[i]![row], now, delta);
        }
      }
    }
    return this.decide(key, 0, undefined);
  }

  release(key: string, leaseId: string): boolean {
    const row = this.index.get(key);
    if (row === undefined) return false;
    const now = this.clock();
    let released = false;
    for (let i = 0; i < this.algorithms.length; i++) {
      const a = this.algorithms[i]!;
      if (a.kind === 'object' && a.release !== undefined && a.release(this.objects[i]![row], leaseId, now))
        released = true;
    }
    return released;
  }

  reset(key: string): void {
    const row = this.index.get(key);
    if (row !== undefined) this.drop(key, row);
  }

  /**
   * Drops every key and its state and takes the table off the store's list, so the store neither counts
   * its keys nor looks at it to make room: a limiter that is gone (a reloaded rule's) frees its memory
   * here, not after its keys would have expired. A table used again afterwards starts empty.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.store.size -= this.index.size;
    this.index.clear();
    this.cursor = undefined;
    this.freeRows.length = 0;
    this.rows = 0;
    for (const column of this.objects) column.length = 0;
    this.slab = new Float64Array(Math.max(1, this.rowSlots) * INITIAL_ROWS);
    this.store.unlist(this);
  }

  // ---- rows, sweeping and eviction ----

  /** A row for a new key, or -1 when the store is full of denying keys. */
  private insert(key: string, now: number): number {
    if (this.closed) {
      this.closed = false;
      this.store.relist(this);
    }
    this.sweep(now, SWEEP_PER_INSERT);
    if (this.store.size >= this.store.maxKeys && !this.store.makeRoom(this, now)) return -1;
    let row = this.freeRows.pop();
    if (row === undefined) {
      row = this.rows++;
      if ((row + 1) * this.rowSlots > this.slab.length) this.grow();
    }
    this.index.set(key, row);
    this.store.size++;
    return row;
  }

  private grow(): void {
    const next = new Float64Array(this.slab.length * 2);
    next.set(this.slab);
    this.slab = next;
  }

  private drop(key: string, row: number): void {
    this.index.delete(key);
    this.store.size--;
    this.slab.fill(0, row * this.rowSlots, (row + 1) * this.rowSlots);
    for (const column of this.objects) if (column.length > row) column[row] = undefined;
    this.freeRows.push(row);
  }

  /** When the row's state is as if unused, across all of its policies. */
  private idleAt(row: number): number {
    let at = -Infinity;
    for (let i = 0; i < this.algorithms.length; i++) {
      const a = this.algorithms[i]!;
      const t =
        a.kind === 'slab'
          ? (a as SlabAlgorithm).idleAt(this.slab, row * this.rowSlots + this.offsets[i]!)
          : (a as ObjectAlgorithm).idleAt(this.objects[i]![row]);
      if (t > at) at = t;
    }
    return at;
  }

  /** The next entry in sweep (insertion) order, wrapping around. */
  private nextEntry(): [string, number] | undefined {
    if (this.index.size === 0) return undefined;
    let step = this.cursor?.next();
    if (step === undefined || step.done) {
      this.cursor = this.index.entries();
      step = this.cursor.next();
    }
    return step.done ? undefined : step.value;
  }

  /** Looks at up to `budget` entries and drops the idle ones. */
  private sweep(now: number, budget: number): void {
    for (let n = 0; n < budget; n++) {
      const entry = this.nextEntry();
      if (entry === undefined) return;
      if (this.idleAt(entry[1]) <= now) this.drop(entry[0], entry[1]);
    }
  }

  sweepAll(): number {
    const now = this.clock();
    let dropped = 0;
    for (const [key, row] of this.index) {
      if (this.idleAt(row) <= now) {
        this.drop(key, row);
        dropped++;
      }
    }
    return dropped;
  }

  /**
   * How long the key in `row` denies a request of cost 1 from `now` on (a ban included): 0 when it would
   * admit one. Probes every policy without touching the state.
   */
  private denyingFor(row: number, now: number): number {
    let wait = 0;
    for (let i = 0; i < this.algorithms.length; i++) {
      const a = this.algorithms[i]!;
      const p = this.probes[i]!;
      if (a.kind === 'slab') a.evaluate(this.slab, row * this.rowSlots + this.offsets[i]!, now, 1, p);
      else a.evaluate(this.objects[i]![row], now, 1, p);
      if (!p.allowed && p.retryAfterMs > wait) wait = p.retryAfterMs;
    }
    return wait;
  }

  /**
   * Drops one key from a sample in sweep order: the first idle one, else the sampled key closest to idle
   * that is not denying. False when every sampled key is denying; the store's `fullRetryMs` then holds
   * the soonest one of them stops.
   */
  evictOne(now: number): boolean {
    let victim: [string, number] | undefined;
    let victimIdleAt = Infinity;
    const sample = Math.min(EVICTION_SAMPLE, this.index.size);
    for (let n = 0; n < sample; n++) {
      const entry = this.nextEntry()!;
      const at = this.idleAt(entry[1]);
      if (at <= now) {
        victim = entry;
        break;
      }
      if (at < victimIdleAt) {
        const wait = this.denyingFor(entry[1], now);
        if (wait === 0) {
          victim = entry;
          victimIdleAt = at;
        } else if (wait < this.store.fullRetryMs) this.store.fullRetryMs = wait;
      }
    }
    if (victim === undefined) return false;
    this.drop(victim[0], victim[1]);
    this.store.stats.evicted++;
    return true;
  }
}

/** A row's object states where each policy keeps a column of them (by row): the row is set per call, -1 for an idle key. */
class ColumnObjects implements RowObjects {
  row = -1;
  constructor(private readonly columns: unknown[][]) {}
  get(i: number): unknown {
    return this.row < 0 ? undefined : this.columns[i]![this.row];
  }
  set(i: number, state: unknown): void {
    this.columns[i]![this.row] = state;
  }
}
