/**
 * @file `npm run bench:outbound`: sluice's Gate next to bottleneck and p-queue, in one run.
 * 1. Scheduling overhead per call, with a limit that never binds: sequential (await one call at a time)
 *    and concurrent (all submitted at once), no-op jobs.
 * 2. Against a rate-limited upstream (bench/lib/upstream.mjs, its own process: token bucket 200/s, bucket
 *    of 50, 429 + Retry-After): CALLS GETs submitted at once. Reported: the upstream's 429s, calls lost
 *    (answered 429 to the caller), time to finish, and the share of the upstream's limit used,
 *    ok / (bucket + rate × span), span from the first to the last admitted arrival.
 * Every measurement in a fresh process (and a fresh upstream), repetitions interleaved; medians with min–max.
 *
 *   REPS=3 CALLS=1200 npm run bench:outbound
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { machineFacts } from './lib/facts.mjs';
import { summarize } from './lib/stats.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const REPS = Number(process.env.REPS ?? 3);
const CALLS = Number(process.env.CALLS ?? 1200);
const RATE = 200;
const BURST = 50;
const OVERHEAD = { sluice: 20_000, pqueue: 20_000, bottleneck: 1_000, none: 20_000 }; // bottleneck: ms per call, fewer calls
const UPSTREAM = [
  'sluice',
  'sluice-nomargin',
  'sluice-exact',
  'bottleneck-bucket',
  'bottleneck-mintime',
  'bottleneck-refresh',
  'pqueue-1s',
  'pqueue-250ms',
];

const newest = (dir) =>
  readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .reduce((m, e) => Math.max(m, statSync(join(e.parentPath ?? e.path, e.name)).mtimeMs), 0);
const entry = join(root, 'packages/outbound/dist/index.js');
if (!existsSync(entry) || statSync(entry).mtimeMs < newest(join(root, 'src'))) {
  const r = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) throw new Error('npm run build failed');
}

function one(args) {
  const r = spawnSync(process.execPath, [join(here, 'outbound-one.mjs'), ...args], {
    encoding: 'utf8',
    timeout: 300_000,
    killSignal: 'SIGKILL',
  });
  const line = r.stdout
    ?.trim()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .pop();
  if (r.status !== 0 || !line)
    throw new Error(
      `outbound-one ${args.join(' ')}: exit ${r.status} ${r.signal ?? ''} ${(r.stderr ?? '').slice(-400)}`,
    );
  return JSON.parse(line);
}

async function upstreamRun(impl) {
  const server = spawn(process.execPath, [join(here, 'lib', 'upstream.mjs'), String(RATE), String(BURST)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise((resolve) => server.stdout.once('data', (d) => resolve(JSON.parse(String(d)).port)));
  const url = `http://127.0.0.1:${port}`;
  try {
    const client = await new Promise((resolve, reject) => {
      const c = spawn(process.execPath, [join(here, 'outbound-one.mjs'), 'upstream', impl, url, String(CALLS)], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let out = '';
      c.stdout.on('data', (d) => (out += d));
      c.on('exit', (code) =>
        code === 0 ? resolve(JSON.parse(out.trim().split('\n').pop())) : reject(new Error(`${impl}: exit ${code}`)),
      );
    });
    const stats = await (await fetch(`${url}/stats`)).json();
    const calls = stats.arrivals.slice(1); // the first is the client's warm-up request
    const ok = calls.filter(([, s]) => s === 200).map(([t]) => t);
    const spanMs = ok.length > 1 ? ok[ok.length - 1] - ok[0] : 0;
    return {
      ...client,
      upstream429: calls.filter(([, s]) => s === 429).length,
      upstreamOk: ok.length,
      share: ok.length / (BURST + (RATE * spanMs) / 1000),
      loadavg1: os.loadavg()[0],
    };
  } finally {
    server.kill();
  }
}

const results = [];
for (let rep = 1; rep <= REPS; rep++) {
  for (const [impl, calls] of Object.entries(OVERHEAD)) {
    const r = one(['overhead', impl, String(calls)]);
    results.push({ ...r, rep, loadavg1: os.loadavg()[0] });
    process.stderr.write(
      `rep ${rep} overhead ${impl}: ${r.sequentialNsPerCall.toFixed(0)} / ${r.concurrentNsPerCall.toFixed(0)} ns\n`,
    );
  }
  for (const impl of UPSTREAM) {
    const r = await upstreamRun(impl);
    results.push({ ...r, rep });
    process.stderr.write(
      `rep ${rep} upstream ${impl}: share ${(r.share * 100).toFixed(1)}% 429s ${r.upstream429} lost ${r.refused} in ${r.elapsedMs.toFixed(0)} ms\n`,
    );
  }
}

const fmt = (s, f) => `${f(s.median)} (${f(s.min)}–${f(s.max)})`;
const ns = (x) =>
  x >= 1e6 ? `${(x / 1e6).toFixed(2)} ms` : x >= 1e3 ? `${(x / 1e3).toFixed(2)} µs` : `${x.toFixed(0)} ns`;
const pct = (x) => `${(x * 100).toFixed(1)}%`;
const int = (x) => x.toFixed(0);
const sec = (x) => `${(x / 1000).toFixed(2)} s`;
const facts = machineFacts(root);
const loads = results.map((r) => r.loadavg1);
let md = `# Outbound benchmark\n\n${facts.date}, Node ${facts.node}, ${facts.nproc} vCPUs (${facts.cpu}), load average ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)} during the run; ${REPS} repetitions, medians (min–max).\n\n`;
md += `## Scheduling overhead per call (limit never binds, no-op job)\n\n| impl | sequential (await each) | concurrent (all at once) |\n|---|---|---|\n`;
for (const impl of Object.keys(OVERHEAD)) {
  const rs = results.filter((r) => r.mode === 'overhead' && r.impl === impl);
  md += `| ${impl} | ${fmt(summarize(rs.map((r) => r.sequentialNsPerCall)), ns)} | ${fmt(summarize(rs.map((r) => r.concurrentNsPerCall)), ns)} |\n`;
}
md += `\n## ${CALLS} calls at once against an upstream allowing ${RATE}/s with a bucket of ${BURST}\n\n| impl | share of the upstream's limit used | upstream 429s | calls lost (caller got 429) | time to finish |\n|---|---|---|---|---|\n`;
for (const impl of UPSTREAM) {
  const rs = results.filter((r) => r.mode === 'upstream' && r.impl === impl);
  md += `| ${impl} | ${fmt(summarize(rs.map((r) => r.share)), pct)} | ${fmt(summarize(rs.map((r) => r.upstream429)), int)} | ${fmt(summarize(rs.map((r) => r.refused)), int)} | ${fmt(summarize(rs.map((r) => r.elapsedMs)), sec)} |\n`;
}
mkdirSync(join(here, 'results'), { recursive: true });
const stamp = facts.date.replace(/[:.]/g, '-');
writeFileSync(join(here, 'results', `outbound-${stamp}.md`), md);
writeFileSync(
  join(here, 'results', `outbound-${stamp}.json`),
  JSON.stringify({ facts, config: { REPS, CALLS, RATE, BURST }, results }, null, 2),
);
console.log(md);
