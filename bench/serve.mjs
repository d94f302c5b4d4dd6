// `npm run bench:serve`: sluice serve's POST /json (memory store) against the bare node:http ceiling and
// nginx limit_req serving a static file, all with wrk on loopback in one run, then gRPC ShouldRateLimit
// with a multi-stream @grpc/grpc-js client. Every server is started, tracked and stopped here.
// Usage: node bench/serve.mjs [reps=3] [seconds=10]; node bench/serve.mjs --render <results.json> re-renders a run;
// node bench/serve.mjs --in-process [dist ...] times the /json JavaScript alone (see inProcess below);
// node bench/serve.mjs --pairs [pairs=12] [seconds=5] runs only the bare ceiling and /json, back to back in
// many short pairs, and reports the median of the per-pair ratios (see pairs below);
// node bench/serve.mjs --floors [reps=5] [seconds=8] | --floors --quick: gRPC and /json against bare node:http2
// and node:http, on memory and on Redis, pinned to cores (serve/floors.mjs);
// node bench/serve.mjs --json-gap [rounds=10] [seconds=3]: /json's layers, each priced against the floor in
// the same window (serve/json-gap.mjs).
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hostSpeedLine } from './lib/host-speed.mjs';
import { treeCpuSeconds as cpuSeconds } from './lib/process-cpu.mjs';

if (process.argv[2] === '--in-process') await inProcess(process.argv.slice(3));
// `--floors`: sluice serve beside the floors of its transports, pinned to cores (see serve/floors.mjs).
if (process.argv[2] === '--floors') await import('./serve/floors.mjs');
// `--json-gap`: where /json's distance from its floor goes (see serve/json-gap.mjs).
if (process.argv[2] === '--json-gap') await import('./serve/json-gap.mjs');

/**
 * `node bench/serve.mjs --in-process [dist ...]`: the JavaScript of one /json decision without the network
 * (body bytes -> text -> request -> decision -> answer text and its byte length) over the wrk script's 1000
 * bodies, for each build given (default ./dist; e.g. a copy of main's), in interleaved rounds of CPU time.
 * For A/B of hot-path changes where wrk on a shared machine is too noisy; it leaves out node:http itself.
 */
async function inProcess(dists) {
  const builds = dists.length > 0 ? dists : [fileURLToPath(new URL('../packages/serve/dist', import.meta.url))];
  const policies = fileURLToPath(new URL('serve/policies.yaml', import.meta.url));
  const runs = [];
  for (const dist of builds) {
    // A build of the package layout has the memory store in sluice's dist, an older one beside the server.
    const imp = (m) =>
      m === 'stores/memory.js' ? import(join(dist, m)).catch(() => import('sluice')) : import(join(dist, m));
    const [{ loadConfig }, { RuleSet }, { RateLimitService }, codec, { MemoryStore }] = await Promise.all(
      [
        'server/config/config.js',
        'server/config/rules.js',
        'server/service.js',
        'server/codecs/json-codec.js',
        'stores/memory.js',
      ].map(imp),
    );
    const store = new MemoryStore();
    const service = new RateLimitService(new RuleSet(loadConfig(policies), { store }), { store, localCache: false });
    const decode = codec.decodeRlsJsonFast
      ? (t) => codec.decodeRlsJsonFast(t) ?? codec.decodeRlsJson(JSON.parse(t))
      : (t) => codec.decodeRlsJson(JSON.parse(t));
    runs.push({
      dist,
      one: (body) => Buffer.byteLength(codec.renderRlsJson(service.shouldRateLimit(decode(body.toString())))),
      ns: [],
    });
  }
  const bodies = Array.from({ length: 1000 }, (_, n) =>
    Buffer.from(
      `{"domain":"bench","descriptors":[{"entries":[{"key":"remote_address","value":"10.0.${n % 250}.${n + 1}"}]}]}`,
    ),
  );
  let sink = 0;
  for (let round = 0; round < 30; round++) {
    for (const r of runs) {
      const t0 = process.cpuUsage();
      for (let i = 0; i < 100_000; i++) sink += r.one(bodies[i % 1000]);
      const t = process.cpuUsage(t0);
      if (round > 0) r.ns.push(((t.user + t.system) * 1000) / 100_000);
    }
  }
  const sorted = (xs) => [...xs].sort((a, b) => a - b);
  for (const r of runs)
    process.stdout.write(
      `${r.dist}: ${Math.min(...r.ns).toFixed(0)} ns per /json request at best, median ${sorted(r.ns)[r.ns.length >> 1].toFixed(0)} (${r.ns.length} rounds)\n`,
    );
  if (sink === 0) throw new Error('nothing was rendered');
  process.exit(0);
}

