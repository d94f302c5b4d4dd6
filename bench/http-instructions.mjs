#!/usr/bin/env node
// Instructions per request of the middleware benchmark's servers (bench/http-server.mjs), counted by
// callgrind (bench/lib/count-server.mjs): the overhead of a limiter as a share of the server's work, which
// load on a shared machine does not move, where bench/http.mjs's wrk throughput swings by a third.
// Usage: npm run build && node bench/http-instructions.mjs [N1=12000] [N2=36000] [config ...]
// (default configs: node-bare node-sluice node-sluice-none node-sluice-monotonic; any of bench/http-server.mjs's configs works).
// Every request is GET /ok from one client, decided on one hot key and admitted, as in bench/http.mjs.
// N1 must be past the warm-up: at 500 and 2500 requests TurboFan was still compiling, and its work, which
// grows with the code that gets hot, made a bare request look like 362 k instructions instead of 57 k. Even
// between 4,000 and 12,000 requests it compiled 13.8 k instructions' worth per request with sluice in the
// path (2.8 k for the bare server; a profile named with NODE_OPTIONS=--perf-basic-prof), hence 12,000.
// Counts are of user-space instructions only: the kernel's share of a request (read, writev, epoll) is
// not in them, so a ratio here overstates the limiter's share of the CPU a request really costs.
import { fileURLToPath } from 'node:url';
import { countServer, perRequest } from './lib/count-server.mjs';

const [N1 = 12000, N2 = 36000] = process.argv.slice(2, 4).map(Number);
const configs =
  process.argv.length > 4
    ? process.argv.slice(4)
    : ['node-bare', 'node-sluice', 'node-sluice-none', 'node-sluice-monotonic'];
const server = fileURLToPath(new URL('http-server.mjs', import.meta.url));
const PORT = Number(process.env.PORT ?? 18390);
const requests = (port) => [Buffer.from(`GET /ok HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`)];

const results = {};
for (const config of configs) {
  const env = { ...process.env, PORT: String(PORT), LIFETIME_MS: '1800000' };
  const count = (n) => countServer({ args: [server, config], port: PORT, requests, n, env });
  const line = await perRequest(config, N1, N2, count);
  results[config] = Number(/: (\d+) instructions per request/.exec(line)?.[1]);
  process.stdout.write(`${line}\n`);
}
for (const [config, n] of Object.entries(results)) {
  const bare = results[`${config.split('-')[0]}-bare`];
  if (bare !== undefined && config !== `${config.split('-')[0]}-bare`)
    process.stdout.write(`${config} ÷ bare: ${((100 * n) / bare).toFixed(1)} %\n`);
}
