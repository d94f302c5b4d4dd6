/**
 * Guard state in process memory (the default): its records (memory-records.ts), the login port a Guard
 * decides through on them (memory-login.ts), and the anomaly monitors' counts and baselines, shared by
 * every Guard of this process given the same state.
 */
import { check, show, SluiceError, type Store } from 'sluice/kit';
import { bucketTables, MemoryLogin } from './memory-login.js';
import { MemoryRecords } from './memory-records.js';
import type { GuardState, LoginConfig, LoginPort } from './state.js';

export interface MemoryGuardStateOptions {
  /** Most account records kept. Default 1,000,000. */
  maxAccounts?: number;
  /** Most source (address, subnet, fingerprint) records kept. Default 1,000,000. */
  maxSources?: number;
}

export { REMEMBERED_PASSWORDS } from './rules.js';

export class MemoryGuardState implements GuardState {
  readonly maxAccounts: number;
  readonly maxSources: number;
  /** The accounts' and sources' records: every Guard on this state reads and writes these. */
  readonly records: MemoryRecords;
  /** shareFailures' counts: by monitor and bucket, with when each expires. A few per monitor at a time. */
  private readonly failureCounts = new Map<string, { count: number; expiresAt: number }>();
  /** writeBaselines' text, with when it expires. */
  private baselines: { text: string; expiresAt: number } | undefined;

  constructor(options: MemoryGuardStateOptions = {}) {
    if (typeof options !== 'object' || options === null) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `MemoryGuardState options must be an object, got ${show(options)}`,
      );
    }
    for (const field of Object.keys(options)) {
      if (field !== 'maxAccounts' && field !== 'maxSources') {
        throw new SluiceError(
          'ERR_SLUICE_INVALID_OPTION',
          `unknown MemoryGuardState option '${field}'; known options are maxAccounts, maxSources`,
        );
      }
    }
    this.maxAccounts = positive(options.maxAccounts ?? 1_000_000, 'maxAccounts');
    this.maxSources = positive(options.maxSources ?? 1_000_000, 'maxSources');
    this.records = new MemoryRecords(this.maxAccounts, this.maxSources);
  }

  get accountCount(): number {
    return this.records.accountCount;
  }

  get sourceCount(): number {
    return this.records.sourceCount;
  }

  /** The Guard's login port on these records, with the guard's buckets in `store`'s tables. */
  loginPort(store: Store, config: LoginConfig): LoginPort {
    return new MemoryLogin(this.records, bucketTables(store, config), config);
  }

  /** Guards of one process sharing this state share their anomaly counts, as guards on one Redis do. */
  shareFailures(
    monitor: string,
    adds: readonly (readonly [bucket: number, count: number])[],
    ttlMs: number,
    now: number,
  ): number[] {
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
    return this.records.dump();
  }
}

function positive(value: unknown, field: string): number {
  return check.positiveInteger(value, `MemoryGuardState '${field}'`);
}