const RENDER = process.argv[2] === '--render' ? JSON.parse(readFileSync(process.argv[3], 'utf8')) : undefined;
const PAIRS = process.argv[2] === '--pairs';
const ARGS = PAIRS ? process.argv.slice(3) : process.argv.slice(2);
const REPS = RENDER ? RENDER.reps : Number(ARGS[0] ?? (PAIRS ? 12 : 3));
const SECONDS = RENDER ? RENDER.seconds : Math.min(Number(ARGS[1] ?? (PAIRS ? 5 : 10)), 30);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const HERE = join(ROOT, 'bench/serve');
const PORT = { bare: 18190, sluice: 18191, grpc: 18192, nginx: 18193, bareRead: 18194, admin: 18195 };
const WRK = ['-t2', '-c64', `-d${SECONDS}s`, '--latency'];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const live = new Set();
// On an abnormal exit, kill what we started, nginx's workers included (they outlive a SIGKILLed master).
process.on('exit', () => {
  for (const c of live) {
    try {
      for (const p of readFileSync(`/proc/${c.pid}/task/${c.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean))
        process.kill(Number(p), 'SIGKILL');
    } catch {}
    try {
      c.kill('SIGKILL');
    } catch {}
  }
});
process.on('SIGINT', () => process.exit(130));

let tmp = '';
if (!RENDER) {
  for (const bin of ['wrk', 'nginx', 'curl']) {
    if (spawnSync('which', [bin]).status !== 0)
      throw new Error(`${bin} is missing: apt-get install wrk nginx-light curl`);
  }
  // h2load (Debian: nghttp2-client) drives gRPC at the server's own capacity; without it that row is skipped.
  if (spawnSync('which', ['h2load']).status !== 0)
    process.stderr.write('h2load is missing (apt-get install nghttp2-client): the h2load gRPC row is skipped\n');
  spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });

  tmp = mkdtempSync(join(os.tmpdir(), 'sluice-bench-serve-'));
  chmodSync(tmp, 0o755); // nginx's workers run as an unprivileged user and must read www/ok
  mkdirSync(join(tmp, 'www'));
  writeFileSync(join(tmp, 'www/ok'), 'ok');
}

function nginxConf(rate, burst) {
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `${t}_temp_path ${tmp}/${t};`).join(' ');
  const path = join(tmp, `nginx-${rate.replace('/', '-per-')}.conf`);
  writeFileSync(
    path,
    `daemon off; master_process on; worker_processes 1; pid ${tmp}/nginx.pid; error_log ${tmp}/error.log warn;
events { worker_connections 4096; }
http { access_log off; ${temp} keepalive_requests 100000000; open_file_cache max=16 inactive=60s;
  limit_req_zone $binary_remote_addr zone=perip:10m rate=${rate};
  server { listen 127.0.0.1:${PORT.nginx}; root ${tmp}/www;
    # a content-phase handler (static file): with 'return' limit_req never runs (anchorbench suite D)
    location = /ok { limit_req zone=perip${burst ? ' burst=100000 nodelay' : ''}; } } }\n`,
  );
  return path;
}

const SERVERS = {
  bare: {
    label: 'bare node:http answering a constant (the Node ceiling)',
    url: `http://127.0.0.1:${PORT.bare}/json`,
    lua: true,
    cmd: () => [process.execPath, [join(HERE, 'bare.mjs'), String(PORT.bare)]],
  },
  bareRead: {
    label: 'bare node:http reading and JSON.parsing the body, answering a constant',
    url: `http://127.0.0.1:${PORT.bareRead}/json`,
    lua: true,
    cmd: () => [process.execPath, [join(HERE, 'bare-read.mjs'), String(PORT.bareRead)]],
  },
  sluice: {
    label: 'sluice serve POST /json, memory store',
    url: `http://127.0.0.1:${PORT.sluice}/json`,
    lua: true,
    cmd: () => [
      process.execPath,
      [
        join(ROOT, 'packages/serve/dist/cli/main.js'),
        'serve',
        '--config',
        join(HERE, 'policies.yaml'),
        '--port',
        String(PORT.sluice),
        '--grpc-port',
        String(PORT.grpc),
        '--admin-port',
        String(PORT.admin),
        '--log-level',
        'warn',
        '--watch',
        'false',
      ],
    ],
  },
  nginx: {
    label: 'nginx limit_req, static file (1 worker)',
    url: `http://127.0.0.1:${PORT.nginx}/ok`,
    lua: false,
    cmd: (rate = '1000000r/s') => ['nginx', ['-c', nginxConf(rate, rate === '1000000r/s')]],
  },
};

async function startServer(name, arg) {
  const s = SERVERS[name];
  const [cmd, args] = s.cmd(arg);
  const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  live.add(child);
  child.on('exit', () => live.delete(child));
  for (let i = 0; i < 100; i++) {
    const probe = s.lua
      ? [
          '-s',
          '-o',
          '/dev/null',
          '-w',
          '%{http_code}',
          '-XPOST',
          '-d',
          '{"domain":"bench","descriptors":[{"entries":[{"key":"remote_address","value":"probe"}]}]}',
          s.url,
        ]
      : ['-s', '-o', '/dev/null', '-w', '%{http_code}', s.url];
    if (spawnSync('curl', ['--max-time', '1', ...probe], { encoding: 'utf8' }).stdout === '200') return child;
    await sleep(100);
  }
  throw new Error(`${name} did not come up`);
}
async function stopServer(child) {
  if (child.exitCode !== null) return;
  const done = new Promise((r) => child.once('exit', r));
  child.kill(child.spawnfile === 'nginx' ? 'SIGQUIT' : 'SIGTERM');
  await Promise.race([done, sleep(5000)]);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}
function wrk(name, seconds = SECONDS, extra = WRK) {
  const s = SERVERS[name];
  const args = [
    ...extra.map((a) => (a.startsWith('-d') ? `-d${seconds}s` : a)),
    ...(s.lua ? ['-s', join(HERE, 'json.lua')] : []),
    s.url,
  ];
  const r = spawnSync('wrk', args, { encoding: 'utf8', timeout: (seconds + 15) * 1000 });
  if (r.status !== 0) throw new Error(`wrk failed: ${r.stderr}${r.stdout}`);
  const out = r.stdout;
  const ms = (re) => {
    const m = re.exec(out);
    return m ? Number(m[1]) * { us: 1e-3, ms: 1, s: 1e3 }[m[2]] : NaN;
  };
  return {
    cmd: `wrk ${args.join(' ').replaceAll(ROOT, '')}`,
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0),
    p50Ms: ms(/\s50%\s+([\d.]+)(us|ms|s)/),
    p99Ms: ms(/\s99%\s+([\d.]+)(us|ms|s)/),
    non2xx: Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0),
    total: Number(/(\d+) requests in/.exec(out)?.[1] ?? 0),
    errors: /Socket errors:.*/.exec(out)?.[0] ?? '',
  };
}

/**
 * One ShouldRateLimit call as gRPC puts it on the wire: a 5-byte prefix (not compressed, length) and the
 * RateLimitRequest {domain: "bench", descriptors: [{entries: [{key: "remote_address", value: "10.0.0.1"}]}]}
 * in protobuf (field 1 domain, 2 descriptors; a descriptor's field 1 entries; an entry's 1 key, 2 value).
 */
function grpcFrame() {
  const field = (n, bytes) => Buffer.concat([Buffer.from([(n << 3) | 2, bytes.length]), bytes]);
  const entry = Buffer.concat([field(1, Buffer.from('remote_address')), field(2, Buffer.from('10.0.0.1'))]);
  const message = Buffer.concat([field(1, Buffer.from('bench')), field(2, field(1, entry))]);
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(message.length, 1);
  return Buffer.concat([prefix, message]);
}

/** A counter of the bench rule from sluice serve's /metrics. */
function ruleCounter(name) {
  const text = spawnSync('curl', ['-s', '--max-time', '5', `http://127.0.0.1:${PORT.admin}/metrics`], {
    encoding: 'utf8',
  }).stdout;
  return Number(new RegExp(`^${name}\\{[^}]*rule="bench.remote_address"[^}]*\\} (\\d+)`, 'm').exec(text)?.[1] ?? NaN);
}

/**
 * gRPC at the server's capacity: h2load, 4 connections × 32 concurrent streams, every call the same frame
 * (one key, always admitted). h2load counts any HTTP 200 as done, and gRPC reports errors in trailers, so
 * the rule's own counters check the run: every call decided, none over the limit.
 */
function h2loadGrpc(pid) {
  const body = join(tmp, 'grpc-call.bin');
  writeFileSync(body, grpcFrame());
  const url = `http://127.0.0.1:${PORT.grpc}/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit`;
  const args = [
    '-c4',
    '-t1',
    '-m32',
    `-D${SECONDS}`,
    '--warm-up-time=2',
    '-d',
    body,
    '-H',
    'content-type: application/grpc',
    '-H',
    'te: trailers',
    url,
  ];
  const hits0 = ruleCounter('sluice_rule_hits_total');
  const over0 = ruleCounter('sluice_rule_over_limit_total');
  const c0 = cpuSeconds(pid);
  const t0 = performance.now();
  const r = spawnSync('h2load', args, { encoding: 'utf8', timeout: (SECONDS + 20) * 1000 });
  const wall = (performance.now() - t0) / 1000;
  const cpu = cpuSeconds(pid) - c0;
  if (r.status !== 0) throw new Error(`h2load failed: ${r.stderr}${r.stdout}`);
  const out = r.stdout;
  const done = /requests: .* (\d+) succeeded, (\d+) failed, (\d+) errored/.exec(out);
  const hits = ruleCounter('sluice_rule_hits_total') - hits0;
  const over = ruleCounter('sluice_rule_over_limit_total') - over0;
  const mean = /time for request:\s+\S+\s+\S+\s+([\d.]+)(us|ms|s)/.exec(out);
  return {
    cmd: `h2load ${args.map((a) => (a === body ? '<one call>' : a.includes(' ') ? `'${a}'` : a)).join(' ')}`,
    rps: Number(/finished in [\d.]+s, ([\d.]+) req\/s/.exec(out)?.[1] ?? 0),
    succeeded: Number(done?.[1] ?? 0),
    failed: Number(done?.[2] ?? 0) + Number(done?.[3] ?? 0),
    decided: hits,
    overLimit: over,
    meanMs: mean ? Number(mean[1]) * { us: 1e-3, ms: 1, s: 1e3 }[mean[2]] : NaN,
    p50Ms: NaN,
    p99Ms: NaN,
    serverCpuPct: (cpu / wall) * 100,
    // Warm-up calls included on both sides: every call h2load made is one the rule decided.
    cpuUsPerReq: (cpu / hits) * 1e6,
  };
}

/** One fresh server, a 2 s warm-up wrk run (discarded), then the measured run with the server's CPU. */
async function measure(name) {
  const child = await startServer(name);
  wrk(name, 2); // warm-up: JIT, connections; discarded
  const c0 = cpuSeconds(child.pid);
  const t0 = performance.now();
  const w = wrk(name);
  const cpu = ((cpuSeconds(child.pid) - c0) / ((performance.now() - t0) / 1000)) * 100;
  await stopServer(child);
  return { ...w, serverCpuPct: cpu, load: os.loadavg()[0] };
}

/**
 * `--pairs`: on a shared machine whole runs drift by more than the effect, so the ceiling and /json run as
 * many short pairs, back to back (ABBA), and each pair gives one ratio: by throughput and by server CPU per
 * request. The medians of those ratios are the figures; the table of the full run is left as it is.
 */
if (PAIRS) {
  const pairs = [];
  for (let i = 0; i < REPS; i++) {
    const order = i % 2 === 0 ? ['bare', 'sluice'] : ['sluice', 'bare'];
    const r = {};
    for (const name of order) r[name] = await measure(name);
    const cpuPerReq = (x) => x.serverCpuPct / x.rps;
    pairs.push({
      bare: r.bare,
      sluice: r.sluice,
      rps: r.sluice.rps / r.bare.rps,
      cpu: cpuPerReq(r.bare) / cpuPerReq(r.sluice),
    });
    process.stderr.write(
      `pair ${i + 1}/${REPS}: bare ${Math.round(r.bare.rps)} req/s, /json ${Math.round(r.sluice.rps)} req/s (${(pairs.at(-1).rps * 100).toFixed(1)} %), by CPU per request ${(pairs.at(-1).cpu * 100).toFixed(1)} %, p99 ${r.bare.p99Ms} / ${r.sluice.p99Ms} ms\n`,
    );
  }
  rmSync(tmp, { recursive: true, force: true });
  const med = (xs) => {
    const q = [...xs].sort((a, b) => a - b);
    return q.length % 2 ? q[(q.length - 1) / 2] : (q[q.length / 2 - 1] + q[q.length / 2]) / 2;
  };
  const pct = (x) => `${(x * 100).toFixed(1)} %`;
  const range = (xs) => `${pct(Math.min(...xs))} – ${pct(Math.max(...xs))}`;
  process.stdout.write(
    `<!-- bench/serve.mjs --pairs at ${new Date().toISOString()}: ${os.cpus().length} cores (${os.cpus()[0].model}), Node ${process.version}, ${REPS} pairs of ${SECONDS} s; ${hostSpeedLine()} -->\n`,
  );
  process.stdout.write(
    `- /json ÷ the bare ceiling, median of ${REPS} pairs: **${pct(med(pairs.map((p) => p.rps)))}** by throughput (${range(pairs.map((p) => p.rps))}), **${pct(med(pairs.map((p) => p.cpu)))}** by server CPU per request (${range(pairs.map((p) => p.cpu))}).\n`,
  );
  process.stdout.write(
    `- p99 at 64 connections, median: /json ${med(pairs.map((p) => p.sluice.p99Ms)).toFixed(2)} ms, bare ${med(pairs.map((p) => p.bare.p99Ms)).toFixed(2)} ms.\n`,
  );
  process.exit(0);
}

const started = RENDER ? RENDER.started : new Date().toISOString();
const results = RENDER ? RENDER.results : { bare: [], bareRead: [], sluice: [], nginx: [], grpc: [], grpcH2load: [] };
const H2LOAD = !RENDER && spawnSync('which', ['h2load']).status === 0;
if (!RENDER) {
  // Sanity: nginx's limit_req really runs on this config (10 r/s must reject most of a 2 s run).
  {
    const child = await startServer('nginx', '10r/s');
    const w = wrk('nginx', 2, ['-t1', '-c4', '-d2s']);
    await stopServer(child);
    results.nginxSanity = { total: w.total, non2xx: w.non2xx };
    process.stderr.write(`sanity: nginx limit_req at 10 r/s rejected ${w.non2xx} of ${w.total}\n`);
  }
  for (let rep = 1; rep <= REPS; rep++) {
    // Every other rep in reverse order (ABBA): drift during a rep then favours neither side of a ratio.
    for (const name of rep % 2 === 1
      ? ['bare', 'bareRead', 'sluice', 'nginx']
      : ['nginx', 'sluice', 'bareRead', 'bare']) {
      const w = await measure(name);
      results[name].push(w);
      process.stderr.write(
        `rep ${rep}/${REPS} ${name}: ${Math.round(w.rps)} req/s, p50 ${w.p50Ms} ms, p99 ${w.p99Ms} ms, non-2xx ${w.non2xx}, server CPU ${w.serverCpuPct.toFixed(0)}%, load ${w.load.toFixed(2)}\n`,
      );
    }
    const child = await startServer('sluice');
    spawnSync(process.execPath, [join(HERE, 'grpc-load.mjs'), String(PORT.grpc), '2', '128'], { encoding: 'utf8' }); // warm-up
    const c0 = cpuSeconds(child.pid);
    const g = spawnSync(process.execPath, [join(HERE, 'grpc-load.mjs'), String(PORT.grpc), String(SECONDS), '128'], {
      encoding: 'utf8',
      timeout: (SECONDS + 20) * 1000,
    });
    const cpu = ((cpuSeconds(child.pid) - c0) / SECONDS) * 100;
    await stopServer(child);
    const gr = JSON.parse(g.stdout);
    results.grpc.push({ ...gr, rps: gr.calls / gr.seconds, serverCpuPct: cpu });
    process.stderr.write(
      `rep ${rep}/${REPS} grpc: ${Math.round(gr.calls / gr.seconds)} calls/s, p50 ${gr.p50Ms.toFixed(2)} ms, p99 ${gr.p99Ms.toFixed(2)} ms, errors ${gr.errors}, server CPU ${cpu.toFixed(0)}%\n`,
    );
    if (H2LOAD) {
      const server = await startServer('sluice');
      const h = h2loadGrpc(server.pid);
      await stopServer(server);
      results.grpcH2load.push(h);
      process.stderr.write(
        `rep ${rep}/${REPS} grpc (h2load): ${Math.round(h.rps)} calls/s, mean ${h.meanMs.toFixed(2)} ms, ${h.succeeded} done, ${h.failed} failed, ${h.decided} decided, ${h.overLimit} over, server CPU ${h.serverCpuPct.toFixed(0)}%\n`,
      );
    }
  }
  rmSync(tmp, { recursive: true, force: true });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const k = (x) => `${(x / 1000).toFixed(1)} k`;
// Server CPU per request is steadier than throughput on a shared machine: a server that gets less than a
// core (wrk and other jobs on the same 2 cores) answers less, but spends the same CPU on each answer.
const cpuUs = (r) => r.cpuUsPerReq ?? (r.serverCpuPct / 100 / r.rps) * 1e6;
const ms = (x) => (Number.isNaN(x) ? '–' : x.toFixed(2));
const row = (label, rs, unit = 'req/s') =>
  `| ${label} | ${k(median(rs.map((r) => r.rps)))} ${unit} (${k(Math.min(...rs.map((r) => r.rps)))} – ${k(Math.max(...rs.map((r) => r.rps)))}) | ${ms(median(rs.map((r) => r.p50Ms)))} | ${ms(median(rs.map((r) => r.p99Ms)))} | ${median(rs.map((r) => r.serverCpuPct)).toFixed(0)} | ${median(rs.map(cpuUs)).toFixed(1)} |`;
const h2 = results.grpcH2load ?? [];
const bare = median(results.bare.map((r) => r.rps));
const sl = median(results.sluice.map((r) => r.rps));
const ng = median(results.nginx.map((r) => r.rps));
let md = `<!-- bench/serve.mjs at ${started}: ${os.cpus().length} cores (${os.cpus()[0].model}), Node ${process.version}, ${REPS} reps of ${SECONDS} s after a 2 s warm-up, fresh server per rep; ${hostSpeedLine()} -->\n\n`;
md += `| server | throughput, median (min – max) | p50 ms | p99 ms | server CPU % | server CPU µs per request |\n|---|---|---|---|---|---|\n`;
md += `${row(SERVERS.bare.label, results.bare)}\n${row(SERVERS.bareRead.label, results.bareRead)}\n${row(SERVERS.sluice.label, results.sluice)}\n${row(SERVERS.nginx.label, results.nginx)}\n`;
md += `${row('sluice serve gRPC ShouldRateLimit, memory store (1 channel, 128 streams in flight)', results.grpc, 'calls/s')}\n`;
if (h2.length > 0)
  md += `${row('sluice serve gRPC ShouldRateLimit, memory store, h2load (4 connections × 32 streams, one key)', h2, 'calls/s')}\n`;
md += '\n';
const br = median(results.bareRead.map((r) => r.rps));
md += `- /json against the bare Node ceiling: **${((sl / bare) * 100).toFixed(0)} %** (target ≥ 85 %); against a bare server that reads and parses the same body: **${((sl / br) * 100).toFixed(0)} %**; against nginx limit_req: **${((sl / ng) * 100).toFixed(0)} %**.\n`;
md += `- By server CPU per request, the bare ceiling costs **${((median(results.bare.map(cpuUs)) / median(results.sluice.map(cpuUs))) * 100).toFixed(0)} %** of what /json costs (the throughput ratio a server given a whole core would reach).\n`;
md += `- Per rep (back to back, the order reversed every other rep), /json ÷ bare: ${results.sluice.map((r, i) => `${((r.rps / results.bare[i].rps) * 100).toFixed(0)} %`).join(', ')}; 1-minute load average at the end of each sluice run: ${results.sluice.map((r) => r.load.toFixed(1)).join(', ')}.\n`;
md += `- p99 of /json at 64 connections: **${median(results.sluice.map((r) => r.p99Ms)).toFixed(2)} ms** (target < 5 ms).\n`;
md += `- HTTP load: \`${results.sluice[0].cmd}\` (the same script for the bare server); nginx: \`wrk ${WRK.join(' ')} <url>/ok\`; gRPC: \`node bench/serve/grpc-load.mjs <port> ${SECONDS} 128\`.\n`;
if (h2.length > 0) {
  md += `- gRPC at the server's capacity (\`${h2[0].cmd}\`): mean latency ${h2.map((r) => `${r.meanMs.toFixed(2)} ms`).join(', ')} per rep (h2load gives no percentiles); the @grpc/grpc-js client above is the bottleneck of its own row (server CPU ${median(results.grpc.map((r) => r.serverCpuPct)).toFixed(0)} %). Checked by the rule's counters: ${h2.map((r) => `${r.decided} decided, ${r.overLimit} over the limit, ${r.failed} failed (h2load: ${r.succeeded} done after warm-up)`).join('; ')}.\n`;
}
md += `- Sanity: nginx limit_req at 10 r/s rejected ${results.nginxSanity.non2xx} of ${results.nginxSanity.total} requests, so limit_req is in the request path. Every sluice decision here is admitted (one rule, 1000 keys, fixed window of 4·10^9 per hour, so keys stay live in the store): the decision path is what is measured.\n`;
mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
const stamp = started.replaceAll(':', '-').replace('.', '-');
writeFileSync(join(ROOT, `bench/results/serve-${stamp}.md`), md);
writeFileSync(
  join(ROOT, `bench/results/serve-${stamp}.json`),
  JSON.stringify({ started, reps: REPS, seconds: SECONDS, results }, null, 1),
);
process.stdout.write(md);
