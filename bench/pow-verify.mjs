/**
 * @file verifySolution throughput on one core, memory spent store, default sub-puzzle count (16).
 *
 *   npm run build && node bench/pow-verify.mjs [challenges=100000] [runs=5]
 *
 * Every verification is of a fresh, valid solution, so each one runs the whole path: parse, HMAC,
 * constant-time compare, 16 puzzle hashes and a store write. Solutions are made before timing starts;
 * difficulty does not change verification cost (one hash per sub-puzzle whatever the target), so they
 * are made easy. Also timed: the cheap rejections an attacker can send (bad signature, replay).
 * Imports ../dist, as a user would.
 */
import { createChallenge, MemorySpentStore, solveChallenge, verifySolution } from '../packages/pow/dist/index.js';
import { median } from './lib/stats.mjs';

const N = Number(process.argv[2] ?? 100_000);
const RUNS = Number(process.argv[3] ?? 5);
const secret = 'benchmark secret, long enough!!';
const scope = 'login:alice';

console.error(`making ${N} solved challenges...`);
const solutions = [];
for (let i = 0; i < N; i++)
  solutions.push(await solveChallenge(createChallenge({ secret, difficulty: 16, scope, ttlMs: 600_000 })));

/** Rate per wall-clock second, and per CPU second of this process: on a shared machine the other
 *  processes stretch wall time, while CPU time counts only the core-time verification used. */
async function rate(list, store) {
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  let ok = 0;
  for (const s of list) if ((await verifySolution(s, { secret, scope, store })).ok) ok++;
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const c = process.cpuUsage(c0);
  cpu.push(list.length / ((c.user + c.system) / 1e6));
  return { perSecond: list.length / seconds, ok };
}
const cpu = [];

const fresh = [];
const freshCpu = [];
const replay = [];
const forged = solutions.map((s) => s.replace(/^(.{30})./, (m, p) => p + (m[30] === 'A' ? 'B' : 'A')));
for (let r = 0; r < RUNS; r++) {
  const store = new MemorySpentStore();
  const a = await rate(solutions, store);
  if (a.ok !== N) throw new Error(`only ${a.ok} of ${N} verified`);
  fresh.push(a.perSecond);
  freshCpu.push(cpu.pop());
  const b = await rate(solutions, store); // every one now spent
  if (b.ok !== 0) throw new Error('a replay was accepted');
  replay.push(b.perSecond);
}
const bad = [];
for (let r = 0; r < RUNS; r++) bad.push((await rate(forged, new MemorySpentStore())).perSecond);

const fmt = (xs) =>
  `${Math.round(median(xs)).toLocaleString('en-US')}/s (min ${Math.round(Math.min(...xs)).toLocaleString('en-US')}, max ${Math.round(Math.max(...xs)).toLocaleString('en-US')})`;
const { loadavg } = await import('node:os');
console.log(
  `verifySolution, one core, ${N} solutions × ${RUNS} runs, 16 sub-puzzles, MemorySpentStore (node ${process.version})`,
);
console.log(`  valid, first use:   ${fmt(fresh)} per wall second; ${fmt(freshCpu)} per CPU second`);
console.log(`  replayed:           ${fmt(replay)}`);
console.log(`  tampered payload:   ${fmt(bad)}`);
console.log(
  `  load average at the end: ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
