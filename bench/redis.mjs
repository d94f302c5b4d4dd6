#!/usr/bin/env node
// Redis benchmark, side by side in one run against the same Redis: sluice RedisStore (token bucket and
// GCRA) vs rate-limiter-flexible RateLimiterRedis (fixed window), both on ioredis, at 1 and 256 calls
// in flight, plus a PING round trip at 1 in flight as the latency floor, and `redis-benchmark` running a
// plain token-bucket EVALSHA script (bench/lib/plain-token-bucket.lua) on random keys at -P 16, the peer the
// issue quotes for the reference machine (about 121 k/s with redis-server at 100 % CPU there), so that
// Redis CPU per decision can be read as a same-run ratio on a host of another speed.
//
// It starts its own redis-server on a spare port (--save "" --appendonly no) and FLUSHALLs only that one
// before each run. Every measurement is a fresh process (bench/redis-worker.mjs); the cases are
// interleaved, repeated REPS times, and medians are quoted with min–max.
//
// Usage: [BASE=<another checkout>] [CLIENTS=ioredis,iovalkey,glide] node bench/redis.mjs [reps=3] [measureMs=4000] [warmupMs=1000]
// BASE adds sluice rows for that checkout's src/ (e.g. a worktree of an older commit), measured by this
// checkout's worker and interleaved with the others, so two versions are compared under the same load.
// CLIENTS measures instead PING and sluice's token bucket through each client named (ioredis, iovalkey,
// glide: @valkey/valkey-glide), interleaved, at 1 and 256 in flight.
// Prints a Markdown table and writes it, with every run's figures, to bench/results/redis-<time>.{md,json}.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { hostSpeedLine } from './lib/host-speed.mjs';
import { commands, cpuSeconds, parseInfo } from './lib/redis-info.mjs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [REPS = 3, MEASURE = 4000, WARMUP = 1000] = process.argv.slice(2).map(Number);
const BASE = process.env.BASE;
const baseCommit = BASE === undefined ? undefined : execFileSync('git', ['-C', BASE, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
const CLIENTS = process.env.CLIENTS?.split(',');
const CASES = CLIENTS !== undefined ? [1, 256].flatMap((inflight) => CLIENTS.flatMap((c) => [...(inflight === 1 ? [[`ping`, 1, c]] : []), ['sluice-tb', inflight, c]])) : [
  ['ping', 1],
  ['rlflex', 1],
  ['sluice-tb', 1],
  ['sluice-gcra', 1],
  ...(BASE === undefined ? [] : [['base-tb', 1], ['base-gcra', 1]]),
  ['rlflex', 256],
  ['redis-benchmark', 800],
  ['sluice-tb', 256],
  ['sluice-gcra', 256],
  ...(BASE === undefined ? [] : [['base-tb', 256], ['base-gcra', 256]]),
];
const NAMES = {
  ping: 'PING (ioredis), the round-trip floor',
  rlflex: 'rate-limiter-flexible RateLimiterRedis (fixed window)',
  'redis-benchmark': 'redis-benchmark -c 50 -P 16, plain token-bucket EVALSHA, 100 k random keys',
  'sluice-tb': 'sluice RedisStore, token-bucket',
  'sluice-gcra': 'sluice RedisStore, gcra',
  'base-tb': `sluice at ${baseCommit}, token-bucket`,
  'base-gcra': `sluice at ${baseCommit}, gcra`,
};

const port = await new Promise((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const p = s.address().port;
    s.close(() => resolve(p));
  });
});
const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-redis-'));
const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
const cli = (...args) => execFileSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
let stopped = false;
const stop = () => {
  if (stopped) return;
  stopped = true;
  server.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
};
process.on('exit', stop);
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(1));
for (let i = 0; ; i++) {
  try {
    if (cli('PING') === 'PONG') break;
  } catch {}
  if (i > 100) throw new Error('redis-server did not start');
  await new Promise((r) => setTimeout(r, 50));
}

/**
 * The redis-benchmark peer: a token bucket as a user would write it (HMGET, then HSET and PEXPIRE on an
 * admission; 1000 per hour, so every call admits and writes), 50 clients of 16 pipelined calls on 100,000
 * random keys, sized to run about as long as the other cases. Its rate is redis-benchmark's own figure.
 */
