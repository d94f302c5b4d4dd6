// The benchmark worker: every hasher, chosen per message, so one page can compare them.
import { hashWasmSearch, jsSearch, webCryptoSearch } from './hashers.js';
import { runWorker } from './worker-core.js';

runWorker(
  self as never,
  (name, seed) =>
    name === 'webcrypto' ? webCryptoSearch(seed) : name === 'hash-wasm' ? hashWasmSearch(seed) : jsSearch(seed),
  'js',
);
