/**
 * @file One measurement: ONE implementation on ONE key pattern, in this (fresh) process. Prints one JSON line.
 *
 *   node --expose-gc bench/memory-one.mjs <impl> <pattern> [warmupMs=1000] [measureMs=3000]
 *   impl:    sluice | sluice-sync | rlflex | limiter-tb | ref | ref-async
 *   pattern: hot | hot-deny | rr100k | once1m
 *
 * A fresh process per measurement keeps one implementation's JIT feedback, heap and timers from leaking into
 * another's figures. sluice is imported from ../dist (run `npm run build` first; bench/run.mjs does).
 * The method follows /work/shared/anchorbench suite A; see bench/README.md.
 */
import { PerformanceObserver } from 'node:perf_hooks';
import { makeImpl } from './lib/impls.mjs';
import { makeBatch, timed } from './lib/loop.mjs';
import { PATTERNS } from './lib/workload.mjs';

const [impl, patternName, warmupArg, measureArg] = process.argv.slice(2);
const pattern = PATTERNS[patternName];
if (!impl || !pattern)
  throw new Error(`usage: memory-one.mjs <impl> <${Object.keys(PATTERNS).join('|')}> [warmupMs] [measureMs]`);
if (!globalThis.gc) throw new Error('run with node --expose-gc');
const WARMUP_MS = Number(warmupArg ?? 1000);
const MEASURE_MS = Math.min(Number(measureArg ?? 3000), 60_000); // every loop is bounded
const BATCH = 4096;

// GC pauses inside the measured part: a cost that a decision rate hides in plain sight.
let gcMs = 0,
  gcCount = 0,
  gcOn = false;
new PerformanceObserver((list) => {
  if (gcOn)
    for (const e of list.getEntries()) {
      gcMs += e.duration;
      gcCount++;
    }
}).observe({ entryTypes: ['gc'] });
const settle = () => new Promise((r) => setTimeout(r, 20)); // lets observer entries and finalizers run
async function fullGc() {
  gc();
  gc();
  await settle();
  gc();
}
/** Heap plus off-heap memory. `external` already includes `arrayBuffers` (typed-array slabs), so it is not added again. */
const mem = () => {
  const u = process.memoryUsage();
  return { ...u, total: u.heapUsed + u.external };
};

/** Sanity checks: a row whose pattern did not happen as described is flagged, not silently reported. */
function problems(lim, allowed, n) {
  const out = [];
  const size = lim.size();
  if (size !== pattern.storeSize) out.push(`store holds ${size} keys, expected ${pattern.storeSize}`);
  const denyPattern = pattern.policy.burst < 1e6;
  if (!denyPattern && allowed !== n) out.push(`${n - allowed} of ${n} decisions denied on an all-allowed pattern`);
  if (denyPattern && allowed > pattern.policy.burst)
    out.push(`${allowed} allowed on a deny pattern (burst ${pattern.policy.burst})`);
  return out;
}

async function steady() {
  const keys = pattern.keys();
  const lim = makeImpl(impl, pattern.policy);
  const batch = makeBatch(lim, keys);
  await timed(lim.kind, batch, WARMUP_MS, BATCH); // JIT warm-up; also creates every key (rr100k); discarded
  await fullGc();
  gcOn = true;
  const cpu0 = process.cpuUsage();
  const r = await timed(lim.kind, batch, MEASURE_MS, BATCH);
  const cpu = process.cpuUsage(cpu0);
  await settle();
  gcOn = false;
  return {
    ...r,
    opsPerSec: r.n / (r.elapsedMs / 1000),
    nsPerOp: (r.elapsedMs * 1e6) / r.n,
    allowedFrac: r.allowed / r.n,
    cpuPct: ((cpu.user + cpu.system) / 1000 / r.elapsedMs) * 100,
    storeSize: lim.size(),
    problems: problems(lim, r.allowed, r.n),
  };
}

/**
 * 1,000,000 new keys, one decision each, then memory per key after forced GC. Three snapshots:
 *   m0 before the key strings exist, mK with them built (held in an array), mS after the store is filled,
 *   and mF once the array is dropped, so the strings live on only where the store keeps them.
 * bytesPerKeyInclKey = (mF − m0)/N  counts the stored key string (anchorbench's A3 figure also does);
 * bytesPerKeyExclKey = (mS − mK)/N  is what the store adds on top of key strings the caller already has.
 */
async function once1m() {
  const N = pattern.storeSize;
  {
    // warm the insert path on a throwaway instance with other keys, as anchorbench does
    const w = makeImpl(impl, pattern.policy);
    const wkeys = Array.from({ length: 200_000 }, (_, i) => 'w' + i);
    await timed(w.kind, makeBatch(w, wkeys), 300, BATCH);
  }
  const lim = makeImpl(impl, pattern.policy); // its fixed cost (empty Map, first slab) stays out of the delta
  await fullGc();
  const m0 = mem();
  let keys = pattern.keys();
  await fullGc();
  const mK = mem();
  let batch = makeBatch(lim, keys);
  gcOn = true;
  const t0 = performance.now();
  const allowed = lim.kind === 'sync' ? batch(N) : await batch(N);
  const elapsedMs = performance.now() - t0;
  await settle();
  gcOn = false;
  await fullGc();
  const mS = mem();
  keys = batch = undefined; // drop the array; only the store keeps the key strings now
  await fullGc();
  const mF = mem();
  const per = (a, b, f) => (b[f] - a[f]) / N;
  return {
    n: N,
    allowed,
    elapsedMs,
    opsPerSec: N / (elapsedMs / 1000),
    nsPerOp: (elapsedMs * 1e6) / N,
    allowedFrac: allowed / N,
    bytesPerKeyInclKey: per(m0, mF, 'total'),
    bytesPerKeyExclKey: per(mK, mS, 'total'),
    keyStringAndSlotBytes: per(m0, mK, 'total'), // the keys array: ~24 B string + 8 B array slot each
    heapBytesPerKeyInclKey: per(m0, mF, 'heapUsed'),
    externalBytesPerKeyInclKey: per(m0, mF, 'external'),
    arrayBuffersBytesPerKeyInclKey: per(m0, mF, 'arrayBuffers'), // part of external, shown for clarity
    rssBytesPerKey: per(m0, mF, 'rss'),
    storeSize: lim.size(),
    problems: problems(lim, allowed, N),
  };
}

const t = patternName === 'once1m' ? await once1m() : await steady();
const out = {
  impl,
  pattern: patternName,
  policy: pattern.policy,
  warmupMs: WARMUP_MS,
  measureMs: MEASURE_MS,
  batch: BATCH,
  node: process.version,
  ...t,
  gcMs,
  gcCount,
};
process.stdout.write(JSON.stringify(out) + '\n');
process.exit(0); // rlflex leaves unref'd timers; exit explicitly anyway
