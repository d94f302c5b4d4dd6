/** The 'regions' strategy's hook in the strategy registry: checks the store, the policy and the options. */
import { SluiceError, show } from '../../core/index.js';
import type { Clock, Policy } from '../../core/types.js';
import type { Store, StoreTable, TableSpec } from '../../stores/store.js';
import { checkRegions, refusal } from './options.js';
import { RegionsTable } from './table.js';

export function bindRegions(store: Store, spec: TableSpec, strategy: string, clock: Clock): StoreTable {
  if (store.regions === undefined || typeof store.runner !== 'function') {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `strategy 'regions' needs a RedisStore with the 'regions' option (this region's name and its peers' Redis clients)`,
    );
  }
  if (strategy !== 'regions') {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `a RedisStore with 'regions' keeps one limit across regions with strategy 'regions' (its default), got strategy ${show(strategy)}; use a store without 'regions' for a limit of this region alone`,
    );
  }
  const regions = checkRegions(store.regions);
  checkRegionsPolicies(spec.policies);
  const p = spec.policies[0]!;
  const runner = store.runner(spec);
  return new RegionsTable({ policy: p, clock, runner }, regions);
}

/**
 * Throws what binding would throw for `policies` on a regions store: one policy, of an algorithm the regions
 * can keep. The service checks its rules with it at a reload, before any rule's limiter is built.
 */
export function checkRegionsPolicies(policies: readonly Policy[]): void {
  if (policies.length !== 1) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `strategy 'regions' keeps one policy per limiter across regions, got ${policies.length} (${policies.map((p) => show(p.name)).join(', ')}): use one limiter per policy`,
    );
  }
  const p = policies[0]!;
  const why = refusal(p);
  if (why !== undefined) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `strategy 'regions' cannot keep policy ${show(p.name)} (algorithm ${show(p.algorithm)}) across regions: ${why}`,
    );
  }
}
