#!/usr/bin/env node
// Where the CPU time per request goes, by function, for two servers under the same wrk load: Linux `perf
// record` samples the server process (kernel, node's C++, V8 builtins and, through --perf-basic-prof,
// JIT-compiled JavaScript by name), and the samples are divided by the requests served.
//
// Instruction counts (bench/http-instructions.mjs, bench/serve/instructions.mjs) cannot see what this
// shows: cache misses, the kernel, GC, and extra wake-ups per request. On 2026-11-30 wrk put node:http +
// sluice/http 3.7 µs of CPU per request above bare (+16 %) while callgrind counted +12.6 % user-space
// instructions; this names where the rest went.
//
// Usage: npm run build && node bench/perf-diff.mjs [A=node-bare] [B=node-sluice] [seconds=10] [rows=40]
// A and B: any config of bench/http-server.mjs (GET /ok), or serve-bare, serve-bare-read, serve-json (POST
// /json from bench/serve/json.lua: bench/serve/bare.mjs, bare-read.mjs and `sluice serve` on the memory store).
// Needs `perf` (Debian: apt-get install linux-perf) and wrk. It samples the cpu-clock software event, so it
// works in VMs without hardware counters. Env PORT (default 18180; the service also takes PORT+1 for gRPC).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import os from 'node:os';
import { join } from 'node:path';

const [A = 'node-bare', B = 'node-sluice'] = process.argv.slice(2, 4);
const SECONDS = Number(process.argv[4] ?? 10);
const ROWS = Number(process.argv[5] ?? 40);
const PORT = Number(process.env.PORT ?? 18180);
const HZ = 4999;
const ROOT = new URL('..', import.meta.url).pathname;
const SERVE = join(ROOT, 'bench/serve');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The server's script and arguments, and what wrk sends it. */
function server(name) {
  const json = { path: '/json', lua: join(SERVE, 'json.lua') };
  switch (name) {
    case 'serve-bare':
      return { args: [join(SERVE, 'bare.mjs'), String(PORT)], ...json };
    case 'serve-bare-read':
      return { args: [join(SERVE, 'bare-read.mjs'), String(PORT)], ...json };
    case 'serve-json': {
      const flags = [
        '--port',
        String(PORT),
        '--grpc-port',
        String(PORT + 1),
        '--admin-port',
        '-1',
        '--log-level',
        'warn',
        '--watch',
        'false',
      ];
      return {
        args: [
          join(ROOT, 'packages/serve/dist/cli/main.js'),
          'serve',
          '--config',
          join(SERVE, 'policies.yaml'),
          ...flags,
        ],
        ...json,
      };
    }
    default:
      return {
        args: [join(ROOT, 'bench/http-server.mjs'), name],
        path: '/ok',
        env: { PORT: String(PORT), LIFETIME_MS: String((SECONDS + 30) * 1000) },
      };
  }
}

function wrk(s, seconds) {
  const lua = s.lua === undefined ? [] : ['-s', s.lua];
  const r = spawnSync('wrk', ['-t2', '-c64', `-d${seconds}s`, ...lua, `http://127.0.0.1:${PORT}${s.path}`], {
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`wrk failed: ${r.stderr}${r.stdout}`);
  if (/Non-2xx/.test(r.stdout))
    throw new Error(`the server refused requests, so the two would not do the same work:\n${r.stdout}`);
  return Number(/(\d+) requests in/.exec(r.stdout)[1]);
}

async function listening() {
  for (let i = 0; i < 100; i++) {
    const up = await new Promise((resolve) => {
      const c = connect(PORT, '127.0.0.1', () => resolve(c.end() && true)).once('error', () => resolve(false));
    });
    if (up) return;
    await sleep(100);
  }
  throw new Error(`nothing listened on port ${PORT} within 10 s`);
}

/** Samples per symbol, and requests served, for one server. */
async function record(name) {
  const s = server(name);
  const child = spawn(process.execPath, ['--perf-basic-prof', ...s.args], {
    // In the scratch directory: --perf-basic-prof also writes an isolate-*.log into the working directory.
    cwd: dir,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, ...s.env },
  });
  const data = join(dir, `${name}.data`);
  try {
    await listening();
    wrk(s, 3); // warm-up: JIT tiers and connection set-up stay out of the samples
    const perf = spawn('perf', ['record', '-e', 'cpu-clock', '-F', String(HZ), '-p', String(child.pid), '-o', data], {
      stdio: 'ignore',
    });
    await sleep(300);
    const requests = wrk(s, SECONDS);
    perf.kill('SIGINT');
    await new Promise((r) => perf.once('exit', r));
    const report = spawnSync('perf', ['report', '-i', data, '--sort', 'sym', '--stdio', '-n'], {
      encoding: 'utf8',
      maxBuffer: 64 << 20,
    }).stdout;
    const samples = new Map();
    for (const line of report.split('\n')) {
      const m = /^\s*[\d.]+%\s+(\d+)\s+\[(.)\]\s+(.*)$/.exec(line);
      if (m === null) continue;
      const sym = `[${m[2]}] ${m[3].trim()}`;
      samples.set(sym, (samples.get(sym) ?? 0) + Number(m[1]));
    }
    return { requests, samples };
  } finally {
    child.kill('SIGTERM');
    if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
  }
}

for (const tool of ['perf', 'wrk']) {
  if (spawnSync(tool, ['--version']).error !== undefined)
    throw new Error(`bench/perf-diff.mjs needs '${tool}' on PATH`);
}
const dir = mkdtempSync(join(os.tmpdir(), 'sluice-perf-diff-'));
let a;
let b;
try {
  a = await record(A);
  b = await record(B);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const us = (n, requests) => (n / HZ / requests) * 1e6;
const total = (r) => [...r.samples.values()].reduce((x, y) => x + y, 0);
console.log(
  `CPU per request (all threads, kernel included): ${A} ${us(total(a), a.requests).toFixed(2)} µs, ${B} ${us(total(b), b.requests).toFixed(2)} µs`,
);
console.log(
  `(${a.requests} and ${b.requests} requests in ${SECONDS} s; [k] kernel, [.] user space; JS:* is optimized JavaScript)\n`,
);
const rows = [...new Set([...a.samples.keys(), ...b.samples.keys()])].map((sym) => {
  const x = us(a.samples.get(sym) ?? 0, a.requests);
  const y = us(b.samples.get(sym) ?? 0, b.requests);
  return { sym, x, y, d: y - x };
});
rows.sort((p, q) => q.d - p.d);
const line = (r) =>
  `${r.x.toFixed(3).padStart(8)} ${r.y.toFixed(3).padStart(8)} ${((r.d >= 0 ? '+' : '') + r.d.toFixed(3)).padStart(8)}  ${r.sym.slice(0, 110)}`;
console.log(`${'µs A'.padStart(8)} ${'µs B'.padStart(8)} ${'B - A'.padStart(8)}  symbol (most added by B first)`);
for (const r of rows.slice(0, ROWS)) console.log(line(r));
console.log('...most removed by B');
for (const r of rows.slice(-8)) console.log(line(r));
