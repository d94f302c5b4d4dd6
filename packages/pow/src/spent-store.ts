/**
 * Spent stores remember redeemed challenges until they expire, so each solution is accepted once. The
 * contract is one method, so a new backend is a small file (as rate-limiter-flexible keeps its stores).
 */
import { check } from 'sluice/kit';

/**
 * What a spend answers: true if this call spent the id, false if it was already spent (or the store
 * refuses, see MemorySpentStore), 'expired' if the store's own clock says the token has expired (a shared
 * store judges expiry on one clock for every server: RedisSpentStore).
 */
export type SpendResult = boolean | 'expired';

export interface SpentStore {
  /** Marks `id` spent until `expiresAt` (epoch ms; `now` is the verifier's clock). See SpendResult. */
  spend(id: string, expiresAt: number, now: number): SpendResult | Promise<SpendResult>;
}

export interface MemorySpentStoreOptions {
  /** Most unexpired ids kept. Default 1,000,000 (about 100 MB at worst). */
  maxEntries?: number;
}

/** Most entries a spend looks at beyond the oldest two when the store is full: the bound on its work. */
export const FULL_SWEEP_STEP = 256;

/**
 * In-process spent store. Expired ids are dropped without timers: each spend first looks at the oldest
 * two entries (insertion order tracks expiry when TTLs are alike). A full store goes on from where its
 * last look ended, FULL_SWEEP_STEP entries a spend, round the whole map: an expired id anywhere is found
 * within size / FULL_SWEEP_STEP spends, and no spend pays for the whole map (a million live ids swept on
 * every spend cost 14.5 ms each). A store still full of unexpired ids refuses new ones rather than forget
 * one that could then be replayed; the verifier reports that as 'replayed'. Size `maxEntries` above the
 * solutions one TTL sees.
 */
export class MemorySpentStore implements SpentStore {
  private readonly entries = new Map<string, number>();
  private readonly maxEntries: number;
  /** Where a full store's look for expired ids goes on from: a live iterator (a Map's sees deletions and additions). */
  private cursor: Iterator<[string, number]> | undefined;

  constructor(options: MemorySpentStoreOptions = {}) {
    this.maxEntries = check.positiveInteger(options.maxEntries ?? 1_000_000, "MemorySpentStore: 'maxEntries'");
  }

  get size(): number {
    return this.entries.size;
  }

  spend(id: string, expiresAt: number, now: number): boolean {
    const entries = this.entries;
    let swept = 0;
    for (const [oldId, oldExpiry] of entries) {
      if (oldExpiry > now || swept === 2) break;
      entries.delete(oldId);
      swept++;
    }
    const existing = entries.get(id);
    if (existing !== undefined) {
      if (existing > now) return false;
      entries.delete(id);
    }
    if (entries.size >= this.maxEntries) {
      this.sweepSome(now, FULL_SWEEP_STEP);
      if (entries.size >= this.maxEntries) return false;
    }
    entries.set(id, expiresAt);
    return true;
  }

  /** Looks at up to `budget` entries from the cursor on (starting again at the oldest past the end), dropping the expired. */
  private sweepSome(now: number, budget: number): void {
    const entries = this.entries;
    for (let looked = 0; looked < budget; ) {
      this.cursor ??= entries.entries();
      const next = this.cursor.next();
      if (next.done === true) {
        this.cursor = undefined;
        if (looked === 0) return; // an empty map
        continue;
      }
      looked++;
      if (next.value[1] <= now) entries.delete(next.value[0]);
    }
  }

  /** Drops every expired id. */
  sweep(now: number): void {
    for (const [id, expiry] of this.entries) if (expiry <= now) this.entries.delete(id);
  }
}
