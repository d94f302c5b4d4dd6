/**
 * @file Proof of work in headless Chromium: the hash rate of each SHA-256 back end in a Web Worker
 * (WebCrypto, hash-wasm's WASM, sluice's plain JS), the Node solver's rate on the same machine, and the
 * median and p95 time to solve a challenge at three difficulties through the shipped solver.
 *
 *   npm run build && node --conditions=sluice-source --import tsx bench/pow-browser.mjs [challenges=50]
 *
 * Each solve fetches a fresh challenge from a local server (not timed) and solves it with one worker per
 * core, as the <sluice-pow> widget does. Results go to stdout and bench/results/pow-browser-<time>.json.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { launchChromium } from '../packages/testing/src/chromium.ts';
import { ROOT, startSite } from '../packages/testing/src/pow-site.ts';
import { createChallenge, solveChallenge } from '../packages/pow/src/index.ts';

const CHALLENGES = Math.max(50, Number(process.argv[2] ?? 50));
const DIFFICULTIES = [250_000, 1_000_000, 4_000_000];
const HASHERS = ['webcrypto', 'hash-wasm', 'js'];
const BENCH_MS = 2000;

execFileSync(process.execPath, [join(ROOT, 'scripts/build-browser.mjs'), '--bench'], { stdio: 'ignore' });
const site = await startSite({
  '/bench-worker.js': join(ROOT, '.tmp/browser/bench-worker.js'),
  '/solver.js': join(ROOT, '.tmp/browser/solver.js'),
  '/sluice-pow-worker.js': join(ROOT, 'packages/pow/dist/browser/sluice-pow-worker.js'),
});
const browser = await launchChromium();
const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)];
};
const result = {
  date: new Date().toISOString(),
  cpu: cpus()[0]?.model,
  node: process.version,
  hashRates: {},
  solves: [],
};

try {
  const page = await browser.context.newPage();
  await page.goto(`${site.url}/blank`);
  await page.addScriptTag({ url: '/solver.js' });
  result.chromium = await page.evaluate(() => navigator.userAgent);
  result.cores = await page.evaluate(() => navigator.hardwareConcurrency);

  // 1. Raw hash rate of each back end, one worker, three runs each, interleaved so load drifts evenly.
  for (let run = 0; run < 3; run++) {
    for (const hasher of HASHERS) {
      const r = await page.evaluate(
        ([hasher, ms]) =>
          new Promise((resolve) => {
            const w = new Worker('/bench-worker.js');
            w.onmessage = ({ data }) => {
              w.terminate();
              resolve(data);
            };
            w.postMessage({ type: 'bench', hasher, ms, seed: crypto.getRandomValues(new Uint8Array(32)) });
          }),
        [hasher, BENCH_MS],
      );
      if (r.type !== 'bench') throw new Error(`${hasher}: ${r.message}`);
      (result.hashRates[hasher] ??= []).push(r.hashes / (r.ms / 1000));
    }
  }

  // 2. The Node solver on the same machine: hashes per second of solveChallenge.
  const nodeRates = [];
  for (let i = 0; i < 3; i++) {
    const ch = createChallenge({ secret: 'bench secret, long enough!!', difficulty: 4_000_000, scope: 's' });
    let hashes = 0;
    const t0 = performance.now();
    await solveChallenge(ch, { onProgress: (_s, _t, h) => (hashes = h) });
    nodeRates.push(hashes / ((performance.now() - t0) / 1000));
  }
  result.hashRates.node = nodeRates;

  // 3. Solve times through the shipped worker, one worker per core.
  for (const difficulty of DIFFICULTIES) {
    const runs = await page.evaluate(
      async ([difficulty, n]) => {
        const out = [];
        for (let i = 0; i < n; i++) {
          const ch = await (await fetch(`/pow/challenge?username=alice&difficulty=${difficulty}`)).json();
          const r = await SluicePow.solveInBrowser(ch.token, {
            createWorker: () => new Worker('/sluice-pow-worker.js'),
          });
          out.push({ ms: r.ms, hashes: r.hashes, workers: r.workers });
        }
        return out;
      },
      [difficulty, CHALLENGES],
    );
    const ms = runs.map((r) => r.ms);
    result.solves.push({
      difficulty,
      n: runs.length,
      workers: runs[0].workers,
      medianMs: quantile(ms, 0.5),
      p95Ms: quantile(ms, 0.95),
      meanHashes: runs.reduce((a, r) => a + r.hashes, 0) / runs.length,
    });
  }
} finally {
  await browser.close();
  await site.close();
}
result.loadAverage = loadavg();

const med = (xs) => quantile(xs, 0.5);
const m = (x) => `${(x / 1e6).toFixed(2)} M/s`;
console.log(
  `Chromium ${result.chromium.match(/Chrome\/([\d.]+)/)?.[1]}, ${result.cores} cores (${result.cpu}), node ${result.node}`,
);
console.log('\nSHA-256 puzzle hashes per second, one Web Worker (median of 3 × 2 s):');
for (const h of HASHERS) console.log(`  ${h.padEnd(10)} ${m(med(result.hashRates[h]))}`);
console.log(`  ${'node'.padEnd(10)} ${m(med(result.hashRates.node))}  (solveChallenge, main thread)`);
console.log(`\nSolve time, ${CHALLENGES} challenges each, ${result.solves[0].workers} workers, shipped worker (js):`);
console.log('  difficulty (expected hashes)   median      p95   mean hashes');
for (const s of result.solves) {
  console.log(
    `  ${String(s.difficulty.toLocaleString('en-US')).padStart(28)}  ${s.medianMs.toFixed(0).padStart(6)} ms  ${s.p95Ms.toFixed(0).padStart(5)} ms  ${Math.round(s.meanHashes).toLocaleString('en-US')}`,
  );
}
console.log(`\nload average: ${result.loadAverage.map((x) => x.toFixed(2)).join(' ')}`);
writeFileSync(
  join(ROOT, `bench/results/pow-browser-${result.date.replace(/[:.]/g, '-')}.json`),
  JSON.stringify(result, null, 2),
);
