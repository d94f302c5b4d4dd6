/**
 * What a SluiceDurableObject does with its storage, apart from the Workers runtime so that it runs (and is
 * tested) anywhere: it applies sluice's core algorithms to one row of state per key and table, exactly as
 * the memory store does (src/stores/memory.ts), and keeps each row in the object's storage so that it
 * survives the object's eviction.
 *
 * Atomicity: a Durable Object runs one event at a time, and every decision here is synchronous once its
 * row is in memory. A row is loaded once (concurrent first requests share the load) and read from the
 * in-memory copy after that await, so two requests on one key never decide on the same state.
 *
 * Expiry: each row records, on the object's wall clock, when its state becomes as if unused (the
 * algorithms' idleAt). One alarm per object deletes the rows that are idle, at most every SWEEP_GAP_MS,
 * and is not set again once no row is left: an idle key costs no storage and no alarm.
 */
import { combine, createAlgorithm, SluiceError, show, Verdict } from '../core/index.js';
import { evaluateEvery, writeEvery, writeOf, type RowObjects } from '../core/every-policy.js';
import { check } from '../core/option-checks.js';
import type { Algorithm, Decision, Policy } from '../core/index.js';
import { sha256 } from '../crypto/sha256.js';
import { encodeBase64url } from '../crypto/base64url.js';
import { utf8 } from '../runtime.js';

/** One operation on one key, as DurableObjectStore sends it. */
export interface ObjectRequest {
  /** The table's id (a digest of its policies): rows of different limiters on one key stay apart. */
  readonly table: string;
  readonly policies: readonly Policy[];
  readonly key: string;
  /** decide: the request's cost; adjust: the charge (> 0) or refund (< 0). */
  readonly cost: number;
  readonly leaseId?: string | undefined;
  /** The caller's clock (DurableObjectStore `clock: 'client'`); else the object's own. */
  readonly now?: number | undefined;
}

/** The part of a Durable Object's storage (ctx.storage) that the engine uses. */
export interface ObjectStorage {
  get<T = unknown>(key: string): Promise<T | undefined>;
  put<T>(key: string, value: T): Promise<void>;
  delete(key: string): Promise<boolean>;
  list<T = unknown>(options: { prefix?: string; start?: string; limit?: number }): Promise<Map<string, T>>;
  getAlarm(): Promise<number | null>;
  setAlarm(scheduledTime: number): Promise<void>;
}

/** A row as stored: the slab slots, the object states (sliding log, leases), and when it is idle. */
interface StoredRow {
  s: Float64Array;
  o: unknown[];
  /** Wall-clock ms (the object's Date.now()) at which the state is as if unused. */
  e: number;
}

interface Row {
  slab: Float64Array;
  objects: unknown[];
  expiresAt: number;
}

interface Compiled {
  readonly policies: readonly Policy[];
  readonly algorithms: readonly Algorithm[];
  /** Per algorithm: its first slot in the row's slab, or -1 for object state. */
  readonly offsets: readonly number[];
  readonly slots: number;
  readonly verdicts: readonly Verdict[];
  readonly idle: Float64Array;
}

/** Alarms that sweep idle rows come at most this often (an alarm is billed as a request). */
export const SWEEP_GAP_MS = 60_000;
const ROW = 'r:';
const LIST_PAGE = 1000;
/** UTF-16 units of a key stored as it is: at most 3 bytes of UTF-8 each, well inside the 2 KiB limit. */
const MAX_PLAIN_KEY = 512;

const noop = () => {};

/** A row's object states for core/every-policy.ts: `states` set per call, undefined for an idle key. */
class ArrayObjects implements RowObjects {
  states: unknown[] | undefined;
  get(i: number): unknown {
    return this.states?.[i];
  }
  set(i: number, state: unknown): void {
    this.states![i] = state;
  }
}

export class ObjectEngine {
  private readonly storage: ObjectStorage;
  private readonly wallClock: () => number;
  private readonly compiled = new Map<string, Compiled>();
  /** Rows in memory by storage key; null marks a key known to have no row. */
  private readonly rows = new Map<string, Row | null>();
  private readonly rowObjects = new ArrayObjects();
  private readonly loading = new Map<string, Promise<void>>();
  /** The alarm set, or null for none; undefined until start() has read it. */
  private alarmAt: number | null | undefined;

  constructor(storage: ObjectStorage, wallClock: () => number = Date.now) {
    this.storage = storage;
    this.wallClock = wallClock;
  }

  /** Reads the pending alarm; SluiceDurableObject runs it inside blockConcurrencyWhile. */
  async start(): Promise<void> {
    this.alarmAt = await this.storage.getAlarm();
  }

