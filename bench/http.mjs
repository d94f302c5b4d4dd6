#!/usr/bin/env node
// HTTP benchmark: sluice against the same bare server and against each framework's own limiter, with wrk on
// loopback. Method as anchorbench suite D: every rep starts a fresh server process, runs a 2 s wrk warm-up
// (discarded) and then `wrk -t2 -c64 -d<D>s`; reps are interleaved (rep 1 of every config, then rep 2, ...,
// every other rep in reverse order) so drift of the shared machine spreads over all rows. Reports the median (min - max) and, per pair, the
// median of the per-rep ratios (each rep's two servers ran back to back).
// Usage: npm run build && node bench/http.mjs [reps=3] [seconds=10]   (results: bench/results/http.{json,md})
// The NestJS servers are loaded by many clients (an X-Client header from bench/lib/many-clients.lua), the rest by one.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { hostSpeed } from './lib/host-speed.mjs';
import { processCpuSeconds as cpuSeconds } from './lib/process-cpu.mjs';

const REPS = Number(process.argv[2] ?? 3);
const DUR = Math.min(Number(process.argv[3] ?? 10), 20);
const ROOT = new URL('..', import.meta.url).pathname;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const ALL_CONFIGS = {
  'node-bare': 'node:http, no limiter',
  'node-sluice': 'node:http + sluice/http (GCRA, memory store, draft-7 headers)',
  'node-sluice-none': "node:http + sluice/http (GCRA, memory store, headers: 'none')",
  'node-rlf': 'node:http + rate-limiter-flexible 11 (RateLimiterMemory, fixed window, no headers)',
  'node-bare-set': 'node:http, no limiter, handler in the setHeader + end style',
  'node-sluice-set':
    'node:http + sluice/http (GCRA, memory store, draft-7 headers), handler in the setHeader + end style',
  'node-bare-end': 'node:http, no limiter, handler that only calls end()',
  'node-sluice-end': 'node:http + sluice/http (GCRA, memory store, draft-7 headers), handler that only calls end()',
  'node-fields':
    'node:http, no limiter, the two draft-7 fields sluice sends (constant values) set before the writeHead handler',
  'node-fields-end':
    'node:http, no limiter, the two draft-7 fields (constant values) set before the end()-only handler',
  'express-bare': 'Express 5, no limiter',
  'express-erl': 'Express 5 + express-rate-limit 8 (fixed window, memory store, draft-7 headers)',
  'express-sluice': 'Express 5 + sluice/express (GCRA, memory store, draft-7 headers)',
  'fastify-bare': 'Fastify 5, no limiter',
  'fastify-frl': 'Fastify 5 + @fastify/rate-limit 11 (fixed window, local store, draft headers)',
  'fastify-sluice': 'Fastify 5 + sluice/fastify (GCRA, memory store, draft-6 headers)',
  'express-erl-sluice':
    "Express 5 + express-rate-limit 8 with sluice/express-rate-limit's SluiceStore (fixed window, memory store, draft-7 headers)",
  'koa-bare': 'Koa 3, no limiter',
  'koa-ratelimit': 'Koa 3 + koa-ratelimit 6 (memory driver, X-RateLimit-* headers)',
  'koa-sluice': 'Koa 3 + sluice/koa (GCRA, memory store, draft-7 headers)',
  'nest-bare': 'NestJS 12 on Express, no limiter (many clients)',
  'nest-throttler': 'NestJS 12 + @nestjs/throttler 6 (its in-memory storage, X-RateLimit-* headers; many clients)',
  'nest-throttler-sluice':
    "NestJS 12 + @nestjs/throttler 6 on sluice/nestjs's SluiceThrottlerStorage (sliding log, memory store; many clients)",
  'nest-sluice': 'NestJS 12 + sluice/nestjs RateLimitModule (GCRA, memory store, draft-7 headers; many clients)',
};
/** Configurations loaded by many clients (bench/lib/many-clients.lua): see bench/http-server.mjs, nest(). */
const MANY_CLIENTS = new Set(['nest-bare', 'nest-throttler', 'nest-throttler-sluice', 'nest-sluice']);
// ONLY=node-bare,node-sluice runs a subset (for quick iterations; the README figures use all of them).
const CONFIGS = Object.fromEntries(
  Object.entries(ALL_CONFIGS).filter(([c]) => !process.env.ONLY || process.env.ONLY.split(',').includes(c)),
);
const PAIRS_ALL = [
  ['node-sluice', 'node-bare', 'sluice on node:http vs the same bare server'],
  ['node-sluice-none', 'node-bare', "sluice on node:http (headers 'none') vs bare"],
  ['node-rlf', 'node-bare', 'rate-limiter-flexible on node:http vs bare'],
  ['node-sluice-none', 'node-rlf', "sluice (headers 'none') vs rate-limiter-flexible on node:http"],
  ['node-sluice-set', 'node-bare-set', 'sluice on node:http vs bare, both with a setHeader + end handler'],
  ['node-sluice-end', 'node-bare-end', 'sluice on node:http vs bare, both with an end()-only handler'],
  ['node-fields', 'node-bare', "node:http's own cost of two draft-7 fields (no limiter), writeHead handler"],
  ['node-sluice', 'node-fields', 'sluice (deciding and rendering) over those fields, writeHead handler'],
  ['node-fields-end', 'node-bare-end', "node:http's own cost of two draft-7 fields (no limiter), end()-only handler"],
  ['node-sluice-end', 'node-fields-end', 'sluice (deciding and rendering) over those fields, end()-only handler'],
  ['express-sluice', 'express-erl', 'sluice vs express-rate-limit on Express'],
  ['express-sluice', 'express-bare', 'sluice on Express vs bare Express'],
  ['fastify-sluice', 'fastify-frl', 'sluice vs @fastify/rate-limit on Fastify'],
  ['fastify-sluice', 'fastify-bare', 'sluice on Fastify vs bare Fastify'],
  ['express-erl-sluice', 'express-erl', 'express-rate-limit with the sluice store vs with its memory store'],
  ['express-erl-sluice', 'express-bare', 'express-rate-limit with the sluice store vs bare Express'],
  ['koa-sluice', 'koa-ratelimit', 'sluice vs koa-ratelimit on Koa'],
  ['koa-sluice', 'koa-bare', 'sluice on Koa vs bare Koa'],
  ['koa-ratelimit', 'koa-bare', 'koa-ratelimit vs bare Koa'],
  ['nest-sluice', 'nest-throttler', 'sluice/nestjs vs @nestjs/throttler on NestJS'],
  ['nest-throttler-sluice', 'nest-throttler', '@nestjs/throttler on the sluice storage vs on its own'],
  ['nest-sluice', 'nest-bare', 'sluice/nestjs vs bare NestJS'],
  ['nest-throttler', 'nest-bare', '@nestjs/throttler vs bare NestJS'],
];
const PAIRS = PAIRS_ALL.filter(([a, b]) => a in CONFIGS && b in CONFIGS);

