/**
 * @file The rate-limited upstream for bench/outbound.mjs, in its own process: a token bucket of `rate`/s
 * and `burst`, 429 with Retry-After when empty, IETF draft-8 RateLimit headers on every answer. It prints
 * its port, logs every arrival, and answers GET /stats with the log.
 *
 *   node bench/lib/upstream.mjs <rate> <burst>
 */
import { createServer } from 'node:http';

const rate = Number(process.argv[2]);
const burst = Number(process.argv[3]);
let tokens = burst;
let last = performance.now();
const arrivals = []; // [ms, status]

const server = createServer((req, res) => {
  if (req.url === '/stats') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ rate, burst, arrivals }));
    return;
  }
  const now = performance.now();
  tokens = Math.min(burst, tokens + ((now - last) * rate) / 1000);
  last = now;
  let status = 200;
  const headers = {};
  if (tokens >= 1) tokens -= 1;
  else {
    status = 429;
    headers['retry-after'] = String(Math.max(1, Math.ceil((1 - tokens) / rate)));
  }
  headers.ratelimit = `"default";r=${Math.floor(tokens)};t=${Math.ceil((burst - tokens) / rate)}`;
  arrivals.push([now, status]);
  res.writeHead(status, headers);
  res.end(status === 200 ? 'ok' : 'rate limited');
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
