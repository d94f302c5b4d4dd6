#!/usr/bin/env node
/**
 * @file Decisions per second of `await limiter.limit(key)` on each runtime against Node in the same run,
 * and DurableObjectStore in workerd (Miniflare) against the memory store there. Imports ../dist (the code
 * users get): run `npm run build` first.
 *
 *   npm run build && node bench/runtimes.mjs [reps=3] [ms=2000]
 *
 * Node, Bun and Deno: one fresh process per measurement (bench/runtimes-one.mjs), reps interleaved across
 * runtimes so that a shared machine's drift lands on every row. workerd: the same loop in a Worker; its
 * clock stands still while code runs (Workers' Spectre mitigation), so it is timed from Node around each
 * call, less the median time of an empty call. The Durable Object rows: one Worker request makes the
 * decisions through DurableObjectStore (an RPC to the object per decision), one at a time or 64 at once;
 * 100,000 keys go to 64 shards (Miniflare keeps each object's SQLite database in memory, and 100,000 of
 * them exhaust it).
 * Writes bench/results/runtimes-<time>.{md,json}.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { Miniflare } from 'miniflare';
import { fmtRate, median } from './lib/stats.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const REPS = Number(process.argv[2] ?? 3);
const MS = Number(process.argv[3] ?? 2000);
const PATTERNS = ['hot', 'rr100k'];
const bin = (name) => join(root, 'node_modules/.bin', name);
const version = (cmd, args) => execFileSync(cmd, args, { encoding: 'utf8' }).split('\n')[0].trim();
const CLI = {
  node: { cmd: process.execPath, args: [], version: process.version },
  bun: { cmd: bin('bun'), args: [], version: `bun ${version(bin('bun'), ['--version'])}` },
  deno: { cmd: bin('deno'), args: ['run', '--no-prompt'], version: version(bin('deno'), ['--version']) },
};

function runCli(name, pattern) {
  const { cmd, args } = CLI[name];
  const out = execFileSync(cmd, [...args, join(here, 'runtimes-one.mjs'), pattern, String(MS)], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1' },
  });
  return JSON.parse(out.trim().split('\n').pop()).perSecond;
}

// ---- workerd ----
const work = mkdtempSync(join(tmpdir(), 'sluice-bench-rt-'));
writeFileSync(
  join(work, 'entry.mjs'),
  `import { Limiter, MemoryStore } from ${JSON.stringify(join(root, 'dist/index.js'))};
   const sluice = { Limiter, MemoryStore };
   import { DurableObjectStore, SluiceDurableObject } from ${JSON.stringify(join(root, 'packages/sluice/dist/cloudflare/index.js'))};
   import { decide, decideConcurrently, keysOf, makeLimiter } from ${JSON.stringify(join(here, 'lib/runtime-loop.mjs'))};
   export { SluiceDurableObject };
   const limiters = new Map();
   let offset = 0;
   export default {
     async fetch(request, env) {
       const q = new URL(request.url).searchParams;
       const pattern = q.get('pattern'), store = q.get('store'), n = Number(q.get('n')), inflight = Number(q.get('inflight') ?? 1);
       const id = pattern + store;
       if (!limiters.has(id)) limiters.set(id, { keys: keysOf(pattern), limiter: makeLimiter(sluice, store === 'do' ? new DurableObjectStore({ namespace: env.SLUICE, ...(pattern === 'rr100k' ? { shards: 64 } : {}) }) : undefined) });
       const { keys, limiter } = limiters.get(id);
       const allowed = inflight > 1 ? await decideConcurrently(limiter, keys, offset, n, inflight) : await decide(limiter, keys, offset, n);
       offset += n;
       return Response.json({ allowed });
     },
   };`,
);
await build({
  entryPoints: [join(work, 'entry.mjs')],
  outfile: join(work, 'worker.mjs'),
  bundle: true,
  format: 'esm',
  platform: 'neutral',
  mainFields: ['module', 'main'],
  conditions: ['workerd', 'worker', 'browser'],
  external: ['cloudflare:workers'],
  logLevel: 'error',
});
const mf = new Miniflare({
  modules: true,
  scriptPath: join(work, 'worker.mjs'),
  modulesRoot: work,
  compatibilityDate: '2025-04-01',
  durableObjects: { SLUICE: { className: 'SluiceDurableObject', useSQLite: true } },
});

async function call(query) {
  const t0 = performance.now();
  const res = await mf.dispatchFetch(`http://localhost/?${query}`);
  const { allowed } = await res.json();
  return { ms: performance.now() - t0, allowed };
}

/** Decisions per second in the Worker: calls of `n` decisions for about MS ms, less an empty call each. */
async function runWorker(pattern, store, n, inflight = 1) {
  const q = `pattern=${pattern}&store=${store}&inflight=${inflight}`;
  const empty = [];
  for (let i = 0; i < 5; i++) empty.push((await call(`${q}&n=0`)).ms);
  const overhead = median(empty);
  // Warm-up; in memory it also makes every key. Through Durable Objects the keys are made as visited.
  await call(`${q}&n=${pattern === 'rr100k' && store === 'memory' ? 200_000 : n}`);
  let decisions = 0;
  let ms = 0;
  while (ms < MS) {
    const r = await call(`${q}&n=${n}`);
    if (r.allowed !== n) throw new Error(`workerd ${store} ${pattern}: only ${r.allowed} of ${n} allowed`);
    decisions += n;
    ms += Math.max(0.001, r.ms - overhead);
  }
  return decisions / (ms / 1000);
}

