// A MemoryStore that lets the demo see how many entries the growable (object) state holds per key.
import {
  type Algorithm,
  LeaseSet,
  LogState,
  MemoryStore,
  type ObjectAlgorithm,
  type Store,
  type StoreTable,
  type TableSpec,
} from 'sluice/kit';

/** Entries an object state holds in memory: log entries (aged-out ones not yet compacted included), or leases. */
export function heldEntries(state: unknown): number {
  if (state instanceof LogState) return state.times.length;
  if (state instanceof LeaseSet) return state.ids.length;
  return 0;
}

/**
 * Decides with a real MemoryStore and the real algorithms; it only wraps each object algorithm's `commit` to
 * record the largest number of entries any committed state held.
 */
export class ProbeStore implements Store {
  /** The most entries one key's object state held after any commit (releases only ever shrink it). */
  maxHeldEntries = 0;
  private readonly memory = new MemoryStore();

  bind(spec: TableSpec): StoreTable {
    return this.memory.bind({ ...spec, algorithms: spec.algorithms.map((a) => this.observe(a)) });
  }

  private record(state: unknown): void {
    const held = heldEntries(state);
    if (held > this.maxHeldEntries) this.maxHeldEntries = held;
  }

  private observe(algorithm: Algorithm): Algorithm {
    if (algorithm.kind === 'slab') return algorithm;
    const a: ObjectAlgorithm = algorithm;
    const observed: ObjectAlgorithm = {
      kind: 'object',
      policy: a.policy,
      evaluate: (state, now, cost, v) => a.evaluate(state, now, cost, v),
      commit: (state, now, cost, leaseId) => {
        const next = a.commit(state, now, cost, leaseId);
        this.record(next);
        return next;
      },
      adjust: (state, now, delta) => a.adjust(state, now, delta),
      idleAt: (state) => a.idleAt(state),
    };
    if (a.release !== undefined) {
      const release = a.release.bind(a);
      return { ...observed, release: (state, leaseId, now) => release(state, leaseId, now) };
    }
    return observed;
  }
}
