// `node bench/serve.mjs --json-gap [rounds=10] [seconds=3]`: where `/json`'s distance from its floor goes, one
// layer at a time, each priced against the floor in the same window.
//
// The floors bench (floors.mjs) runs each server alone on core 0, one after another; on a shared host the
// same server's CPU per call moves ±30 % from one run to the next, more than the layers here cost. So each
// layer runs at the same moment as the floor, both pinned to core 0 with a wrk each on core 1 (equal
// load, 128 connections, json.lua): whatever the host does in that window, both servers get it. The
// ratios come out higher than the floors bench's (each server also pays the switches between the two,
// the same cost added to both), so they price the layers; the headline stays the floors bench's.
//
// The layers, each a server of its own, started once and kept for every round:
//   floor      bare node:http reading the body, a fixed answer as long as sluice's (bare-body.mjs)
//   caps       the floor's handler on sluice serve's connection caps and timeouts (bare-body.mjs caps)
//   process    the floor's handler inside a whole sluice serve process, decision port only
//              (floor-in-serve.mjs): the caps plus everything the process holds and runs besides /json
//   json       sluice serve with only its decision port (--grpc-port -1 --admin-port -1): the body reader,
//              decoding, the decision on the memory store, the answer
//   serve      sluice serve as the floors bench runs it (gRPC and admin ports open, dashboard sampling)
// Per round and layer: CPU µs per call of both (/proc/<pid>/stat ÷ calls answered), floor ÷ layer. Medians
// and ranges over rounds. Writes bench/results/serve-json-gap-<time>.{md,json}.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hostSpeedLine } from '../lib/host-speed.mjs';
import { processCpuSeconds } from '../lib/process-cpu.mjs';
import { median } from '../lib/stats.mjs';

const nums = process.argv
  .slice(3)
  .filter((a) => !a.startsWith('--'))
  .map(Number);
const ROUNDS = nums[0] ?? 10;
const SECONDS = nums[1] ?? 3;
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const HERE = join(ROOT, 'bench/serve');
const SERVER_CPU = '0';
const LOAD_CPU = '1';
const CONNECTIONS = 128;

for (const bin of ['wrk', 'taskset', 'curl']) {
  if (spawnSync('which', [bin]).status !== 0)
    throw new Error(`${bin} is missing (apt-get install wrk util-linux curl)`);
}
if (os.cpus().length < 2) throw new Error('the gap bench pins servers and load to two different cores: it needs 2');
spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });

const serve = (port, rest) => [
  join(ROOT, 'packages/serve/dist/cli/main.js'),
  'serve',
  '--config',
  join(HERE, 'policies.yaml'),
  '--port',
  String(port),
  '--log-level',
  'warn',
  '--watch',
  'false',
  ...rest,
];
const LAYERS = [
  {
    name: 'floor',
    label: 'bare `node:http` reading the body (the floor)',
    port: 18391,
    args: (p) => [join(HERE, 'bare-body.mjs'), String(p)],
  },
  {
    name: 'caps',
    label: "the floor's handler on sluice serve's connection caps and timeouts",
    port: 18392,
    args: (p) => [join(HERE, 'bare-body.mjs'), String(p), 'caps'],
  },
  {
    name: 'process',
    label: "the floor's handler inside a sluice serve process (decision port only)",
    port: 18395,
    args: (p) => [join(HERE, 'floor-in-serve.mjs'), ...serve(p, ['--grpc-port', '-1', '--admin-port', '-1']).slice(2)],
  },
  {
    name: 'json',
    label: 'sluice serve, decision port only (`--grpc-port -1 --admin-port -1`), memory store',
    port: 18393,
    args: (p) => serve(p, ['--grpc-port', '-1', '--admin-port', '-1']),
  },
  {
    name: 'serve',
    label: 'sluice serve as the floors bench runs it (gRPC and admin ports open), memory store',
    port: 18394,
    args: (p) => serve(p, ['--grpc-port', String(p + 10), '--admin-port', String(p + 20)]),
  },
];