const PLAIN_TB = readFileSync(new URL('./lib/plain-token-bucket.lua', import.meta.url), 'utf8');
let plainRequests = 200_000;
function measureRedisBenchmark() {
  cli('FLUSHALL');
  cli('CONFIG', 'RESETSTAT');
  const sha = cli('SCRIPT', 'LOAD', PLAIN_TB);
  const run = (n) => execFileSync('redis-benchmark', ['-p', String(port), '-c', '50', '-P', '16', '-r', '100000', '-n', String(n), '--csv',
    'EVALSHA', sha, '1', 'tb:__rand_int__', '1000', String(1000 / 3_600_000), '1'], { encoding: 'utf8', timeout: 120_000 });
  run(Math.round(plainRequests * (WARMUP / MEASURE))); // warm-up
  const i0 = parseInfo(cli('INFO', 'all'));
  const out = run(plainRequests);
  const i1 = parseInfo(cli('INFO', 'all'));
  const rps = Number(/^"EVALSHA[^"]*","([\d.]+)"/m.exec(out)[1]);
  const decisions = i1['cmd:evalsha'] - (i0['cmd:evalsha'] ?? 0);
  const runMs = (decisions / rps) * 1000; // redis-benchmark's own clock: its rate is requests over its run
  plainRequests = Math.max(50_000, Math.round((rps * MEASURE) / 1000)); // the next rep runs about MEASURE ms
  const cpuSec = cpuSeconds(i1) - cpuSeconds(i0);
  return {
    decisionsPerSec: rps,
    medianLatencyUs: null,
    commandsPerDecision: (commands(i1) - commands(i0)) / decisions, // EVALSHA and the commands inside it
    redisCpuUsPerDecision: (cpuSec * 1e6) / decisions,
    redisCpuPct: (cpuSec * 1000 * 100) / runMs,
    nodeCpuPct: null, // redis-benchmark is not Node
  };
}

function measure(impl, inflight, client = 'ioredis') {
  if (impl === 'redis-benchmark') return measureRedisBenchmark();
  cli('FLUSHALL');
  cli('CONFIG', 'RESETSTAT');
  const base = impl.startsWith('base-');
  const out = execFileSync(process.execPath, ['--import', 'tsx', 'bench/redis-worker.mjs', base ? impl.replace('base-', 'sluice-') : impl, String(inflight), String(WARMUP), String(MEASURE)], {
    encoding: 'utf8',
    env: { ...process.env, REDIS_PORT: String(port), REDIS_CLIENT: client, ...(base ? { SLUICE_SRC: pathToFileURL(join(BASE, 'src')).href } : {}) },
    timeout: 60_000,
  });
  return JSON.parse(out.trim().split('\n').pop());
}

