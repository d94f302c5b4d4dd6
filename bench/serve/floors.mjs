// `node bench/serve.mjs --floors [reps=5] [seconds=8]` (or `--floors --quick`: 2 reps of 3 s): sluice serve
// beside the floors of its own transports, in one run. Each server is pinned to core 0 (taskset), the load
// generator and the service's own redis-server to core 1:
//   gRPC: bare node:http2 answering a fixed valid ShouldRateLimit answer (bare-grpc.mjs); sluice serve on
//         the memory store; sluice serve on Redis. h2load, 4 connections × 100 streams, one descriptor.
//   /json: bare node:http reading the body and answering a fixed 200 (bare-body.mjs); sluice serve on
//         memory; on Redis. wrk, 128 keep-alive connections, 1000 descriptors (json.lua).
//   the library: RedisStore's own bench (bench/redis-worker.mjs sluice-fixed-window) at the same decisions
//         in flight (400, 128) on the same redis-server, for its Redis CPU and decisions per script call.
// Every call is admitted (policies.yaml). Per server and rep: calls/s, the server's CPU µs per call
// (/proc/<pid>/stat over the measured run ÷ the calls it answered), on Redis the redis-server's CPU µs per
// call (INFO cpu) and the decisions each script call carried (decisions ÷ INFO commandstats' FCALL and
// EVALSHA calls), and for gRPC p50/p99 at a fixed moderate rate (h2load --rps, per-call times from
// --log-file). Reps go in ABBA order; medians with per-rep ranges; the load average beside each rep.
// Writes bench/results/serve-floors-<time>.{md,json}.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hostSpeedLine } from '../lib/host-speed.mjs';
import { ownRedis } from '../lib/own-redis.mjs';
import { processCpuSeconds } from '../lib/process-cpu.mjs';
import { cpuSeconds as redisCpu, parseInfo } from '../lib/redis-info.mjs';

const args = process.argv.slice(3);
const QUICK = args.includes('--quick');
const nums = args.filter((a) => !a.startsWith('--')).map(Number);
const REPS = nums[0] ?? (QUICK ? 2 : 5);
const SECONDS = nums[1] ?? (QUICK ? 3 : 8);
const WARMUP_S = QUICK ? 1 : 2;
/** The fixed moderate rate for latency, calls/s over the 4 connections: well under every server's capacity here, loaded or not. */
const FIXED_RPS = Number(process.env.FIXED_RPS ?? 2000);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const HERE = join(ROOT, 'bench/serve');
const PORT = { grpcFloor: 18290, jsonFloor: 18291, http: 18292, grpc: 18293, admin: 18294 };
/**
 * The service's Redis timeout here: the default 50 ms is passed by calls on a host at load 15 (Redis shares
 * its core with the load generator), and the failure policy's answers are no Redis work; the store errors
 * are counted and shown all the same.
 */
const REDIS_TIMEOUT_MS = Number(process.env.REDIS_TIMEOUT_MS ?? 1000);
const SERVER_CPU = '0';
const LOAD_CPU = '1';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

for (const bin of ['wrk', 'h2load', 'taskset', 'curl', 'redis-server', 'redis-cli']) {
  if (spawnSync('which', [bin]).status !== 0)
    throw new Error(`${bin} is missing (apt-get install wrk nghttp2-client util-linux curl redis-server)`);
}
if (os.cpus().length < 2)
  throw new Error('the floors bench pins the server and the load to two different cores: it needs 2');
spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });

const tmp = mkdtempSync(join(os.tmpdir(), 'sluice-bench-floors-'));
const live = new Set();
const redis = await ownRedis();
const redisPort = redis.ports[0];
const redisPid = Number(
  spawnSync('redis-cli', ['-p', String(redisPort), 'INFO', 'server'], { encoding: 'utf8' }).stdout.match(
    /process_id:(\d+)/,
  )?.[1],
);
spawnSync('taskset', ['-pc', LOAD_CPU, String(redisPid)], { stdio: 'ignore' });
process.on('exit', () => {
  for (const c of live)
    try {
      c.kill('SIGKILL');
    } catch {}
  redis.stop();
  rmSync(tmp, { recursive: true, force: true });
});
process.on('SIGINT', () => process.exit(130));
const redisInfo = () =>
  parseInfo(spawnSync('redis-cli', ['-p', String(redisPort), 'INFO', 'all'], { encoding: 'utf8' }).stdout);