const live = new Set();
process.on('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});
process.on('SIGINT', () => process.exit(130));

async function start(config, env = {}) {
  const child = spawn(process.execPath, [`${ROOT}bench/http-server.mjs`, config], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  });
  live.add(child);
  child.on('exit', () => live.delete(child));
  const port = await new Promise((resolve, reject) => {
    child.stdout.once('data', (d) => resolve(Number(String(d).trim())));
    child.once('exit', () => reject(new Error(`${config} exited before listening`)));
  });
  return { child, url: `http://127.0.0.1:${port}/ok` };
}

async function stop({ child }) {
  if (child.exitCode !== null) return;
  const done = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await Promise.race([done, sleep(3000)]);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

function wrk(url, seconds, threads = 2, conns = 64, script = undefined) {
  const r = spawnSync('wrk', [`-t${threads}`, `-c${conns}`, `-d${seconds}s`, ...(script ? ['-s', script] : []), url], {
    encoding: 'utf8',
    timeout: (seconds + 10) * 1000,
    killSignal: 'SIGKILL',
  });
  if (r.status !== 0) throw new Error(`wrk failed: ${r.stderr}${r.stdout}`);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(r.stdout)[1]);
  const total = Number(/(\d+) requests in/.exec(r.stdout)[1]);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(r.stdout)?.[1] ?? 0);
  const lat = /Latency\s+([\d.]+)(us|ms|s)/.exec(r.stdout);
  const latencyMs = Number(lat[1]) * { us: 1e-3, ms: 1, s: 1e3 }[lat[2]];
  return { rps, total, non2xx, latencyMs };
}

