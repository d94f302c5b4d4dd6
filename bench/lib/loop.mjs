/**
 * @file The decision loops. Each call to a batch makes `count` decisions over `keys`, round-robin, and returns
 * how many were allowed (a Promise for async kinds). Counting the result keeps the work from being optimized
 * away, and it lets the runner check the allowed fraction. Async APIs are awaited one decision at a time,
 * the way a request handler calls them.
 */
import { RateLimiterRes } from './impls.mjs';

export function makeBatch({ kind, decide }, keys) {
  const K = keys.length;
  let idx = 0;
  switch (kind) {
    case 'sync':
      return (count) => {
        let a = 0;
        for (let i = 0; i < count; i++) {
          if (decide(keys[idx])) a++;
          if (++idx === K) idx = 0;
        }
        return a;
      };
    case 'await-decision':
      return async (count) => {
        let a = 0;
        for (let i = 0; i < count; i++) {
          if ((await decide(keys[idx])).allowed) a++;
          if (++idx === K) idx = 0;
        }
        return a;
      };
    case 'await-bool':
      return async (count) => {
        let a = 0;
        for (let i = 0; i < count; i++) {
          if (await decide(keys[idx])) a++;
          if (++idx === K) idx = 0;
        }
        return a;
      };
    case 'await-reject':
      return async (count) => {
        let a = 0;
        for (let i = 0; i < count; i++) {
          try {
            await decide(keys[idx]);
            a++;
          } catch (e) {
            if (!(e instanceof RateLimiterRes)) throw e; // a denial; anything else is a real error
          }
          if (++idx === K) idx = 0;
        }
        return a;
      };
    default:
      throw new Error('unknown kind ' + kind);
  }
}

/**
 * Runs batches of `batchSize` until `ms` have passed. The clock is read only between batches, so its cost
 * (~50 ns here, as much as a whole reference decision) does not land on every decision.
 */
export async function timed(kind, batch, ms, batchSize) {
  const isSync = kind === 'sync';
  let n = 0,
    allowed = 0,
    t;
  const t0 = performance.now(),
    deadline = t0 + ms;
  do {
    allowed += isSync ? batch(batchSize) : await batch(batchSize);
    n += batchSize;
  } while ((t = performance.now()) < deadline);
  return { n, allowed, elapsedMs: t - t0 };
}
