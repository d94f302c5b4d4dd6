#!/usr/bin/env node
// In-process cost of sluice/http per request, without the network: the same handler called bare and wrapped,
// on real IncomingMessage/ServerResponse objects (no socket), through `writeHead` so that the extra
// headers are serialized too. It isolates what the middleware adds (ns per request) from wrk's noise; divide
// by the bare server's CPU time per request (bench/http.mjs) for the overhead in percent.
// Usage: npm run build && node bench/http-micro.mjs [rounds=7]   (or --count, below)
import http from 'node:http';
import net from 'node:net';
import { withRateLimit } from '../packages/sluice/dist/middleware/node-http/index.js';

const ROUNDS = Number(process.argv[2] ?? 7);
const N = 300_000;
const socket = new net.Socket();
Object.defineProperty(socket, 'remoteAddress', { value: '127.0.0.1' });
// bench/http-server.mjs's handler: headers given to writeHead, so that the bare handler never creates
// the response's header store (a setHeader here made the bare run the dearer one: sluice creates that
// store with fast properties, and the handler's own setHeader then lands in it).
const handler = (req, res) => {
  res.writeHead(200, { 'Content-Type': 'text/plain' });
  res.end('ok');
};
const policy = { algorithm: 'gcra', limit: 1e9, window: '1d' };
const variants = {
  bare: handler,
  "sluice, headers 'none'": withRateLimit(handler, { policy, headers: 'none' }),
  "sluice, 'draft-7'": withRateLimit(handler, { policy, headers: 'draft-7' }),
  "sluice, 'draft-8'": withRateLimit(handler, { policy, headers: 'draft-8' }),
  "sluice, 'legacy'": withRateLimit(handler, { policy, headers: 'legacy' }),
};

// CPU time of this process, not wall time: on a shared machine preemption would otherwise count as cost.
function run(fn, n) {
  const t0 = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const req = new http.IncomingMessage(socket);
    req.method = 'GET';
    req.url = '/ok';
    req.rawHeaders = ['Host', '127.0.0.1:8080', 'User-Agent', 'wrk'];
    fn(req, new http.ServerResponse(req));
  }
  const t = process.cpuUsage(t0);
  return ((t.user + t.system) * 1000) / n;
}

// --count <variant> <n>: run only that variant, 50,000 warm-up requests then n, for callgrind, whose counts
// repeat exactly here (no sockets, and the loop never yields, so no timer fires): per request =
// (count(n2) - count(n1)) / (n2 - n1), e.g. at n = 10000 and 30000:
//   valgrind --tool=callgrind --callgrind-out-file=/dev/null node --single-threaded --predictable \
//     --predictable-gc-schedule --no-memory-reducer bench/http-micro.mjs --count "sluice, 'draft-7'" 10000
if (process.argv[2] === '--count') {
  const fn = variants[process.argv[3]];
  if (fn === undefined) throw new Error(`unknown variant; choose one of ${Object.keys(variants).join(' | ')}`);
  run(fn, 50_000);
  run(fn, Number(process.argv[4]));
  process.exit(0);
}

const results = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
for (let r = 0; r < ROUNDS; r++) {
  for (const [name, fn] of Object.entries(variants)) {
    run(fn, 20_000);
    results[name].push(run(fn, N));
  }
}
// The least disturbed round: noise on a shared machine only ever adds time.
const best = (xs) => Math.min(...xs);
const bare = best(results.bare);
console.log('| variant | CPU ns per request (best of rounds) | added by sluice |\n|---|---|---|');
for (const [name, xs] of Object.entries(results)) {
  const m = best(xs);
  console.log(`| ${name} | ${m.toFixed(0)} | ${name === 'bare' ? '' : `${(m - bare).toFixed(0)} ns`} |`);
}
