/**
 * Spent stores remember redeemed challenges until they expire, so each solution is accepted once. The
 * contract is one method, so a new backend is a small file (as rate-limiter-flexible keeps its stores).
 */
import { SluiceError, show } from '../core/errors.js';

export interface SpentStore {
  /**
   * Marks `id` spent until `expiresAt` (epoch ms; `now` is the verifier's clock). Returns true if this
   * call spent it, false if it was already spent (or the store refuses, see MemorySpentStore).
   */
  spend(id: string, expiresAt: number, now: number): boolean | Promise<boolean>;
}

export interface MemorySpentStoreOptions {
  /** Most unexpired ids kept. Default 1,000,000 (about 100 MB at worst). */
  maxEntries?: number;
}

/**
 * In-process spent store. Expired ids are dropped without timers: each spend first looks at the oldest
 * two entries (insertion order tracks expiry when TTLs are alike), and a full store sweeps everything.
 * A store still full of unexpired ids refuses new ones rather than forget one that could then be
 * replayed; the verifier reports that as 'replayed'. Size `maxEntries` above the solutions one TTL sees.
 */
export class MemorySpentStore implements SpentStore {
  private readonly entries = new Map<string, number>();
  private readonly maxEntries: number;

  constructor(options: MemorySpentStoreOptions = {}) {
    const max = options.maxEntries ?? 1_000_000;
    if (!Number.isInteger(max) || max < 1) {
      throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `MemorySpentStore: 'maxEntries' must be a positive integer, got ${show(options.maxEntries)}`);
    }
    this.maxEntries = max;
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
      this.sweep(now);
      if (entries.size >= this.maxEntries) return false;
    }
    entries.set(id, expiresAt);
    return true;
  }

  /** Drops every expired id. */
  sweep(now: number): void {
    for (const [id, expiry] of this.entries) if (expiry <= now) this.entries.delete(id);
  }
}
