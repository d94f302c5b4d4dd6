#!/usr/bin/env node
// Instructions per decision of the in-process implementations (bench/lib/impls.mjs), counted by callgrind:
// reproducible where timing on a shared machine is not (bench/run.mjs's ratios moved from 1.56x to 1.00x
// between two runs on one day). Each count is a fresh `node --single-threaded --predictable` under
// callgrind making W warm-up decisions and then N more through bench/lib/loop.mjs's loops, as
// bench/memory-one.mjs does; per decision = (count at N2 - count at N1) / (N2 - N1), which cancels start-up.
// Usage: npm run build && node bench/memory-instructions.mjs [N1=400000] [N2=1200000] [impl:pattern ...]
// (default: sluice, sluice-sync, rlflex, ref, ref-async on `hot` and `rr100k`, and sluice and rlflex on `hot-deny`).
// What a count leaves out: a clock read is a handful of instructions (rdtsc, in the vDSO) but costs 25-50 ns
// on these VMs, so implementations that read the clock per decision (rlflex's `new Date()`, ref's
// performance.now()) are cheaper here than in time; sluice's default clock reads it once per 64 decisions
// or per 1 ms, whichever comes first. The child runs as `node bench/memory-instructions.mjs --child impl pattern n`.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const NODE_FLAGS = ['--single-threaded', '--predictable', '--predictable-gc-schedule', '--no-memory-reducer'];
const WARMUP = 200_000; // TurboFan has compiled every loop here well before this many decisions

if (process.argv[2] === '--child') {
  const [, , , impl, patternName, n] = process.argv;
  const { makeImpl } = await import('./lib/impls.mjs');
  const { makeBatch } = await import('./lib/loop.mjs');
  const { PATTERNS } = await import('./lib/workload.mjs');
  const pattern = PATTERNS[patternName];
  const lim = makeImpl(impl, pattern.policy);
  const batch = makeBatch(lim, pattern.keys());
  const run = async (count) => (lim.kind === 'sync' ? batch(count) : await batch(count));
  let allowed = 0;
  for (let done = 0; done < WARMUP; done += 4096) allowed += await run(4096);
  allowed += await run(Number(n));
  process.stdout.write(`${allowed}\n`);
} else {
  const [N1 = 400_000, N2 = 1_200_000] = process.argv.slice(2, 4).map(Number);
  const cases =
    process.argv.length > 4
      ? process.argv.slice(4)
      : [
          'sluice:hot',
          'sluice-sync:hot',
          'rlflex:hot',
          'ref:hot',
          'ref-async:hot',
          'sluice:rr100k',
          'sluice-sync:rr100k',
          'rlflex:rr100k',
          'ref:rr100k',
          'ref-async:rr100k',
          'sluice:hot-deny',
          'rlflex:hot-deny',
        ];
  const self = fileURLToPath(import.meta.url);
  const count = (impl, pattern, n) =>
    new Promise((resolve, reject) => {
      const child = spawn(
        'valgrind',
        [
          '--tool=callgrind',
          '--callgrind-out-file=/dev/null',
          process.execPath,
          ...NODE_FLAGS,
          self,
          '--child',
          impl,
          pattern,
          String(n),
        ],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
      let err = '';
      child.stderr.on('data', (d) => (err += d));
      child.on('exit', (code) => {
        const m = /Collected : (\d+)/.exec(err);
        if (code !== 0 || !m) reject(new Error(`${impl} ${pattern} ${n}: exit ${code}\n${err.slice(-2000)}`));
        else resolve(Number(m[1]));
      });
    });
  const perDecision = {};
  for (const c of cases) {
    const [impl, pattern] = c.split(':');
    const [a, b] = await Promise.all([count(impl, pattern, N1), count(impl, pattern, N2)]);
    perDecision[c] = (b - a) / (N2 - N1);
    process.stdout.write(
      `${impl} ${pattern}: ${perDecision[c].toFixed(0)} instructions per decision (${a} at ${N1}, ${b} at ${N2})\n`,
    );
  }
  for (const c of cases) {
    const [impl, pattern] = c.split(':');
    if (impl !== 'rlflex' && perDecision[`rlflex:${pattern}`] !== undefined) {
      process.stdout.write(
        `rlflex ÷ ${impl} on ${pattern}: ${(perDecision[`rlflex:${pattern}`] / perDecision[c]).toFixed(2)}x\n`,
      );
    }
  }
}
