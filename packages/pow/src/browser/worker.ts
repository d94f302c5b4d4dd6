// The shipped Web Worker: plain-JS SHA-256, measured fastest in Chromium (docs/benchmarks.md, "Proof of work").
import { jsSearch } from './hashers.js';
import { runWorker } from './worker-core.js';

runWorker(self as never, (_name, seed) => jsSearch(seed), 'js');
