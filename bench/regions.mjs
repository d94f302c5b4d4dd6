#!/usr/bin/env node
// One limit across three regions, side by side in one run, with 80 ms each way between regions (a
// DelayProxy per directed link, test/support/delay-proxy.ts) and a redis-server per region on this machine:
//   global   one Redis for the world (region eu's): exact, but us and ap pay a round trip between regions;
//   isolated a Redis per region, no exchange: local, but a key gets up to 3× its limit;
//   regions  sluice's 'regions' strategy: local decisions, per-region counts exchanged every exchangeMs;
//   upstash  @upstash/ratelimit's MultiRegionRatelimit fixed window on the same servers (a shim for its client).
// Each region's clients are a process of their own (bench/regions-worker.mjs). Two loads: 'keys' (10,000
// keys, limit 2 per 10 s, each region offering 1,000 decisions/s on random keys: 1.5× the limit per key in
// all) and 'hot' (one key, limit 300 per 1 s, each region offering 400/s: 4× the limit). Reported per
// mode: decision p50/p99 per region, the world's admitted total per key and window against the limit
// (and, hot, against the bound computed from the admissions as in test/redis/regions.test.ts), and the
// traffic between regions (the pushes as sent, and every byte the links carried both ways).
// Usage: node --conditions=sluice-source --import tsx bench/regions.mjs [exchangeMs=50]; env SCALE (time factor), MODES, LOADS,
// DIAG=1 (per-worker timelines and SLOWLOG, to tell where a stall comes from), PEER_TIMEOUT_MS.
// Writes bench/results/regions-<time>.{md,json}.
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { hostSpeedLine } from './lib/host-speed.mjs';
import { World } from '../packages/testing/src/regions-kit.ts';

const EXCHANGE_MS = Number(process.argv[2] ?? 50);
/** SCALE=0.1 runs every load for a tenth of its time (a check that the bench runs, not a figure). */
const SCALE = Number(process.env.SCALE ?? 1);
const DELAY_MS = 80;
const NAMES = ['eu', 'us', 'ap'];
const LOADS = {
  keys: { keys: 10_000, limit: 2, windowMs: 10_000, ratePerSec: 1000, durationMs: 20_000 },
  hot: { keys: 1, limit: 300, windowMs: 1000, ratePerSec: 400, durationMs: 5000 },
};
const MODES = (process.env.MODES ?? 'global,isolated,regions,upstash').split(',');
for (const l of Object.values(LOADS)) l.durationMs *= SCALE;

const load0 = loadavg()[0];
const speed = hostSpeedLine();
const world = new World(NAMES, DELAY_MS);
await world.start();