const scriptCalls = (s) => (s['cmd:fcall'] ?? 0) + (s['cmd:evalsha'] ?? 0) + (s['cmd:eval'] ?? 0);

const sluiceArgs = (store) => [
  join(ROOT, 'packages/serve/dist/cli/main.js'),
  'serve',
  '--config',
  join(HERE, 'policies.yaml'),
  '--port',
  String(PORT.http),
  '--grpc-port',
  String(PORT.grpc),
  '--admin-port',
  String(PORT.admin),
  '--log-level',
  'warn',
  '--watch',
  'false',
  ...(store === 'redis'
    ? ['--redis', `redis://127.0.0.1:${redisPort}`, '--redis-timeout-ms', String(REDIS_TIMEOUT_MS)]
    : []),
];
const SERVERS = {
  grpcFloor: {
    label: 'bare `node:http2`, fixed valid ShouldRateLimit answer (the gRPC floor)',
    args: () => [join(HERE, 'bare-grpc.mjs'), String(PORT.grpcFloor)],
    grpc: PORT.grpcFloor,
  },
  memory: {
    label: 'sluice serve, memory store',
    args: () => sluiceArgs('memory'),
    grpc: PORT.grpc,
    json: PORT.http,
    admin: true,
  },
  redis: {
    label: 'sluice serve, Redis store (its own redis-server on core 1)',
    args: () => sluiceArgs('redis'),
    grpc: PORT.grpc,
    json: PORT.http,
    admin: true,
    redis: true,
  },
  jsonFloor: {
    label: 'bare `node:http`, reading the body, fixed 200 (the /json floor)',
    args: () => [join(HERE, 'bare-body.mjs'), String(PORT.jsonFloor)],
    json: PORT.jsonFloor,
  },
  library: {
    label:
      'the library: RedisStore fixed window in one process (bench/redis-worker.mjs sluice-fixed-window, 100 k keys), on core 0',
    library: true,
    redis: true,
  },
};
/** The library's in-flight counts: the service's under h2load (4 × 100) and under wrk (128). */
const LIBRARY_INFLIGHT = { grpc: 400, json: 128 };

/**
 * library(), tried twice: the worker stops at a decision the store's failure policy answered (a Redis call
 * past its 1 s timeout, which a host at load 15 has seen); a rep without the figure is left out of the medians.
 */
function libraryOrNot(inflight) {
  for (let attempt = 1; ; attempt++) {
    try {
      return library(inflight);
    } catch (e) {
      process.stderr.write(
        `library at ${inflight} in flight, attempt ${attempt}: ${String(e.message).split('\n')[0].slice(0, 200)}\n`,
      );
      if (attempt === 2) return { inflight, cps: NaN, cpuUs: NaN, redisCpuUs: NaN, perScriptCall: NaN };
    }
  }
}

/** The library's figures at `inflight` decisions in flight, against the same redis-server, pinned like a server. */
function library(inflight) {
  redis.flush();
  const r = spawnSync(
    'taskset',
    [
      '-c',
      SERVER_CPU,
      process.execPath,
      '--import',
      'tsx',
      join(ROOT, 'bench/redis-worker.mjs'),
      'sluice-fixed-window',
      String(inflight),
      String(WARMUP_S * 1000),
      String(SECONDS * 1000),
    ],
    {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, REDIS_PORT: String(redisPort) },
      timeout: (SECONDS + WARMUP_S + 60) * 1000,
    },
  );
  if (r.status !== 0) throw new Error(`redis-worker failed: ${r.stderr}`);
  const j = JSON.parse(r.stdout.trim().split('\n').at(-1));
  return {
    inflight,
    cps: j.decisionsPerSec,
    cpuUs: j.nodeCpuUsPerDecision,
    redisCpuUs: j.redisCpuUsPerDecision,
    perScriptCall: 1 / j.callsPerDecision,
  };
}

