/**
 * The browser solver: one Web Worker per core (navigator.hardwareConcurrency), each taking the next
 * unsolved sub-puzzle, with progress reports and cancellation (an AbortSignal terminates the workers).
 */
import { expectedWork } from '../difficulty.js';
import { formatSolution, parseToken } from '../token.js';

export interface Progress {
  solved: number;
  total: number;
  hashes: number;
  /** Expected hashes for the whole challenge; hashes / expected is a fair progress fraction. */
  expected: number;
}

export interface BrowserSolveOptions {
  /** Number of workers. Default: navigator.hardwareConcurrency (at least 1), at most one per sub-puzzle. */
  workers?: number;
  onProgress?: (progress: Progress) => void;
  signal?: AbortSignal;
  /** Makes a worker; default: the inlined worker script, or `workerUrl` if set. */
  createWorker?: () => Worker;
  /** Hasher for the benchmark worker ('js', 'webcrypto', 'hash-wasm'); the shipped worker ignores it. */
  hasher?: string;
}

export interface BrowserSolveResult {
  solution: string;
  hashes: number;
  ms: number;
  workers: number;
}

export function solveInBrowser(
  token: string,
  options: BrowserSolveOptions & { createWorker: () => Worker },
): Promise<BrowserSolveResult> {
  const parsed = parseToken(token);
  if (parsed === undefined) return Promise.reject(new Error('sluice-pow: not a challenge token'));
  const { puzzles, target } = parsed.fields;
  const expected = expectedWork(target, puzzles);
  const cores =
    typeof navigator !== 'undefined' && navigator.hardwareConcurrency > 0 ? navigator.hardwareConcurrency : 1;
  const count = Math.max(1, Math.min(options.workers ?? cores, puzzles));
  const started = performance.now();

  return new Promise((resolve, reject) => {
    const workers: Worker[] = [];
    const nonces = new Array<number>(puzzles);
    let next = 0;
    let solved = 0;
    let hashes = 0;
    let finished = false;
    const stop = () => {
      finished = true;
      for (const w of workers) w.terminate();
      options.signal?.removeEventListener('abort', onAbort);
    };
    const onAbort = () => {
      if (finished) return;
      stop();
      reject(options.signal!.reason ?? new Error('aborted'));
    };
    if (options.signal?.aborted) return onAbort();
    options.signal?.addEventListener('abort', onAbort);

    const assign = (w: Worker) => {
      if (next < puzzles)
        w.postMessage({ type: 'solve', seed: parsed.mac, target, index: next++, hasher: options.hasher });
    };
    for (let i = 0; i < count; i++) {
      const w = options.createWorker();
      workers.push(w);
      w.onmessage = ({ data }) => {
        if (finished) return;
        if (data.type === 'progress') {
          hashes += data.hashes;
          options.onProgress?.({ solved, total: puzzles, hashes, expected });
        } else if (data.type === 'found') {
          nonces[data.index] = data.nonce;
          solved++;
          options.onProgress?.({ solved, total: puzzles, hashes, expected });
          if (solved === puzzles) {
            stop();
            resolve({
              solution: formatSolution(token, nonces),
              hashes,
              ms: performance.now() - started,
              workers: count,
            });
          } else {
            assign(w);
          }
        } else {
          stop();
          reject(new Error(`sluice-pow worker: ${data.message}`));
        }
      };
      w.onerror = (event) => {
        if (finished) return;
        stop();
        reject(new Error(`sluice-pow worker failed: ${event.message}`));
      };
      assign(w);
    }
  });
}
