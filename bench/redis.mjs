#!/usr/bin/env node
// Redis benchmark, side by side in one run against the same private Redis: sluice RedisStore (every
// algorithm, several policies on one key, and the strategies) beside Envoy ratelimit's counter (pipelined
// `INCRBY key 1` + `EXPIRE key 60`, the floor a gateway limiter sets) and rate-limiter-flexible's
// RateLimiterRedis (fixed window), all on ioredis, at 1 and 256 calls in flight on 100,000 keys, with a
// PING round trip at 1 in flight as the latency floor, and `redis-benchmark` running a plain token-bucket
// EVALSHA script (bench/lib/plain-token-bucket.lua) on random keys at -P 16 (standalone only).
// Each row reports decisions/s, Redis CPU per decision (the `INFO cpu` used_cpu_sys + used_cpu_user delta,
// summed over the masters, divided by decisions) and Node CPU per decision (process.cpuUsage).
//
// It starts its own redis-server on a spare port (--save "" --appendonly no), or with CLUSTER=1 its own
// Cluster of 3 masters without replicas (bench/lib/own-redis.mjs), and FLUSHALLs only those before each
// run. Every measurement is a fresh process (bench/redis-worker.mjs); the cases are interleaved, repeated
// REPS times, and medians are quoted with min–max.
//
// Usage: [CLUSTER=1] [CASES=envoy,sluice-gcra,...] [BASE=<another checkout>] [CLIENTS=ioredis,iovalkey,glide] node bench/redis.mjs [reps=3] [measureMs=4000] [warmupMs=1000]
// CLIENTS measures instead PING and sluice's token bucket through each client named (ioredis, iovalkey,
// glide: @valkey/valkey-glide), interleaved, at 1 and 256 in flight, into bench/results/redis-clients-<time>.
// CASES picks rows by impl (bench/redis-worker.mjs names them). BASE adds sluice rows for that checkout's
// src/ (e.g. a worktree of an older commit), measured by this checkout's worker and interleaved with the
// others, so two versions are compared under the same load.
// Prints a Markdown table and writes it, with every run's figures, to bench/results/redis[-cluster]-<time>.{md,json}.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { hostSpeedLine } from './lib/host-speed.mjs';
import { ownCluster, ownRedis } from './lib/own-redis.mjs';
import { commands, cpuSeconds, parseInfo } from './lib/redis-info.mjs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [REPS = 3, MEASURE = 4000, WARMUP = 1000] = process.argv.slice(2).map(Number);
const BASE = process.env.BASE;
const CLUSTER = process.env.CLUSTER === '1';
const baseCommit =
  BASE === undefined
    ? undefined
    : execFileSync('git', ['-C', BASE, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
const ALGORITHMS = [
  'fixed-window',
  'sliding-window',
  'sliding-log',
  'token-bucket',
  'gcra',
  'leaky-bucket',
  'leaky-shaper',
];
const SLUICE = [...ALGORITHMS.map((a) => `sluice-${a}`), 'sluice-multi'];
const STRATEGIES = ['sluice-deny', 'sluice-local-sync', 'sluice-lease'];
const PICK = process.env.CASES?.split(',');
// BASE's rows: those of the sluice cases picked (token bucket, GCRA and fixed window by default).
const BASE_ROWS =
  BASE === undefined
    ? []
    : (PICK ?? ['sluice-token-bucket', 'sluice-gcra', 'sluice-fixed-window'])
        .filter((i) => SLUICE.includes(i) || STRATEGIES.includes(i))
        .map((i) => i.replace('sluice-', 'base-'));
const ALL = [
  ['ping', 1],
  ['envoy', 1],
  ['rlflex', 1],
  ...[...SLUICE, ...BASE_ROWS].map((i) => [i, 1]),
  ['envoy', 256],
  ['envoy-auto', 256],
  ['rlflex', 256],
  ...(CLUSTER ? [] : [['redis-benchmark', 800]]),
  ...[...SLUICE, ...STRATEGIES, ...BASE_ROWS].map((i) => [i, 256]),
];
const CLIENTS = process.env.CLIENTS?.split(',');
const CASES =
  CLIENTS !== undefined
    ? [1, 256].flatMap((inflight) =>
        CLIENTS.flatMap((c) => [...(inflight === 1 ? [['ping', 1, c]] : []), ['sluice-token-bucket', inflight, c]]),
      )
    : PICK === undefined
      ? ALL
      : ALL.filter(([impl]) => impl === 'ping' || PICK.includes(impl) || impl.startsWith('base-'));
const caseKey = (impl, inflight, client) => `${impl}@${inflight}${client === undefined ? '' : `@${client}`}`;
const NAMES = {
  ping: 'PING (ioredis), the round-trip floor',
  envoy: 'Envoy ratelimit: `INCRBY key 1` + `EXPIRE key 60` pipelined (fixed window, approximate)',
  'envoy-auto':
    "Envoy ratelimit with implicit pipelining (REDIS_PIPELINE_WINDOW): the same commands, a turn's in one write",
  rlflex: 'rate-limiter-flexible RateLimiterRedis (fixed window)',
  'redis-benchmark': 'redis-benchmark -c 50 -P 16, plain token-bucket EVALSHA, 100 k random keys',
  ...Object.fromEntries(ALGORITHMS.map((a) => [`sluice-${a}`, `sluice ${a}`])),
  'sluice-multi': 'sluice gcra 1000/h + fixed-window 100 k/day on one key',
  'sluice-deny': 'sluice denyCache, a flood of 1,000 denied keys',
  'sluice-local-sync': "sluice strategy 'local-sync', fixed-window 1 M/h on 1,000 keys",
  'sluice-lease': "sluice strategy 'lease', fixed-window 1 M/h on 1,000 keys",
};
for (const impl of [...SLUICE, ...STRATEGIES])
  NAMES[impl.replace('sluice-', 'base-')] = `${NAMES[impl].replace('sluice', `sluice at ${baseCommit},`)}`;

const redis = CLUSTER ? await ownCluster(3) : await ownRedis();
const port = redis.ports[0];
const cli = (...args) =>
  execFileSync('redis-cli', ['-p', String(port), ...args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  }).trim();
process.on('exit', () => redis.stop());
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(1));

/**
 * The redis-benchmark peer: a token bucket as a user would write it (HMGET, then HSET and PEXPIRE on an
 * admission; 1000 per hour, so every call admits and writes), 50 clients of 16 pipelined calls on 100,000
 * random keys, sized to run about as long as the other cases. Its rate is redis-benchmark's own figure.
 */
const PLAIN_TB = readFileSync(new URL('./lib/plain-token-bucket.lua', import.meta.url), 'utf8');
let plainRequests = 200_000;
function measureRedisBenchmark() {
  redis.flush();
  const sha = cli('SCRIPT', 'LOAD', PLAIN_TB);
  const run = (n) =>
    execFileSync(
      'redis-benchmark',
      [
        '-p',
        String(port),
        '-c',
        '50',
        '-P',
        '16',
        '-r',
        '100000',
        '-n',
        String(n),
        '--csv',
        'EVALSHA',
        sha,
        '1',
        'tb:__rand_int__',
        '1000',
        String(1000 / 3_600_000),
        '1',
      ],
      { encoding: 'utf8', timeout: 120_000 },
    );
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
    nodeCpuUsPerDecision: null,
    callsPerDecision: null,
  };
}