const PROBE = '{"domain":"bench","descriptors":[{"entries":[{"key":"remote_address","value":"probe"}]}]}';
async function start(name) {
  const s = SERVERS[name];
  const child = spawn('taskset', ['-c', SERVER_CPU, process.execPath, ...s.args()], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  live.add(child);
  child.on('exit', () => live.delete(child));
  const url = s.json !== undefined ? `http://127.0.0.1:${s.json}/json` : undefined;
  for (let i = 0; i < 100; i++) {
    const ok =
      url !== undefined
        ? spawnSync(
            'curl',
            ['-s', '--max-time', '1', '-o', '/dev/null', '-w', '%{http_code}', '-XPOST', '-d', PROBE, url],
            { encoding: 'utf8' },
          ).stdout === '200'
        : spawnSync(
            'curl',
            [
              '-s',
              '--max-time',
              '1',
              '--http2-prior-knowledge',
              '-o',
              '/dev/null',
              '-w',
              '%{http_code}',
              '-XPOST',
              '-H',
              'content-type: application/grpc',
              '--data-binary',
              `@${frameFile()}`,
              `http://127.0.0.1:${s.grpc}/x`,
            ],
            { encoding: 'utf8' },
          ).stdout === '200';
    if (ok) return child;
    await sleep(100);
  }
  throw new Error(`${name} did not come up`);
}
async function stop(child) {
  if (child.exitCode !== null) return;
  const done = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await Promise.race([done, sleep(5000)]);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

/** One ShouldRateLimit call as gRPC frames it: RateLimitRequest {domain "bench", descriptors [{entries [{remote_address, 10.0.0.1}]}]}. */
let frame;
function frameFile() {
  if (frame !== undefined) return frame;
  const field = (n, bytes) => Buffer.concat([Buffer.from([(n << 3) | 2, bytes.length]), bytes]);
  const entry = Buffer.concat([field(1, Buffer.from('remote_address')), field(2, Buffer.from('10.0.0.1'))]);
  const message = Buffer.concat([field(1, Buffer.from('bench')), field(2, field(1, entry))]);
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(message.length, 1);
  frame = join(tmp, 'grpc-call.bin');
  writeFileSync(frame, Buffer.concat([prefix, message]));
  return frame;
}

const H2LOAD = (port, extra) => [
  '-c',
  LOAD_CPU,
  'h2load',
  '-t1',
  '-c4',
  '-m100',
  ...extra,
  '-d',
  frameFile(),
  '-H',
  'content-type: application/grpc',
  '-H',
  'te: trailers',
  `http://127.0.0.1:${port}/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit`,
];
const shown = (argv) =>
  argv
    .map((a) => (a === frameFile() ? '<one call>' : a.includes(' ') ? `'${a}'` : a))
    .join(' ')
    .replaceAll(ROOT, '');

function h2load(argv, seconds) {
  const r = spawnSync('taskset', argv, { encoding: 'utf8', timeout: (seconds + 30) * 1000 });
  if (r.status !== 0) throw new Error(`h2load failed: ${r.stderr}${r.stdout}`);
  const done = /requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored/.exec(
    r.stdout,
  );
  return { succeeded: Number(done?.[2] ?? 0), failed: Number(done?.[3] ?? 0) + Number(done?.[4] ?? 0), out: r.stdout };
}
function wrk(port, seconds) {
  const argv = [
    '-c',
    LOAD_CPU,
    'wrk',
    '-t1',
    '-c128',
    `-d${seconds}s`,
    '--latency',
    '-s',
    join(HERE, 'json.lua'),
    `http://127.0.0.1:${port}/json`,
  ];
  const r = spawnSync('taskset', argv, { encoding: 'utf8', timeout: (seconds + 30) * 1000 });
  if (r.status !== 0) throw new Error(`wrk failed: ${r.stderr}${r.stdout}`);
  const out = r.stdout;
  return {
    cmd: shown(argv.slice(2)),
    total: Number(/(\d+) requests in/.exec(out)?.[1] ?? 0),
    non2xx: Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0),
    errors: /Socket errors:.*/.exec(out)?.[0] ?? '',
  };
}

/** Runs `load` while taking the server's (and on Redis, the redis-server's) CPU and Redis's script calls. */
function measured(pid, onRedis, load) {
  const r0 = onRedis ? redisInfo() : undefined;
  const c0 = processCpuSeconds(pid);
  const t0 = performance.now();
  const out = load();
  const wall = (performance.now() - t0) / 1000;
  const cpu = processCpuSeconds(pid) - c0;
  const calls = out.calls;
  const row = {
    ...out,
    wall,
    cps: calls / wall,
    cpuUs: (cpu / calls) * 1e6,
    serverCpuPct: (cpu / wall) * 100,
    load: os.loadavg()[0],
  };
  if (onRedis) {
    const r1 = redisInfo();
    row.redisCpuUs = ((redisCpu(r1) - redisCpu(r0)) / calls) * 1e6;
    row.scriptCalls = scriptCalls(r1) - scriptCalls(r0);
    row.perScriptCall = calls / row.scriptCalls;
  }
  return row;
}

/** A rule counter from sluice serve's /metrics: every call decided and admitted, checked. */
function ruleCounter(name) {
  const text = spawnSync('curl', ['-s', '--max-time', '5', `http://127.0.0.1:${PORT.admin}/metrics`], {
    encoding: 'utf8',
  }).stdout;
  return Number(new RegExp(`^${name}\\{[^}]*rule="bench.remote_address"[^}]*\\} (\\d+)`, 'm').exec(text)?.[1] ?? NaN);
}
const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

function grpcRuns(name, pid) {
  const s = SERVERS[name];
  h2load(H2LOAD(s.grpc, [`-D${WARMUP_S}`]), WARMUP_S);
  const hits0 = s.admin ? ruleCounter('sluice_rule_hits_total') : 0;
  const over0 = s.admin ? ruleCounter('sluice_rule_over_limit_total') : 0;
  const errors0 = s.admin ? ruleCounter('sluice_rule_store_errors_total') : 0;
  const capacityArgs = H2LOAD(s.grpc, [`-D${SECONDS}`]);
  const cap = measured(pid, s.redis, () => {
    const h = h2load(capacityArgs, SECONDS);
    return { calls: h.succeeded, failed: h.failed };
  });
  cap.cmd = shown(capacityArgs.slice(2));
  if (s.admin) {
    cap.decided = ruleCounter('sluice_rule_hits_total') - hits0;
    cap.over = ruleCounter('sluice_rule_over_limit_total') - over0;
    // Decisions the failure policy answered (a Redis call past --redis-timeout-ms): not Redis's work.
    cap.storeErrors = ruleCounter('sluice_rule_store_errors_total') - errors0;
  }
  // Fixed moderate rate: per-call times from h2load's log (microseconds until the end of the response).
  const log = join(tmp, `lat-${name}.tsv`);
  const rateArgs = H2LOAD(s.grpc, [`-D${SECONDS}`, `--rps=${FIXED_RPS / 4}`, `--log-file=${log}`]);
  const fixed = measured(pid, s.redis, () => {
    const h = h2load(rateArgs, SECONDS);
    return { calls: h.succeeded, failed: h.failed };
  });
  const lat = readFileSync(log, 'utf8')
    .trim()
    .split('\n')
    .map((l) => l.split('\t'))
    .filter((c) => c[1] === '200')
    .map((c) => Number(c[2]) / 1000)
    .sort((a, b) => a - b);
  fixed.p50Ms = quantile(lat, 0.5);
  fixed.p99Ms = quantile(lat, 0.99);
  fixed.cmd = shown(rateArgs.slice(2)).replace(/--log-file=\S+/, '--log-file=<times>');
  return { cap, fixed };
}
function jsonRun(name, pid) {
  const s = SERVERS[name];
  wrk(s.json, WARMUP_S);
  const errors0 = s.admin ? ruleCounter('sluice_rule_store_errors_total') : 0;
  const row = measured(pid, s.redis, () => {
    const w = wrk(s.json, SECONDS);
    return { calls: w.total, non2xx: w.non2xx, errors: w.errors, cmd: w.cmd };
  });
  if (s.admin) row.storeErrors = ruleCounter('sluice_rule_store_errors_total') - errors0;
  return row;
}

const started = new Date().toISOString();
const results = { grpcFloor: [], memory: [], redis: [], jsonFloor: [], library: [] };
const ORDER = ['grpcFloor', 'memory', 'redis', 'jsonFloor', 'library'];
for (let rep = 1; rep <= REPS; rep++) {
  for (const name of rep % 2 === 1 ? ORDER : [...ORDER].reverse()) {
    if (name === 'library') {
      const r = {
        load: os.loadavg()[0],
        grpc: libraryOrNot(LIBRARY_INFLIGHT.grpc),
        json: libraryOrNot(LIBRARY_INFLIGHT.json),
      };
      results.library.push(r);
      process.stderr.write(
        `rep ${rep}/${REPS} library: ${['grpc', 'json'].map((w) => `at ${r[w].inflight} in flight ${Math.round(r[w].cps)}/s, Node ${r[w].cpuUs.toFixed(1)} µs, Redis ${r[w].redisCpuUs.toFixed(1)} µs per decision, ${r[w].perScriptCall.toFixed(1)} per call`).join('; ')}; load ${r.load.toFixed(2)}\n`,
      );
      continue;
    }
    if (SERVERS[name].redis) redis.flush();
    const child = await start(name);
    if (SERVERS[name].redis) spawnSync('taskset', ['-pc', LOAD_CPU, String(redisPid)], { stdio: 'ignore' });
    const r = { load: os.loadavg()[0] };
    if (SERVERS[name].grpc !== undefined) Object.assign(r, grpcRuns(name, child.pid));
    if (SERVERS[name].json !== undefined) r.json = jsonRun(name, child.pid);
    await stop(child);
    results[name].push(r);
    const f = (x, d = 1) => (x === undefined || Number.isNaN(x) ? '–' : x.toFixed(d));
    process.stderr.write(
      `rep ${rep}/${REPS} ${name}:` +
        (r.cap
          ? ` gRPC ${Math.round(r.cap.cps)} calls/s ${f(r.cap.cpuUs)} µs/call${r.cap.redisCpuUs !== undefined ? ` (+${f(r.cap.redisCpuUs)} Redis, ${f(r.cap.perScriptCall)}/script call)` : ''}${r.cap.failed ? ` ${r.cap.failed} FAILED` : ''}${r.cap.over ? ` ${r.cap.over} OVER` : ''}; at ${FIXED_RPS}/s p50 ${f(r.fixed.p50Ms, 2)} p99 ${f(r.fixed.p99Ms, 2)} ms;`
          : '') +
        (r.cap?.storeErrors ? ` [${r.cap.storeErrors} gRPC store errors]` : '') +
        (r.json?.storeErrors ? ` [${r.json.storeErrors} /json store errors]` : '') +
        (r.json
          ? ` /json ${Math.round(r.json.cps)} calls/s ${f(r.json.cpuUs)} µs/call${r.json.redisCpuUs !== undefined ? ` (+${f(r.json.redisCpuUs)} Redis, ${f(r.json.perScriptCall)}/script call)` : ''}${r.json.non2xx ? ` ${r.json.non2xx} non-2xx` : ''}`
          : '') +
        `; load ${r.load.toFixed(2)}\n`,
    );
  }
}

const med = (xs) => {
  const s = xs.filter((x) => x !== undefined && !Number.isNaN(x)).sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const finite = (xs) => xs.filter((x) => Number.isFinite(x));
const rng = (xs, d = 1) => `${Math.min(...finite(xs)).toFixed(d)}–${Math.max(...finite(xs)).toFixed(d)}`;
const k = (x) => `${(x / 1000).toFixed(1)} k`;
/** Calls per CPU-second of the server: what one whole core would answer. */
const perCore = (r) => 1e6 / r.cpuUs;
/** Per-rep ratios of `a` to `b` (same rep, same order position), median and range. */
function ratio(a, b, of) {
  const xs = a.map((r, i) => of(r) / of(b[i]));
  return `${med(xs).toFixed(2)}× (${rng(xs, 2)})`;
}
const pick = (name, part) => results[name].map((r) => r[part]);
const gF = pick('grpcFloor', 'cap');
const gM = pick('memory', 'cap');
const gR = pick('redis', 'cap');
const jF = pick('jsonFloor', 'json');
const jM = pick('memory', 'json');
const jR = pick('redis', 'json');
const lat = { floor: pick('grpcFloor', 'fixed'), memory: pick('memory', 'fixed'), redis: pick('redis', 'fixed') };
const lib = { grpc: pick('library', 'grpc'), json: pick('library', 'json') };
const loads = Object.values(results).flatMap((rs) => rs.map((r) => r.load));

const cell = (rs) =>
  `${k(med(rs.map((r) => r.cps)))} (${k(Math.min(...finite(rs.map((r) => r.cps))))}–${k(Math.max(...finite(rs.map((r) => r.cps))))})`;
const cpuCell = (rs) => `${med(rs.map((r) => r.cpuUs)).toFixed(1)} (${rng(rs.map((r) => r.cpuUs))})`;
const redisCell = (rs) =>
  rs[0].redisCpuUs === undefined
    ? '–'
    : `${med(rs.map((r) => r.redisCpuUs)).toFixed(1)} (${rng(rs.map((r) => r.redisCpuUs))})`;
const batchCell = (rs) =>
  rs[0].perScriptCall === undefined
    ? '–'
    : `${med(rs.map((r) => r.perScriptCall)).toFixed(1)} (${rng(rs.map((r) => r.perScriptCall))})`;

let md = `<!-- bench/serve.mjs --floors at ${started}: ${os.cpus().length} cores (${os.cpus()[0].model}), Node ${process.version}, ${REPS} reps × ${SECONDS} s after a ${WARMUP_S} s warm-up, fresh server per rep, ABBA order; server on core ${SERVER_CPU}, load generator and redis-server on core ${LOAD_CPU}; 1-minute load average ${rng(loads, 2)} (median ${med(loads).toFixed(2)}); ${hostSpeedLine()} -->\n\n`;
md +=
  "| | calls/s, median (range) | server CPU µs per call | calls per server CPU-second ÷ the floor's | Redis CPU µs per call | decisions per Redis script call |\n|---|---|---|---|---|---|\n";
md += `| gRPC, ${SERVERS.grpcFloor.label} | ${cell(gF)} | ${cpuCell(gF)} | – | – | – |\n`;
md += `| gRPC, ${SERVERS.memory.label} | ${cell(gM)} | ${cpuCell(gM)} | **${ratio(gM, gF, perCore)}** | – | – |\n`;
md += `| gRPC, ${SERVERS.redis.label} | ${cell(gR)} | ${cpuCell(gR)} | **${ratio(gR, gF, perCore)}**; CPU per call ${ratio(gR, gM, (r) => r.cpuUs)} its memory path's | ${redisCell(gR)} | ${batchCell(gR)} |\n`;
md += `| /json, ${SERVERS.jsonFloor.label} | ${cell(jF)} | ${cpuCell(jF)} | – | – | – |\n`;
md += `| /json, ${SERVERS.memory.label} | ${cell(jM)} | ${cpuCell(jM)} | **${ratio(jM, jF, perCore)}** | – | – |\n`;
md += `| /json, ${SERVERS.redis.label} | ${cell(jR)} | ${cpuCell(jR)} | **${ratio(jR, jF, perCore)}**; CPU per call ${ratio(jR, jM, (r) => r.cpuUs)} its memory path's | ${redisCell(jR)} | ${batchCell(jR)} |\n`;
md += `| the library, RedisStore in one process, ${LIBRARY_INFLIGHT.grpc} decisions in flight (as the gRPC rows) | ${cell(lib.grpc)} decisions/s | ${cpuCell(lib.grpc)} | – | ${redisCell(lib.grpc)}; the service's gRPC Redis CPU per call is **${ratio(gR, lib.grpc, (r) => r.redisCpuUs)}** this | ${batchCell(lib.grpc)} |\n`;
md += `| the library, RedisStore in one process, ${LIBRARY_INFLIGHT.json} decisions in flight (as the /json rows) | ${cell(lib.json)} decisions/s | ${cpuCell(lib.json)} | – | ${redisCell(lib.json)}; the service's /json Redis CPU per call is **${ratio(jR, lib.json, (r) => r.redisCpuUs)}** this | ${batchCell(lib.json)} |\n`;
const latCell = (rs) => `${med(rs.map((r) => r.p50Ms)).toFixed(2)} / ${med(rs.map((r) => r.p99Ms)).toFixed(2)} ms`;
md += `| gRPC latency at a fixed ${k(FIXED_RPS)} calls/s, p50 / p99 | floor ${latCell(lat.floor)}; memory ${latCell(lat.memory)} (p99 ${ratio(lat.memory, lat.floor, (r) => r.p99Ms)} the floor's); Redis ${latCell(lat.redis)} (p99 ${ratio(lat.redis, lat.floor, (r) => r.p99Ms)}) | | | | |\n\n`;
md += `- Ratios are per rep (each server against the floor measured in the same rep), then the median and range of those.\n`;
md += `- Throughput ratios: gRPC memory ÷ floor ${ratio(gM, gF, (r) => r.cps)}, Redis ÷ floor ${ratio(gR, gF, (r) => r.cps)}; /json memory ÷ floor ${ratio(jM, jF, (r) => r.cps)}, Redis ÷ floor ${ratio(jR, jF, (r) => r.cps)}.\n`;
md += `- Checked: ${[...gM, ...gR]
  .map((r) => `${r.decided} decided of ${r.calls}, ${r.over} over, ${r.failed} failed`)
  .slice(0, 4)
  .join(
    '; ',
  )}${gM.length > 2 ? ' …' : ''}; /json non-2xx ${[...jM, ...jR, ...jF].reduce((a, r) => a + r.non2xx, 0)}.\n`;
md += `- Decisions answered by the failure policy (a Redis call past \`--redis-timeout-ms ${REDIS_TIMEOUT_MS}\`), per rep: gRPC ${gR.map((r) => r.storeErrors).join(', ')}; /json ${jR.map((r) => r.storeErrors).join(', ')} (Redis's CPU per call and decisions per script call count only what reached Redis when these are 0).\n`;
md += `- Commands: gRPC capacity \`${gF[0].cmd}\`; fixed rate \`${lat.floor[0].cmd}\`; /json \`${jF[0].cmd}\`; the server under \`taskset -c ${SERVER_CPU}\`.\n`;
mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
const stamp = started.replaceAll(':', '-').replace(/\.\d+Z$/, 'Z');
writeFileSync(join(ROOT, `bench/results/serve-floors-${stamp}.md`), md);
writeFileSync(
  join(ROOT, `bench/results/serve-floors-${stamp}.json`),
  JSON.stringify({ started, reps: REPS, seconds: SECONDS, fixedRps: FIXED_RPS, results }, null, 1),
);
process.stdout.write(md);
process.exit(0);
