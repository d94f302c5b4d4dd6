/**
 * The worker's message loop, shared by the shipped worker (one hasher) and the benchmark worker (all of
 * them). Messages in: {type:'solve', seed, target, index} and {type:'bench', ms}. Out: 'progress' (hashes
 * since the last report), 'found' (index, nonce), 'bench' (hashes, ms), 'error'.
 */
import type { HasherName, Search } from './hashers.js';

export type MakeSearch = (name: HasherName, seed: Uint8Array) => Search | Promise<Search>;

interface WorkerScope {
  onmessage: ((event: { data: any }) => void) | null;
  postMessage(message: unknown): void;
}

/** Hashes per slice: about 10 ms of work, so progress is smooth and messages stay cheap. */
const SLICE = 1 << 15;

export function runWorker(scope: WorkerScope, makeSearch: MakeSearch, defaultHasher: HasherName): void {
  scope.onmessage = async ({ data }) => {
    try {
      const hasher: HasherName = data.hasher ?? defaultHasher;
      const search = await makeSearch(hasher, data.seed);
      if (data.type === 'bench') {
        // Hash until the time is up, against an impossible target, to count raw speed.
        const t0 = performance.now();
        let hashes = 0;
        while (performance.now() - t0 < data.ms) {
          await search(0, 0, hashes, SLICE);
          hashes += SLICE;
        }
        scope.postMessage({ type: 'bench', hasher, hashes, ms: performance.now() - t0 });
        return;
      }
      const { index, target } = data;
      for (let start = 0; start < 2 ** 32; start += SLICE) {
        const found = await search(index, target, start, SLICE);
        scope.postMessage({ type: 'progress', hashes: found < 0 ? SLICE : found - start + 1 });
        if (found >= 0) {
          scope.postMessage({ type: 'found', index, nonce: found });
          return;
        }
      }
      scope.postMessage({ type: 'error', message: `sub-puzzle ${index} has no 32-bit solution` });
    } catch (error) {
      scope.postMessage({ type: 'error', message: String(error) });
    }
  };
}