function measure(impl, inflight, client) {
  if (impl === 'redis-benchmark') return measureRedisBenchmark();
  redis.flush();
  const base = impl.startsWith('base-');
  const out = execFileSync(
    process.execPath,
    [
      '--import',
      'tsx',
      'bench/redis-worker.mjs',
      base ? impl.replace('base-', 'sluice-') : impl,
      String(inflight),
      String(WARMUP),
      String(MEASURE),
    ],
    {
      encoding: 'utf8',
      env: {
        ...process.env,
        ...(CLUSTER ? { CLUSTER_PORTS: redis.ports.join(',') } : { REDIS_PORT: String(port) }),
        REDIS_CLIENT: client ?? 'ioredis',
        ...(base ? { SLUICE_SRC: pathToFileURL(join(BASE, 'src')).href } : {}),
      },
      timeout: 60_000,
    },
  );
  return JSON.parse(out.trim().split('\n').pop());
}

const load0 = loadavg()[0];
const speed = hostSpeedLine();
const results = new Map();
for (let rep = 1; rep <= REPS; rep++) {
  for (const [impl, inflight, client] of CASES) {
    const r = measure(impl, inflight, client);
    const key = caseKey(impl, inflight, client);
    if (!results.has(key)) results.set(key, []);
    results.get(key).push(r);
    console.error(
      `rep ${rep} ${key}: ${Math.round(r.decisionsPerSec)}/s, median ${r.medianLatencyUs?.toFixed(1) ?? '-'} µs, ${r.commandsPerDecision.toFixed(2)} cmds, ${r.redisCpuUsPerDecision.toFixed(2)} µs Redis CPU`,
    );
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

const med = (rs, f) => median(rs.map(f));
const envoyCpu = (inflight) => {
  const rs = results.get(`envoy@${inflight}`);
  return rs && med(rs, (r) => r.redisCpuUsPerDecision);
};
const lines = [
  `<!-- ${CLUSTER ? 'CLUSTER=1 ' : ''}${CLIENTS === undefined ? '' : `CLIENTS=${CLIENTS.join(',')} `}${PICK === undefined ? '' : `CASES=${PICK.join(',')} `}${BASE === undefined ? '' : `BASE=<checkout at ${baseCommit}> `}node bench/redis.mjs ${REPS} ${MEASURE} ${WARMUP}; ${new Date().toISOString()}; redis ${version}${CLUSTER ? `, a Cluster of ${redis.ports.length} masters without replicas` : ', standalone'}; Node ${process.version}; reps=${REPS}, interleaved, fresh process each; load average ${load0.toFixed(1)} at the start, ${loadavg()[0].toFixed(1)} at the end; ${speed} -->`,
  '',
  "| client | in flight | decisions/s median (min – max) | median latency µs | × PING (same process) | Redis commands / decision | sluice calls / decision | Redis CPU µs / decision | × Envoy's, same run | decisions/s per Redis core | Node CPU µs / decision | redis-server CPU % | Node CPU % |",
  '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
];
for (const [impl, inflight, client] of CASES) {
  const rs = results.get(caseKey(impl, inflight, client));
  const one = inflight === 1 && impl !== 'ping';
  const cpu = med(rs, (r) => r.redisCpuUsPerDecision);
  const envoy = envoyCpu(inflight === 800 ? 256 : inflight);
  lines.push(
    `| ${NAMES[impl]}${client === undefined ? '' : `, through ${client}`} | ${inflight} | ${range(rs, (r) => r.decisionsPerSec, k)} | ${inflight === 1 ? med(rs, (r) => r.medianLatencyUs).toFixed(1) : '–'} | ${
      one
        ? range(
            rs,
            (r) => r.pingRatio,
            (x) => `${x.toFixed(2)}×`,
          )
        : '–'
    } | ${med(rs, (r) => r.commandsPerDecision).toFixed(2)} | ${rs[0].callsPerDecision == null ? '–' : med(rs, (r) => r.callsPerDecision).toFixed(3)} | ${cpu.toFixed(2)} | ${envoy === undefined || impl === 'envoy' ? '–' : `${(cpu / envoy).toFixed(2)}×`} | ${cpu < 0.01 ? 'no Redis work' : k(1e6 / cpu)} | ${rs[0].nodeCpuUsPerDecision == null ? '–' : med(rs, (r) => r.nodeCpuUsPerDecision).toFixed(2)} | ${med(rs, (r) => r.redisCpuPct).toFixed(0)} | ${rs[0].nodeCpuPct == null ? '–' : med(rs, (r) => r.nodeCpuPct).toFixed(0)} |`,
  );
}
lines.push(
  '',
  '"decisions/s per Redis core" is 10^6 ÷ Redis CPU µs per decision: what one fully busy redis-server (one core) serves at this mix.',
);
console.log(lines.join('\n'));
const stamp = `${CLUSTER ? 'cluster-' : ''}${new Date().toISOString().replace(/[:.]/g, '-')}`;
mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
const file = `${CLIENTS === undefined ? 'redis' : 'redis-clients'}-${stamp}`;
writeFileSync(new URL(`./results/${file}.md`, import.meta.url), `${lines.join('\n')}\n`);
writeFileSync(
  new URL(`./results/${file}.json`, import.meta.url),
  `${JSON.stringify(Object.fromEntries(results), null, 1)}\n`,
);
console.error(`wrote bench/results/${file}.{md,json}`);
redis.stop();
process.exit(0);