async function run(mode, loadName) {
  const load = LOADS[loadName];
  const prefix = `bench-regions:${mode}:${loadName}:${Date.now()}`;
  for (const p of world.links.values()) p.maxDelayMs = 0;
  const workers = NAMES.map((name, region) => {
    const peerPorts = Object.fromEntries(
      NAMES.filter((n) => n !== name).map((n) => [n, world.links.get(`${name}>${n}`).port]),
    );
    const config = {
      mode,
      region,
      names: NAMES,
      homePort: world.servers[region].port,
      peerPorts,
      prefix,
      exchangeMs: EXCHANGE_MS,
      ...load,
    };
    return fork(new URL('./regions-worker.mjs', import.meta.url), [JSON.stringify(config)], {
      execArgv: ['--import', 'tsx', ...(process.env.PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.PROF}`] : [])],
    });
  });
  // A worker that dies before it answers fails the run rather than hang it.
  const died = Promise.all(
    workers.map((w, i) =>
      once(w, 'exit').then(
        ([code]) =>
          code !== 0 && Promise.reject(new Error(`${mode} ${loadName}: worker ${NAMES[i]} exited with ${code}`)),
      ),
    ),
  );
  died.catch(() => {});
  await Promise.race([Promise.all(workers.map((w) => once(w, 'message'))), died]);
  if (process.env.DIAG) {
    for (const n of NAMES) {
      await world.home(n).config('SET', 'slowlog-log-slower-than', '2000');
      await world.home(n).slowlog('RESET');
    }
  }
  const bytes0 = world.bytesBetweenRegions();
  const results = workers.map((w) => once(w, 'message').then(([m]) => m));
  for (const w of workers) w.send('go');
  const rs = await Promise.race([Promise.all(results), died.then(() => Promise.all(results))]);
  const linkBytes = world.bytesBetweenRegions() - bytes0;
  if (process.env.DIAG) {
    // Each worker's timeline, and what each home Redis logged as slow (SLOWLOG: calls over 10 ms).
    for (const [i, r] of rs.entries())
      process.stderr.write(
        `${mode} ${NAMES[i]} timeline (per 250 ms: answered, slowest ms, loop max ms, pushes, failed, counts): ${r.timeline.map((s) => `${s.answered}/${s.slowest.toFixed(0)}/${s.loopMax.toFixed(0)}/${s.messages ?? ''}/${s.failed ?? ''}/${s.entries ?? ''}`).join(' ')}\n`,
      );
    for (let i = 0; i < world.servers.length; i++) {
      const c = world.home(NAMES[i]);
      const log = await c.slowlog('GET', 20);
      await c.slowlog('RESET');
      process.stderr.write(
        `${mode} ${NAMES[i]} slowlog: ${log.map(([, at, us, cmd]) => `${us}us ${String(cmd[0])} keys ${String(cmd[2])}`).join('; ')}\n`,
      );
    }
  }
  // The world's admitted total per key and window.
  const totals = new Map();
  for (const r of rs)
    for (const [k, ws] of r.counts)
      for (const [w, n] of ws) totals.set(`${k} ${w}`, (totals.get(`${k} ${w}`) ?? 0) + n);
  const t = [...totals.values()];
  const over = t.filter((n) => n > load.limit);
  const seconds = load.durationMs / 1000;
  const row = {
    mode,
    load: loadName,
    regions: NAMES.map((n, i) => ({
      region: n,
      p50: rs[i].p50,
      p99: rs[i].p99,
      decided: rs[i].decided,
      fired: rs[i].fired,
      cpuMsPerK: (rs[i].cpuMs / rs[i].decided) * 1000,
      loopP99Ms: rs[i].loopP99Ms,
    })),
    keyWindows: t.length,
    maxTotal: Math.max(...t),
    overKeyWindows: over.length,
    excessPct: (100 * over.reduce((a, n) => a + n - load.limit, 0)) / (load.limit * t.length),
    linkBytesPerSec: linkBytes / seconds,
    pushes: rs[0].stats ? rs.reduce((a, r) => a + r.stats.messages, 0) / seconds : undefined,
    failedPushes: rs[0].stats ? rs.reduce((a, r) => a + r.stats.failedMessages, 0) / seconds : undefined,
    pushBytesPerSec: rs[0].stats ? rs.reduce((a, r) => a + r.stats.bytes, 0) / seconds : undefined,
    pushEntriesPerSec: rs[0].stats ? rs.reduce((a, r) => a + r.stats.entries, 0) / seconds : undefined,
  };
  if (loadName === 'hot') {
    // The bound from the admissions: limit + what the other regions admitted in the S before the last one.
    const gap = rs[0].stats ? Math.max(...rs.map((r) => r.stats.longestGapMs)) : 0;
    const s = gap + Math.max(...[...world.links.values()].map((p) => p.maxDelayMs)) + 5;
    const all = rs.flatMap((r, region) => r.times.map(([at, w]) => ({ at, w, region })));
    row.windows = [...new Set(all.map((a) => a.w))].sort().map((w) => {
      const inW = all.filter((a) => a.w === w);
      const last = inW.reduce((a, b) => (b.at > a.at ? b : a));
      return {
        total: inW.length,
        bound: load.limit + inW.filter((a) => a.region !== last.region && a.at > last.at - s).length,
      };
    });
    row.sMs = s;
  }
  return row;
}

const rows = [];
process.once('SIGTERM', () => world.stop().finally(() => process.exit(1)));
try {
  for (const loadName of (process.env.LOADS ?? 'keys,hot').split(','))
    for (const mode of MODES) {
      process.stderr.write(`${loadName} ${mode}...\n`);
      rows.push(await run(mode, loadName));
    }
} finally {
  await world.stop();
}

const f = (x, d = 1) => (x === undefined ? '—' : x.toFixed(d));
const lines = [
  `<!-- node --conditions=sluice-source --import tsx bench/regions.mjs ${EXCHANGE_MS}; ${new Date().toISOString()}; 3 redis-servers on this host, ${DELAY_MS} ms each way between regions (DelayProxy); exchangeMs ${EXCHANGE_MS}; one run; load average ${load0.toFixed(1)} at the start, ${loadavg()[0].toFixed(1)} at the end; ${speed} -->`,
  '',
  '| load | mode | p50 / p99 ms eu | us | ap | key-windows | max admitted / limit | key-windows over | excess % of limit | pushes/s (failed) | push bytes/s | counts/s | link bytes/s (both ways) |',
  '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ...rows.map(
    (r) =>
      `| ${r.load} (limit ${LOADS[r.load].limit}) | ${r.mode} | ${r.regions.map((x) => `${f(x.p50)} / ${f(x.p99)}`).join(' | ')} | ${r.keyWindows} | ${r.maxTotal} / ${LOADS[r.load].limit} | ${r.overKeyWindows} | ${f(r.excessPct, 2)} | ${f(r.pushes, 0)}${r.failedPushes === undefined ? '' : ` (${f(r.failedPushes, 0)})`} | ${f(r.pushBytesPerSec, 0)} | ${f(r.pushEntriesPerSec, 0)} | ${f(r.linkBytesPerSec, 0)} |`,
  ),
  '',
  'Hot key, per window (admitted total / bound computed from the admissions, S = longest exchange gap + longest link delay + 5 ms):',
  '',
  ...rows
    .filter((r) => r.windows)
    .map(
      (r) =>
        `- ${r.mode}${r.sMs ? ` (S ${f(r.sMs, 0)} ms)` : ''}: ${r.windows.map((w) => `${w.total}/${w.bound}`).join(', ')}`,
    ),
];
const md = lines.join('\n');
console.log(md);
mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
writeFileSync(new URL(`./results/regions-${stamp}.md`, import.meta.url), `${md}\n`);
writeFileSync(
  new URL(`./results/regions-${stamp}.json`, import.meta.url),
  JSON.stringify({ exchangeMs: EXCHANGE_MS, delayMs: DELAY_MS, loads: LOADS, rows }, null, 1),
);