async function measure(config) {
  const s = await start(config);
  const script = MANY_CLIENTS.has(config) ? `${ROOT}bench/lib/many-clients.lua` : undefined;
  try {
    wrk(s.url, 2, 2, 64, script);
    const cpu0 = cpuSeconds(s.child.pid);
    const t0 = performance.now();
    const r = wrk(s.url, DUR, 2, 64, script);
    const used = cpuSeconds(s.child.pid) - cpu0;
    const cpu = used / ((performance.now() - t0) / 1000);
    // CPU time per request: robust to other load on the machine, unlike requests/s.
    return { ...r, cpu, cpuUsPerReq: (used * 1e6) / r.total };
  } finally {
    await stop(s);
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const k = (x) => `${(x / 1000).toFixed(1)} k`;

const load = () =>
  os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
const facts = {
  date: new Date().toISOString(),
  nproc: os.cpus().length,
  cpu: os.cpus()[0].model,
  node: process.version,
  loadStart: load(),
  reps: REPS,
  seconds: DUR,
  hostSpeed: hostSpeed(),
};

// Sanity: with a limit of 10 a day the limiter must refuse almost everything (it really is in the request path).
const sanity = {};
// (No X-Client header here: the many-clients servers then key every request alike, and refuse too.)
for (const config of [
  'node-sluice',
  'node-rlf',
  'express-sluice',
  'express-erl',
  'fastify-sluice',
  'fastify-frl',
  'express-erl-sluice',
  'koa-sluice',
  'koa-ratelimit',
  'nest-sluice',
  'nest-throttler',
  'nest-throttler-sluice',
].filter((c) => c in CONFIGS && !process.env.NO_SANITY)) {
  const s = await start(config, { LIMIT: '10' });
  try {
    const r = wrk(s.url, 1, 1, 4);
    sanity[config] = `${r.non2xx} / ${r.total}`;
  } finally {
    await stop(s);
  }
}

const runs = Object.fromEntries(Object.keys(CONFIGS).map((c) => [c, []]));
for (let rep = 0; rep < REPS; rep++) {
  // Odd reps run the configurations in reverse order (ABBA), so that drift of a shared machine during a rep
  // does not always favour whichever side of a pair runs first.
  const order = rep % 2 === 0 ? Object.keys(CONFIGS) : Object.keys(CONFIGS).reverse();
  for (const config of order) {
    const r = await measure(config);
    runs[config].push(r);
    process.stderr.write(
      `rep ${rep + 1} ${config}: ${k(r.rps)} req/s, cpu ${(r.cpu * 100).toFixed(0)} %, ${r.cpuUsPerReq.toFixed(2)} µs CPU/req, load ${load()}\n`,
    );
  }
}
facts.loadEnd = load();

const lines = [];
lines.push(
  `<!-- generated by bench/http.mjs at ${facts.date}; ${REPS} interleaved reps (every other one in reverse order), fresh server each, 2 s warm-up, then wrk -t2 -c64 -d${DUR}s -->`,
);
lines.push(
  '',
  `Machine: ${facts.nproc} vCPU (${facts.cpu}), Node ${facts.node}; load average ${facts.loadStart} at start, ${facts.loadEnd} at end; host speed at the start: integer loop ${facts.hostSpeed.intLoopNsPerStep} ns/step, HMAC-SHA-256 ${facts.hostSpeed.hmacSha256Us} µs.`,
  '',
);
lines.push(
  '| server | requests/s median (min – max) | server CPU µs per request, median (min – max) | mean latency ms (median) | non-2xx | server CPU % (median) |',
  '|---|---|---|---|---|---|',
);
for (const [config, label] of Object.entries(CONFIGS)) {
  const rs = runs[config];
  const rps = rs.map((r) => r.rps);
  const us = rs.map((r) => r.cpuUsPerReq);
  lines.push(
    `| ${label} | ${k(median(rps))} (${k(Math.min(...rps))} – ${k(Math.max(...rps))}) | ${median(us).toFixed(2)} (${Math.min(...us).toFixed(2)} – ${Math.max(...us).toFixed(2)}) | ${median(rs.map((r) => r.latencyMs)).toFixed(3)} | ${Math.max(...rs.map((r) => r.non2xx))} | ${(median(rs.map((r) => r.cpu)) * 100).toFixed(0)} |`,
  );
}
lines.push(
  '',
  '| pair | throughput: ratio of medians | throughput: per-rep ratios, median (min – max) | CPU per request: ratio of medians | CPU per request added, µs (median difference) |',
  '|---|---|---|---|---|',
);
for (const [a, b, label] of PAIRS) {
  const ratios = runs[a].map((r, i) => r.rps / runs[b][i].rps);
  const fmt = (x) => `${(x * 100).toFixed(1)} %`;
  const cpuRatio = median(runs[a].map((r) => r.cpuUsPerReq)) / median(runs[b].map((r) => r.cpuUsPerReq));
  const cpuAdded = median(runs[a].map((r) => r.cpuUsPerReq)) - median(runs[b].map((r) => r.cpuUsPerReq));
  lines.push(
    `| ${label} | ${fmt(median(runs[a].map((r) => r.rps)) / median(runs[b].map((r) => r.rps)))} | ${fmt(median(ratios))} (${fmt(Math.min(...ratios))} – ${fmt(Math.max(...ratios))}) | ${fmt(cpuRatio)} | ${cpuAdded >= 0 ? '+' : ''}${cpuAdded.toFixed(2)} |`,
  );
}
lines.push('', 'Limiter-in-path sanity check (limit 10 per day, `wrk -t1 -c4 -d1s`; refused / total):', '');
lines.push(...Object.entries(sanity).map(([c, v]) => `- ${CONFIGS[c]}: ${v}`));
const md = lines.join('\n');
mkdirSync(`${ROOT}bench/results`, { recursive: true });
writeFileSync(`${ROOT}bench/results/http.json`, JSON.stringify({ facts, sanity, runs }, null, 2));
writeFileSync(`${ROOT}bench/results/http.md`, md + '\n');
console.log(md);