const rows = {};
const push = (k, v) => {
  (rows[k] ??= []).push(v);
  console.error(`${k}: ${fmtRate(v)}/s`);
};
try {
  for (let rep = 0; rep < REPS; rep++) {
    for (const pattern of PATTERNS) {
      for (const name of Object.keys(CLI)) push(`${name} ${pattern}`, runCli(name, pattern));
      push(`workerd ${pattern}`, await runWorker(pattern, 'memory', 200_000));
    }
    push('workerd do hot', await runWorker('hot', 'do', 200));
    push('workerd do hot x64', await runWorker('hot', 'do', 640, 64));
    push('workerd do rr100k x64', await runWorker('rr100k', 'do', 640, 64));
    console.error(`rep ${rep + 1}/${REPS} done`);
  }
} finally {
  await mf.dispose();
  rmSync(work, { recursive: true, force: true });
}

const med = Object.fromEntries(Object.entries(rows).map(([k, v]) => [k, median(v)]));
const range = (k) => `${fmtRate(med[k])}/s (${fmtRate(Math.min(...rows[k]))} – ${fmtRate(Math.max(...rows[k]))})`;
const lines = [
  `# sluice on each runtime: \`await limiter.limit(key)\`, token bucket, memory store unless said`,
  '',
  `${REPS} reps × ${MS} ms, medians (min – max); ${CLI.node.version}, ${CLI.bun.version}, ${CLI.deno.version}, workerd through miniflare (${JSON.parse(readFileSync(join(root, 'node_modules/miniflare/package.json'), 'utf8')).version}); load average at the end ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}.`,
  '',
  '| runtime | one hot key | vs Node | 100,000 keys | vs Node |',
  '|---|---|---|---|---|',
  ...['node', 'bun', 'deno', 'workerd'].map(
    (r) =>
      `| ${r} | ${range(`${r} hot`)} | ${(med[`${r} hot`] / med['node hot']).toFixed(2)}× | ${range(`${r} rr100k`)} | ${(med[`${r} rr100k`] / med['node rr100k']).toFixed(2)}× |`,
  ),
  '',
  '| workerd (Miniflare) | decisions/s | vs the memory store in the same Worker |',
  '|---|---|---|',
  `| DurableObjectStore, one hot key, one decision at a time | ${range('workerd do hot')} | ${(med['workerd do hot'] / med['workerd hot']).toFixed(4)}× |`,
  `| DurableObjectStore, one hot key, 64 in flight | ${range('workerd do hot x64')} | ${(med['workerd do hot x64'] / med['workerd hot']).toFixed(4)}× |`,
  `| DurableObjectStore, 100,000 keys round-robin (each new in the run) on 64 shards, 64 in flight | ${range('workerd do rr100k x64')} | ${(med['workerd do rr100k x64'] / med['workerd rr100k']).toFixed(4)}× |`,
  `| MemoryStore in the Worker (one hot key; 100,000 keys) | ${range('workerd hot')}; ${range('workerd rr100k')} | 1× |`,
];
const report = lines.join('\n') + '\n';
process.stdout.write(report);
const stamp = new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19) + 'Z';
mkdirSync(join(here, 'results'), { recursive: true });
writeFileSync(join(here, 'results', `runtimes-${stamp}.md`), report);
writeFileSync(
  join(here, 'results', `runtimes-${stamp}.json`),
  JSON.stringify(
    { reps: REPS, ms: MS, versions: Object.fromEntries(Object.entries(CLI).map(([k, v]) => [k, v.version])), rows },
    null,
    2,
  ),
);
console.error(`written: bench/results/runtimes-${stamp}.md`);
