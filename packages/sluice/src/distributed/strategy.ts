/**
 * Picks a limiter's table for its strategy: 'atomic' (the store's own table: one script call per batch of
 * decisions, exact), 'lease' or 'local-sync' (src/distributed/), optionally behind the local deny cache.
 */
import { SluiceError, show } from '../core/index.js';
import { check } from '../core/option-checks.js';
import { monotonicClock } from '../clock.js';
import type { Store, StoreTable, TableSpec } from '../stores/store.js';
import { checkDenyCache, DenyCacheTable } from './deny-cache.js';
import { checkLeaseOptions, LeaseTable } from './lease.js';
import { checkLocalSyncOptions, LocalSyncTable } from './local-sync.js';
import { bindRegions } from './regions/bind.js';

export type Strategy = 'atomic' | 'local-sync' | 'lease' | 'regions';
export const STRATEGIES: readonly Strategy[] = ['atomic', 'local-sync', 'lease', 'regions'];

export interface StrategyOptions {
  strategy?: unknown;
  denyCache?: unknown;
  lease?: unknown;
  localSync?: unknown;
  /** Whether the user gave the clock: if not, strategies read the monotonic clock on every call. */
  clockGiven: boolean;
}

export function bindStrategy(store: Store, spec: TableSpec, o: StrategyOptions): StoreTable {
  // A store that is one region's home ('regions' option) decides for the world: 'regions' is its only strategy.
  const strategy = o.strategy ?? (store.regions !== undefined ? 'regions' : 'atomic');
  check.oneOf(strategy, STRATEGIES, "'strategy'");
  if (strategy !== 'lease' && o.lease !== undefined)
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `'lease' options need strategy: 'lease', got strategy ${show(strategy)}`,
    );
  if (strategy !== 'local-sync' && o.localSync !== undefined)
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `'localSync' options need strategy: 'local-sync', got strategy ${show(strategy)}`,
    );
  const deny = checkDenyCache(o.denyCache, spec.policies);
  // Lease deadlines must not be read from a clock that lags (the coarse clock can, by up to a tick).
  const clock = o.clockGiven ? spec.clock : monotonicClock;
  let table: StoreTable;
  if (strategy === 'regions' || store.regions !== undefined) {
    table = bindRegions(store, spec, strategy as Strategy, clock);
  } else if (strategy === 'atomic') {
    table = store.bind(spec);
  } else {
    if (typeof store.runner !== 'function') {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `strategy ${show(strategy)} needs a RedisStore: it shares a budget between processes; in one process 'atomic' is already local`,
      );
    }
    const p = spec.policies[0]!;
    if (spec.policies.length !== 1 || p.algorithm !== 'fixed-window') {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `strategy ${show(strategy)} works on one fixed-window policy (a budget per window that can be split), got ${spec.policies.map((q) => show(q.algorithm)).join(', ')}`,
      );
    }
    if (p.calendar !== undefined || p.block !== undefined) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `strategy ${show(strategy)} splits epoch-aligned windows without bans; policy ${show(p.name)} has ${p.calendar !== undefined ? `calendar window ${show(p.calendar.unit)}` : "'blockFor'"}: use strategy 'atomic'`,
      );
    }
    const s = { policy: p, clock, runner: store.runner(spec) };
    table =
      strategy === 'lease'
        ? new LeaseTable(s, checkLeaseOptions(o.lease, p.windowMs))
        : new LocalSyncTable(s, checkLocalSyncOptions(o.localSync, p.limit));
  }
  return deny === undefined ? table : new DenyCacheTable(table, clock, deny);
}