const live = new Set();
process.on('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});
process.on('SIGINT', () => process.exit(130));

const PROBE = '{"domain":"bench","descriptors":[{"entries":[{"key":"remote_address","value":"probe"}]}]}';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function start(layer) {
  const child = spawn('taskset', ['-c', SERVER_CPU, process.execPath, ...layer.args(layer.port)], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  live.add(child);
  for (let i = 0; i < 100; i++) {
    const code = spawnSync(
      'curl',
      [
        '-s',
        '--max-time',
        '1',
        '-o',
        '/dev/null',
        '-w',
        '%{http_code}',
        '-XPOST',
        '-d',
        PROBE,
        `http://127.0.0.1:${layer.port}/json`,
      ],
      { encoding: 'utf8' },
    ).stdout;
    if (code === '200') return child;
    await sleep(100);
  }
  throw new Error(`${layer.name} did not come up`);
}
const WRK = (port, seconds) => [
  '-c',
  LOAD_CPU,
  'wrk',
  '-t1',
  `-c${CONNECTIONS}`,
  `-d${seconds}s`,
  '-s',
  join(HERE, 'json.lua'),
  `http://127.0.0.1:${port}/json`,
];
function wrk(port, seconds) {
  return new Promise((resolve, reject) => {
    const c = spawn('taskset', WRK(port, seconds));
    let out = '';
    c.stdout.on('data', (d) => (out += d));
    c.on('exit', (code) => {
      const total = Number(/(\d+) requests in/.exec(out)?.[1] ?? NaN);
      const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
      if (code !== 0 || !Number.isFinite(total)) return reject(new Error(`wrk failed on ${port}: ${out}`));
      resolve({ total, non2xx });
    });
  });
}
/** Both servers under equal load for `seconds`, at once: CPU µs per call of each. */
async function together(a, b, seconds) {
  const c0 = [processCpuSeconds(a.pid), processCpuSeconds(b.pid)];
  const [wa, wb] = await Promise.all([wrk(a.layer.port, seconds), wrk(b.layer.port, seconds)]);
  const us = (pid, c, w) => ((processCpuSeconds(pid) - c) / w.total) * 1e6;
  return {
    floorUs: us(a.pid, c0[0], wa),
    layerUs: us(b.pid, c0[1], wb),
    non2xx: wa.non2xx + wb.non2xx,
    calls: [wa.total, wb.total],
  };
}

const started = new Date().toISOString();
const running = [];
for (const layer of LAYERS) running.push({ layer, pid: (await start(layer)).pid });
const [floor, ...others] = running;
// Warm-up: every server under load, the floor beside each.
for (const o of others) await together(floor, o, 2);
const rounds = Object.fromEntries(others.map((o) => [o.layer.name, []]));
const loads = [];
for (let r = 0; r < ROUNDS; r++) {
  loads.push(os.loadavg()[0]);
  for (const o of r % 2 === 0 ? others : [...others].reverse()) {
    const m = await together(floor, o, SECONDS);
    rounds[o.layer.name].push({ ...m, ratio: m.floorUs / m.layerUs, load: os.loadavg()[0] });
  }
  process.stderr.write(
    `round ${r + 1}/${ROUNDS}: ${others.map((o) => `${o.layer.name} ${rounds[o.layer.name].at(-1).ratio.toFixed(3)}`).join(', ')}; load ${os.loadavg()[0].toFixed(2)}\n`,
  );
}

const rng = (xs, d) => `${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)}`;
const non2xx = Object.values(rounds)
  .flat()
  .reduce((a, m) => a + m.non2xx, 0);
let md = `<!-- bench/serve.mjs --json-gap at ${started}: ${os.cpus().length} cores (${os.cpus()[0].model}), Node ${process.version}, ${ROUNDS} rounds × ${SECONDS} s per layer; each layer and the floor on core ${SERVER_CPU} at once, a wrk -t1 -c${CONNECTIONS} each on core ${LOAD_CPU}; 1-minute load average ${rng(loads, 2)} (median ${median(loads).toFixed(2)}); ${hostSpeedLine()} -->\n\n`;
md += `| layer | CPU µs per call, the layer (the floor beside it) | calls per CPU-second ÷ the floor's, same window | this layer's step (÷ the row above) |\n|---|---|---|---|\n`;
md += `| ${LAYERS[0].label} | – | 1 | – |\n`;
let previous;
for (const o of others) {
  const rs = rounds[o.layer.name];
  const ratio = median(rs.map((m) => m.ratio));
  md += `| ${o.layer.label} | ${median(rs.map((m) => m.layerUs)).toFixed(1)} (${median(rs.map((m) => m.floorUs)).toFixed(1)}) | **${ratio.toFixed(3)}×** (${rng(
    rs.map((m) => m.ratio),
    2,
  )}) | ${previous === undefined ? `× ${ratio.toFixed(3)}` : `× ${(ratio / previous).toFixed(3)}`} |\n`;
  previous = ratio;
}
md += `\n- Non-2xx answers, all rounds: ${non2xx}.\n`;
md += `- Command: \`node bench/serve.mjs --json-gap ${ROUNDS} ${SECONDS}\`; each pair's load \`taskset ${WRK('<port>', SECONDS).join(' ').replaceAll(ROOT, '')}\`.\n`;
md += `- Both servers of a pair share core ${SERVER_CPU}, so each also pays the switches between them: the ratios are closer to 1 than the floors bench's, which runs each server alone. They price the layers against each other; they are not the headline.\n`;
mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
const stamp = started.replaceAll(':', '-').replace(/\.\d+Z$/, 'Z');
writeFileSync(join(ROOT, `bench/results/serve-json-gap-${stamp}.md`), md);
writeFileSync(
  join(ROOT, `bench/results/serve-json-gap-${stamp}.json`),
  JSON.stringify(
    { started, rounds: ROUNDS, seconds: SECONDS, layers: LAYERS.map((l) => l.label), results: rounds },
    null,
    1,
  ),
);
process.stdout.write(md);
process.exit(0);
