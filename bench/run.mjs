/**
 * @file `npm run bench`: every impl × pattern, each measurement in a fresh process, repetitions interleaved
 * (rep 1 of everything, then rep 2, …) so that slow drift of a shared machine spreads over every row instead
 * of hitting one. Prints a markdown report and writes it, with the raw JSON, to bench/results/.
 *
 *   REPS=3 IMPLS=sluice,rlflex PATTERNS=hot,rr100k MEASURE_MS=3000 WARMUP_MS=1000 npm run bench
 *   SKIP_BUILD=1 skips the dist freshness check.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { distHash, machineFacts } from './lib/facts.mjs';
import { renderMarkdown } from './lib/report.mjs';
import { fmtRate } from './lib/stats.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const ALL_IMPLS = ['sluice', 'sluice-sync', 'rlflex', 'limiter-tb', 'ref', 'ref-async'];
const ALL_PATTERNS = ['hot', 'hot-deny', 'rr100k', 'once1m'];
const list = (env, all) => {
  const picked = env
    ? env
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : all;
  for (const p of picked) if (!all.includes(p)) throw new Error(`unknown '${p}'; choose from ${all.join(',')}`);
  return all.filter((x) => picked.includes(x)); // keep the canonical order whatever order was given
};
const config = {
  reps: Number(process.env.REPS ?? 3),
  warmupMs: Number(process.env.WARMUP_MS ?? 1000),
  measureMs: Number(process.env.MEASURE_MS ?? 3000),
  impls: list(process.env.IMPLS, ALL_IMPLS),
  patterns: list(process.env.PATTERNS, ALL_PATTERNS),
  allowPolicy: process.env.ALLOW_POLICY ?? 'live',
};

/** Newest mtime of any file under dir (0 if none). */
const newest = (dir) =>
  readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .reduce((m, e) => Math.max(m, statSync(join(e.parentPath ?? e.path, e.name)).mtimeMs), 0);

/** The bench measures the built package; rebuild when dist is missing or older than src. */
function ensureBuild() {
  const entry = join(root, 'packages/sluice/dist/index.js');
  if (
    process.env.SKIP_BUILD !== '1' &&
    (!existsSync(entry) || statSync(entry).mtimeMs < newest(join(root, 'packages/sluice/src')))
  ) {
    process.stderr.write('dist is missing or older than src: npm run build\n');
    const r = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
    if (r.status !== 0)
      throw new Error(`npm run build failed (exit ${r.status}); fix the build or rerun with SKIP_BUILD=1`);
  }
}

/** One measurement in a fresh process; a failure is recorded and the run goes on. */
function measure(impl, pattern, rep) {
  const args = [
    '--expose-gc',
    join(here, 'memory-one.mjs'),
    impl,
    pattern,
    String(config.warmupMs),
    String(config.measureMs),
  ];
  const loadavg1 = +os.loadavg()[0].toFixed(2);
  const r = spawnSync(process.execPath, args, {
    encoding: 'utf8',
    timeout: 180_000,
    killSignal: 'SIGKILL',
    maxBuffer: 1 << 24,
  });
  const line = r.stdout
    ?.trim()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .pop();
  if (r.status !== 0 || !line) {
    const why =
      r.error?.message ??
      `exit ${r.status} signal ${r.signal}: ${(r.stderr ?? '').trim().split('\n').slice(-3).join(' / ')}`;
    return { impl, pattern, rep, loadavg1, error: why };
  }
  return { ...JSON.parse(line), rep, loadavg1 };
}

ensureBuild();
const facts = machineFacts(root);
const stamp = facts.date.replace(/[:.]/g, '-');
const out = join(here, 'results', `memory-${stamp}`);
mkdirSync(dirname(out), { recursive: true });

const runs = [];
for (let rep = 1; rep <= config.reps; rep++) {
  for (const pattern of config.patterns) {
    for (const impl of config.impls) {
      const r = measure(impl, pattern, rep);
      runs.push(r);
      const mem = r.bytesPerKeyInclKey === undefined ? '' : ` ${r.bytesPerKeyInclKey.toFixed(1)} B/key`;
      process.stderr.write(
        `rep ${rep}/${config.reps} ${impl} ${pattern}: ${r.error ? 'ERROR ' + r.error : `${fmtRate(r.opsPerSec)}/s ${r.nsPerOp.toFixed(1)} ns${mem}${r.problems.length ? ' PROBLEM ' + r.problems.join('; ') : ''}`} load=${r.loadavg1}\n`,
      );
      writeFileSync(out + '.json.tmp', JSON.stringify({ facts, config, runs })); // survives a crash or ^C (gitignored)
    }
  }
}

const finishedLoadavg = os.loadavg().map((x) => +x.toFixed(2));
// Other work on this checkout (npm ci's prepare, a manual build) may rebuild dist mid-run: say so if it did.
const distAtEnd = distHash(root);
if (distAtEnd !== facts.sluiceDistSha256)
  runs.push({
    impl: 'dist',
    pattern: '-',
    rep: '-',
    error: `dist changed during the run (${facts.sluiceDistSha256} -> ${distAtEnd}); later reps measured other code`,
  });
const md = renderMarkdown({ facts, config, runs, finishedLoadavg });
writeFileSync(out + '.json', JSON.stringify({ facts, config, finishedLoadavg, runs }, null, 1));
writeFileSync(out + '.md', md);
rmSync(out + '.json.tmp', { force: true }); // the final files are complete now
process.stdout.write(md + `\nwritten: ${out}.json, ${out}.md\n`);