  async decide(r: ObjectRequest): Promise<Decision> {
    const t = this.table(r);
    const sk = rowKey(r);
    await this.load(sk);
    return this.decideLoaded(t, sk, r.key, r.cost, r.leaseId, r.now ?? this.wallClock());
  }

  async adjust(r: ObjectRequest): Promise<Decision> {
    const t = this.table(r);
    const sk = rowKey(r);
    await this.load(sk);
    const now = r.now ?? this.wallClock();
    const delta = r.cost;
    if (!Number.isSafeInteger(delta)) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_COST',
        `SluiceDurableObject: an adjustment for ${show(r.key)} must be an integer, got ${show(delta)}`,
      );
    }
    if (delta !== 0) {
      let row = this.rows.get(sk) ?? undefined;
      if (row === undefined && delta > 0) row = this.create(t, sk);
      if (row !== undefined) {
        for (let i = 0; i < t.algorithms.length; i++) {
          const a = t.algorithms[i]!;
          if (a.kind === 'slab') a.adjust(row.slab, t.offsets[i]!, now, delta);
          else row.objects[i] = a.adjust(row.objects[i], now, delta);
        }
        this.persist(t, sk, row, now);
      }
    }
    return this.decideLoaded(t, sk, r.key, 0, undefined, now);
  }

  async release(r: ObjectRequest): Promise<boolean> {
    const t = this.table(r);
    const sk = rowKey(r);
    await this.load(sk);
    const row = this.rows.get(sk);
    if (row == null || r.leaseId === undefined) return false;
    const now = r.now ?? this.wallClock();
    let released = false;
    for (let i = 0; i < t.algorithms.length; i++) {
      const a = t.algorithms[i]!;
      if (a.kind === 'object' && a.release !== undefined && a.release(row.objects[i], r.leaseId, now)) released = true;
    }
    if (released) this.persist(t, sk, row, now);
    return released;
  }

  async reset(r: ObjectRequest): Promise<void> {
    const sk = rowKey(r);
    await this.load(sk);
    this.rows.set(sk, null);
    await this.storage.delete(sk);
  }

  /** The alarm: deletes every row that is idle by now, and sets the next alarm if any row is left. */
  async alarm(): Promise<void> {
    const wall = this.wallClock();
    let next = Infinity;
    let start: string | undefined;
    for (;;) {
      const page = await this.storage.list<StoredRow>(
        start === undefined ? { prefix: ROW, limit: LIST_PAGE } : { prefix: ROW, start, limit: LIST_PAGE },
      );
      for (const [sk, stored] of page) {
        if (sk === start) continue;
        // The copy in memory is the newest (writes are not awaited); a key reset meanwhile is gone.
        const held = this.rows.get(sk);
        if (held === null) continue;
        const expiresAt = held === undefined ? stored.e : held.expiresAt;
        if (expiresAt <= wall) {
          this.rows.delete(sk);
          this.storage.delete(sk).catch(noop);
        } else if (expiresAt < next) next = expiresAt;
      }
      if (page.size < LIST_PAGE) break;
      start = [...page.keys()].pop();
    }
    // Rows written while the listing ran are in memory.
    for (const row of this.rows.values())
      if (row !== null && row.expiresAt > wall && row.expiresAt < next) next = row.expiresAt;
    this.alarmAt = null;
    if (next !== Infinity) await this.setAlarm(Math.max(next, wall + SWEEP_GAP_MS));
  }

  /** Rows held in memory (for tests and metrics). */
  get cachedRows(): number {
    let n = 0;
    for (const row of this.rows.values()) if (row !== null) n++;
    return n;
  }

  // ---- the decision, as MemoryTable.decideAll makes it ----

  private decideLoaded(
    t: Compiled,
    sk: string,
    key: string,
    cost: number,
    leaseId: string | undefined,
    now: number,
  ): Decision {
    checkRequest(key, cost, now);
    const row = this.rows.get(sk) ?? undefined;
    // Every policy charged only if every one admits; a denial writes only the bans it starts (core/every-policy.ts).
    const objects = this.rowObjects;
    objects.states = row?.objects;
    const allowed = evaluateEvery(
      t.algorithms,
      t.offsets,
      t.verdicts,
      row === undefined ? t.idle : row.slab,
      0,
      objects,
      now,
      cost,
    );
    const write = writeOf(allowed, cost, !allowed && t.verdicts.some((v) => v.bans));
    if (write !== undefined) {
      const r = row ?? this.create(t, sk);
      objects.states = r.objects;
      writeEvery(write, t.algorithms, t.offsets, t.verdicts, r.slab, 0, objects, now, cost, leaseId);
      this.persist(t, sk, r, now);
    }
    return combine(t.policies, t.verdicts, leaseId);
  }

  private create(t: Compiled, sk: string): Row {
    const row: Row = { slab: new Float64Array(t.slots), objects: t.algorithms.map(() => undefined), expiresAt: 0 };
    this.rows.set(sk, row);
    return row;
  }

  /** Writes the row through (not awaited: a Durable Object's output gate holds the reply until it is durable). */
  private persist(t: Compiled, sk: string, row: Row, now: number): void {
    let idleAt = -Infinity;
    for (let i = 0; i < t.algorithms.length; i++) {
      const a = t.algorithms[i]!;
      const at = a.kind === 'slab' ? a.idleAt(row.slab, t.offsets[i]!) : a.idleAt(row.objects[i]);
      if (at > idleAt) idleAt = at;
    }
    // Idle time on the request's timeline becomes a time to live on the object's wall clock.
    const wall = this.wallClock();
    row.expiresAt = wall + Math.max(0, Math.ceil(idleAt - now));
    const stored: StoredRow = { s: row.slab, o: row.objects, e: row.expiresAt };
    this.storage.put(sk, stored).catch(noop);
    // Unknown (start() not run) counts as none: setting an alarm replaces whatever one was pending.
    if (this.alarmAt == null || row.expiresAt < this.alarmAt - SWEEP_GAP_MS) {
      this.setAlarm(Math.max(row.expiresAt, wall + 1)).catch(noop);
    }
  }

  private async setAlarm(at: number): Promise<void> {
    this.alarmAt = at;
    await this.storage.setAlarm(at);
  }

  private load(sk: string): Promise<void> | void {
    if (this.rows.has(sk)) return;
    let p = this.loading.get(sk);
    if (p === undefined) {
      p = this.storage.get<StoredRow>(sk).then(
        (stored) => {
          this.loading.delete(sk);
          if (!this.rows.has(sk))
            this.rows.set(
              sk,
              stored === undefined
                ? null
                : { slab: Float64Array.from(stored.s), objects: stored.o, expiresAt: stored.e },
            );
        },
        (e: unknown) => {
          this.loading.delete(sk);
          throw e;
        },
      );
      this.loading.set(sk, p);
    }
    return p;
  }

  private table(r: ObjectRequest): Compiled {
    if (typeof r !== 'object' || r === null || typeof r.table !== 'string') {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `SluiceDurableObject: a request must come from DurableObjectStore, got ${show(r)}`,
      );
    }
    const hit = this.compiled.get(r.table);
    if (hit !== undefined) return hit;
    if (!Array.isArray(r.policies) || r.policies.length === 0) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_POLICY',
        `SluiceDurableObject: 'policies' must be a non-empty array, got ${show(r.policies)}`,
      );
    }
    const algorithms = r.policies.map((p) => {
      const a = createAlgorithm(p);
      if (a === undefined)
        throw new SluiceError(
          'ERR_SLUICE_INVALID_POLICY',
          `SluiceDurableObject: unknown 'algorithm' ${show(p?.algorithm)}`,
        );
      return a;
    });
    let slots = 0;
    const offsets = algorithms.map((a) => (a.kind === 'slab' ? (slots += a.slots) - a.slots : -1));
    const t: Compiled = {
      policies: r.policies,
      algorithms,
      offsets,
      slots,
      verdicts: algorithms.map((a) => new Verdict(a.kind === 'slab' ? a.slots : 0)),
      idle: new Float64Array(Math.max(1, slots)),
    };
    this.compiled.set(r.table, t);
    return t;
  }
}

function rowKey(r: ObjectRequest): string {
  if (typeof r.key !== 'string' || r.key.length === 0) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_KEY',
      `SluiceDurableObject: 'key' must be a non-empty string, got ${show(r.key)}`,
    );
  }
  // Storage keys are at most 2,048 bytes: a long key is stored under its digest.
  return r.key.length <= MAX_PLAIN_KEY
    ? `${ROW}${r.table}:${r.key}`
    : `${ROW}${r.table}:#${encodeBase64url(sha256(utf8(r.key)))}`;
}

function checkRequest(key: string, cost: number, now: number): void {
  check.nonNegativeInteger(cost, `SluiceDurableObject: 'cost' for ${show(key)}`, { code: 'ERR_SLUICE_INVALID_COST' });
  if (typeof now !== 'number' || !Number.isFinite(now))
    check.refuse("SluiceDurableObject: 'now'", 'a finite number', now, { unit: 'milliseconds' });
}
