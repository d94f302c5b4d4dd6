/**
 * @file One measurement on the runtime that runs this file (node, bun or deno): warm-up (it also creates
 * every key), then decisions for `ms` milliseconds, timed per batch of 4096. Prints one JSON line.
 *
 *   node bench/runtimes-one.mjs <hot|rr100k> [ms=2000]      (or bun / deno run)
 */
import * as sluice from '../packages/sluice/dist/index.js';
import { decide, keysOf, makeLimiter } from './lib/runtime-loop.mjs';

const [pattern = 'hot', msArg = '2000'] = globalThis.Deno ? globalThis.Deno.args : process.argv.slice(2);
const ms = Number(msArg);
const keys = keysOf(pattern);
const limiter = makeLimiter(sluice);
await decide(limiter, keys, 0, Math.max(keys.length, 200_000)); // warm-up
let n = 0;
let allowed = 0;
const t0 = performance.now();
let t = t0;
while (t - t0 < ms) {
  allowed += await decide(limiter, keys, n, 4096);
  n += 4096;
  t = performance.now();
}
if (allowed !== n) throw new Error(`only ${allowed} of ${n} allowed`);
console.log(JSON.stringify({ pattern, decisions: n, seconds: (t - t0) / 1000, perSecond: n / ((t - t0) / 1000) }));
