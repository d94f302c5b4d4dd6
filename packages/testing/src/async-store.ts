// A MemoryStore behind promises, as a networked store answers: every call resolves on a later turn, or,
// when `hold` is set, only when the test releases it. It lets unit tests drive the Gate's async path.
import { MemoryStore } from '../../sluice/src/stores/memory.js';
import type { MemoryTable } from '../../sluice/src/stores/memory.js';
import type { Store, StoreTable, TableSpec } from '../../sluice/src/stores/store.js';

export class AsyncStore implements Store {
  readonly inner = new MemoryStore();
  /** When true, decide() calls wait in `held` until the test calls releaseHeld(). */
  hold = false;
  readonly held: (() => void)[] = [];
  decides = 0;
  /** Limiters with the same policies share one table, as limiters in several processes share Redis keys. */
  private readonly tables = new Map<string, MemoryTable>();

  bind(spec: TableSpec): StoreTable {
    const id = spec.policies.map((p) => p.name).join('\n');
    let t = this.tables.get(id);
    if (t === undefined) this.tables.set(id, (t = this.inner.bind(spec)));
    const later = <T>(f: () => T): Promise<T> =>
      new Promise<T>((resolve, reject) => {
        const go = () => {
          try {
            resolve(f());
          } catch (e) {
            reject(e);
          }
        };
        if (this.hold) this.held.push(go);
        else setImmediate(go);
      });
    return {
      sync: false,
      decide: (key, cost, leaseId) => {
        this.decides++;
        return later(() => t.decide(key, cost, leaseId));
      },
      adjust: (key, delta) => Promise.resolve(t.adjust(key, delta)),
      release: (key, leaseId) => Promise.resolve(t.release(key, leaseId)),
      reset: (key) => Promise.resolve(t.reset(key)),
    };
  }

  releaseHeld(): void {
    for (const go of this.held.splice(0)) go();
  }
}
