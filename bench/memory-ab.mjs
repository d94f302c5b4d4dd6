#!/usr/bin/env node
/**
 * @file A paired A/B of two builds of sluice on the in-process benchmark: runs `bench/run.mjs` with one rep
 * in checkout A, then in checkout B, `pairs` times, and prints each pair and the medians. Pairs run back
 * to back, so a shared machine's drift (which moves whole runs by 2x here) lands on both sides of a pair.
 *
 *   node bench/memory-ab.mjs <checkout A> <checkout B> [pairs=6] [pattern=hot] [impls=sluice,rlflex,ref-async]
 *
 * Each checkout must be built (`npm run build` in it) and have node_modules (a symlink to this one's does).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';

const [a, b, pairsArg = '6', pattern = 'hot', impls = 'sluice,rlflex,ref-async'] = process.argv.slice(2);
if (!a || !b) throw new Error('usage: node bench/memory-ab.mjs <checkout A> <checkout B> [pairs] [pattern] [impls]');
const pairs = Number(pairsArg);
if (!Number.isInteger(pairs) || pairs < 1) throw new Error(`pairs must be a positive integer, got '${pairsArg}'`);
const names = impls.split(',');

/** One rep of every impl in `dir`: decisions per second by impl, read from the run's JSON report. */
function runOnce(dir) {
  const env = {
    ...process.env,
    REPS: '1',
    IMPLS: impls,
    PATTERNS: pattern,
    MEASURE_MS: process.env.MEASURE_MS ?? '2000',
    SKIP_BUILD: '1',
  };
  const r = spawnSync(process.execPath, [join(dir, 'bench', 'run.mjs')], { cwd: dir, env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`bench/run.mjs in ${dir} failed (exit ${r.status}):\n${r.stderr}`);
  const json = /written: (\S+\.json)/.exec(r.stdout + r.stderr)?.[1];
  if (!json) throw new Error(`bench/run.mjs in ${dir} wrote no report`);
  const runs = JSON.parse(readFileSync(json, 'utf8')).runs;
  rmSync(json); // a one-rep report is not worth keeping; this script's output is the record
  rmSync(json.replace(/\.json$/, '.md'), { force: true });
  return Object.fromEntries(names.map((n) => [n, runs.find((x) => x.impl === n && x.pattern === pattern).opsPerSec]));
}

const median = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];
const M = (x) => (x / 1e6).toFixed(2) + ' M';
const rows = [];
for (let i = 0; i < pairs; i++) {
  const ra = runOnce(resolve(a)),
    rb = runOnce(resolve(b));
  rows.push({ ra, rb });
  console.log(
    `pair ${i + 1}: A ${names.map((n) => `${n} ${M(ra[n])}`).join(', ')} | B ${names.map((n) => `${n} ${M(rb[n])}`).join(', ')}`,
  );
}
const [first, second] = names;
console.log(`\n${pattern}, ${pairs} pairs, medians:`);
for (const n of names)
  console.log(
    `  ${n}: A ${M(median(rows.map((r) => r.ra[n])))}, B ${M(median(rows.map((r) => r.rb[n])))}, B ÷ A per pair ${(median(rows.map((r) => r.rb[n] / r.ra[n]))).toFixed(2)}×`,
  );
if (second) {
  console.log(
    `  ${first} ÷ ${second}: A ${median(rows.map((r) => r.ra[first] / r.ra[second])).toFixed(2)}×, B ${median(rows.map((r) => r.rb[first] / r.rb[second])).toFixed(2)}× (median of per-run ratios)`,
  );
}
