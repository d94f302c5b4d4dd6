// Test helpers for the guard: a guard on a hand-moved clock with no jitter, and a store that records keys.
import { MemoryStore } from '../../../sluice/src/stores/memory.js';
import type { Store, StoreTable, TableSpec } from '../../../sluice/src/stores/store.js';
import { Guard } from '../../src/index.js';
import { MemoryGuardState } from '../../src/memory-state.js';
import type { GuardOptions } from '../../src/options.js';

export const SECRET = 'test-secret-0123456789abcdef';
/** An arbitrary epoch-aligned start, mid-bucket for every window the guard uses. */
export const T0 = 1_700_000_123_456;

/** A MemoryStore that remembers every key handed to it, so tests can look for plain values. */
export class RecordingStore implements Store {
  readonly keys = new Set<string>();
  private readonly inner = new MemoryStore();

  bind(spec: TableSpec): StoreTable {
    const table = this.inner.bind(spec);
    const keys = this.keys;
    return {
      sync: table.sync,
      decide: (key, cost, lease) => (keys.add(key), table.decide(key, cost, lease)),
      adjust: (key, delta) => (keys.add(key), table.adjust(key, delta)),
      release: (key, lease) => (keys.add(key), table.release(key, lease)),
      reset: (key) => (keys.add(key), table.reset(key)),
    };
  }
}

/** Where makeGuard's guards keep their buckets and state, when not in memory (see setGuardBackend). */
let backend: (() => Pick<GuardOptions, 'store' | 'state'>) | undefined;

/**
 * Runs every later makeGuard() on another backend, e.g. a fresh RedisStore each: test/redis imports the
 * guard's throttle and signal suites after calling this, so they run unchanged on Redis. Such suites may
 * use only `guard`, `now` and `advance`; `state` and `store` then throw.
 */
export function setGuardBackend(make: () => Pick<GuardOptions, 'store' | 'state'>): void {
  backend = make;
}

function unavailable(what: string): never {
  throw new Error(`makeGuard: '${what}' is the memory one, and this run uses another backend`);
}

export function makeGuard(options: GuardOptions = {}) {
  let now = T0;
  const memory = backend === undefined;
  const state = memory ? new MemoryGuardState() : undefined;
  const store = memory ? new RecordingStore() : undefined;
  const where = memory ? { store, state } : backend!();
  const guard = new Guard({ secret: SECRET, ...where, clock: () => now, random: () => 0, ...options });
  return {
    guard,
    get state(): MemoryGuardState {
      return state ?? unavailable('state');
    },
    get store(): RecordingStore {
      return store ?? unavailable('store');
    },
    now: () => now,
    advance(ms: number) {
      now += ms;
    },
  };
}

/** The n-th address in 198.51.100.0/24 (n < 254). */
export const v4 = (n: number) => `198.51.100.${n + 1}`;
/** The n-th address in one IPv6 /64, as privacy addresses rotate. */
export const v6 = (n: number) => `2001:db8:1:2::${(n + 1).toString(16)}`;
/** An address in its own /24, for attempts that must not share a subnet. */
export const lone = (n: number) => `10.${(n >> 8) & 255}.${n & 255}.1`;
