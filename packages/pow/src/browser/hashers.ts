/**
 * The SHA-256 back ends a worker can search with. All compute the same puzzle hash (SHA-256 of the
 * 40-byte seed ‖ index ‖ nonce, first 48 bits); they differ only in speed, which bench/pow-browser.mjs
 * measures in Chromium. The shipped worker uses the fastest; the others stay for that measurement.
 */
import { puzzleHash48, puzzleSeed } from 'sluice/kit';

/** Searches nonces [start, start + count) of sub-puzzle `index`; resolves to the first that passes, or -1. */
export type Search = (index: number, target: number, start: number, count: number) => number | Promise<number>;

export type HasherName = 'js' | 'webcrypto' | 'hash-wasm';

/** Plain TypeScript SHA-256 (src/crypto/sha256.ts): one synchronous compression per nonce, no allocation. */
export function jsSearch(seed: Uint8Array): Search {
  const prepared = puzzleSeed(seed);
  return (index, target, start, count) => {
    const end = start + count;
    for (let n = start; n < end; n++) if (puzzleHash48(prepared, index, n | 0) < target) return n;
    return -1;
  };
}

function input(seed: Uint8Array): { bytes: Uint8Array<ArrayBuffer>; view: DataView } {
  const bytes = new Uint8Array(40);
  bytes.set(seed);
  return { bytes, view: new DataView(bytes.buffer) };
}

const top48 = (d: Uint8Array) =>
  (((d[0]! << 24) | (d[1]! << 16) | (d[2]! << 8) | d[3]!) >>> 0) * 65536 + ((d[4]! << 8) | d[5]!);

/** WebCrypto: digest() is asynchronous, so a batch of digests is kept in flight to hide the round trips. */
export function webCryptoSearch(seed: Uint8Array, batch = 256): Search {
  const inputs = Array.from({ length: batch }, () => input(seed));
  return async (index, target, start, count) => {
    for (let base = start; base < start + count; base += batch) {
      const n = Math.min(batch, start + count - base);
      const digests = [];
      for (let i = 0; i < n; i++) {
        const { bytes, view } = inputs[i]!;
        view.setUint32(32, index);
        view.setUint32(36, base + i);
        digests.push(crypto.subtle.digest('SHA-256', bytes));
      }
      const done = await Promise.all(digests);
      for (let i = 0; i < n; i++) if (top48(new Uint8Array(done[i]!)) < target) return base + i;
    }
    return -1;
  };
}

/** hash-wasm's WebAssembly SHA-256, one reusable hasher per worker. */
export async function hashWasmSearch(seed: Uint8Array): Promise<Search> {
  const { createSHA256 } = await import('hash-wasm');
  const hasher = await createSHA256();
  const { bytes, view } = input(seed);
  return (index, target, start, count) => {
    view.setUint32(32, index);
    const end = start + count;
    for (let n = start; n < end; n++) {
      view.setUint32(36, n);
      hasher.init();
      hasher.update(bytes);
      if (top48(hasher.digest('binary')) < target) return n;
    }
    return -1;
  };
}