const caseKey = (impl, inflight, client) => `${impl}@${inflight}${client === undefined ? '' : `:${client}`}`;
const nameOf = (impl, client) => (client === undefined ? NAMES[impl] : `${impl === 'ping' ? 'PING' : 'sluice RedisStore, token-bucket'} (${client === 'glide' ? 'valkey-glide' : client})`);
const load0 = loadavg()[0];
const speed = hostSpeedLine();
const results = new Map();
for (let rep = 1; rep <= REPS; rep++) {
  for (const [impl, inflight, client] of CASES) {
    const r = measure(impl, inflight, client);
    const key = caseKey(impl, inflight, client);
    if (!results.has(key)) results.set(key, []);
    results.get(key).push(r);
    console.error(`rep ${rep} ${key}: ${Math.round(r.decisionsPerSec)}/s, median ${r.medianLatencyUs?.toFixed(1) ?? '-'} µs, ${r.commandsPerDecision.toFixed(2)} cmds, ${r.redisCpuUsPerDecision.toFixed(2)} µs Redis CPU`);
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const k = (n) => (n >= 1e6 ? `${(n / 1e6).toFixed(2)} M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)} k` : n.toFixed(0));
const range = (rs, f, fmt) => {
  const xs = rs.map(f);
  return `${fmt(median(xs))} (${fmt(Math.min(...xs))} – ${fmt(Math.max(...xs))})`;
};
const version = cli('INFO', 'server').match(/redis_version:(\S+)/)[1];

const lines = [
  `<!-- ${BASE === undefined ? '' : `BASE=<checkout at ${baseCommit}> `}${CLIENTS === undefined ? '' : `CLIENTS=${CLIENTS.join(',')} `}node bench/redis.mjs ${REPS} ${MEASURE} ${WARMUP}; ${new Date().toISOString()}; redis ${version}; Node ${process.version}; reps=${REPS}, interleaved, fresh process each; load average ${load0.toFixed(1)} at the start, ${loadavg()[0].toFixed(1)} at the end; ${speed} -->`,
  '',
  '| client | in flight | decisions/s median (min – max) | median latency µs | PING µs, same process | × PING (same process) | Redis commands / decision | Redis CPU µs / decision | redis-server CPU % | Node CPU % |',
  '|---|---|---|---|---|---|---|---|---|---|',
];
for (const [impl, inflight, client] of CASES) {
  const rs = results.get(caseKey(impl, inflight, client));
  const lat = inflight === 1 ? median(rs.map((r) => r.medianLatencyUs)) : undefined;
  const ratio = inflight === 1 && impl !== 'ping' ? true : undefined;
  lines.push(
    `| ${nameOf(impl, client)} | ${inflight} | ${range(rs, (r) => r.decisionsPerSec, k)} | ${lat === undefined ? '–' : lat.toFixed(1)} | ${ratio === undefined ? '–' : median(rs.map((r) => r.sameProcessPingUs)).toFixed(1)} | ${ratio === undefined ? '–' : range(rs, (r) => r.pingRatio, (x) => `${x.toFixed(2)}×`)} | ${median(rs.map((r) => r.commandsPerDecision)).toFixed(2)} | ${median(rs.map((r) => r.redisCpuUsPerDecision)).toFixed(2)} | ${median(rs.map((r) => r.redisCpuPct)).toFixed(0)} | ${rs[0].nodeCpuPct === null ? '–' : median(rs.map((r) => r.nodeCpuPct)).toFixed(0)} |`,
  );
}
// Redis CPU per decision against the two peers whose figure the issue gives for its reference machine:
// the same-run ratio carries over to a host of another speed where an absolute figure does not.
const REFERENCE_US = { rlflex: 6.0, 'redis-benchmark': 1e6 / 121_000 }; // about 6 µs; 121 k/s at 100 % CPU
const cpuAt256 = (impl) => { const rs = results.get(`${impl}@${impl === 'redis-benchmark' ? 800 : 256}`); return rs && median(rs.map((r) => r.redisCpuUsPerDecision)); };
if (CLIENTS !== undefined) {
  const rate = (c) => median(results.get(caseKey('sluice-tb', 256, c)).map((r) => r.decisionsPerSec));
  lines.push('', `Decisions per second at 256 in flight, as a ratio to ${CLIENTS[0]}'s: ${CLIENTS.map((c) => `${c} ${(rate(c) / rate(CLIENTS[0])).toFixed(2)}×`).join(', ')}`);
} else {
lines.push('', 'Redis CPU per decision at 256 in flight as a same-run ratio to each peer, and what that ratio gives on the issue\'s reference machine:', '');
for (const impl of ['sluice-tb', 'sluice-gcra']) {
  for (const peer of ['rlflex', 'redis-benchmark']) {
    const mine = cpuAt256(impl), theirs = cpuAt256(peer);
    if (mine === undefined || theirs === undefined) continue;
    lines.push(`- ${NAMES[impl]}: ${mine.toFixed(2)} µs = ${(mine / theirs).toFixed(3)} × ${NAMES[peer]} (${theirs.toFixed(2)} µs); at that ratio to its ${REFERENCE_US[peer].toFixed(2)} µs there: **${((mine / theirs) * REFERENCE_US[peer]).toFixed(2)} µs**`);
  }
  const rate = (i) => median(results.get(`${i}@256`)?.map((r) => r.decisionsPerSec) ?? [NaN]);
  lines.push(`- ${NAMES[impl]}: ${(rate(impl) / rate('rlflex')).toFixed(2)} × rate-limiter-flexible's decisions per second at 256 in flight`);
}
}
console.log(lines.join('\n'));
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
const file = CLIENTS === undefined ? 'redis' : 'redis-clients';
writeFileSync(new URL(`./results/${file}-${stamp}.md`, import.meta.url), `${lines.join('\n')}\n`);
writeFileSync(new URL(`./results/${file}-${stamp}.json`, import.meta.url), `${JSON.stringify(Object.fromEntries(results), null, 1)}\n`);
console.error(`wrote bench/results/${file}-${stamp}.{md,json}`);
stop();
process.exit(0);
