#!/usr/bin/env node
// In-process CPU cost per request of each framework with and without its limiters, without the network:
// Express, Koa and NestJS (on Express) apps called with real IncomingMessage/ServerResponse objects (no
// socket), one request at a time, until the app ends the response. Process CPU time, not wall time, so a
// shared machine's preemption does not count; rounds interleave the variants and the best round of each
// is kept (noise only ever adds time). The "added" column is the variant's cost over its bare framework.
// Every request carries X-Client, one of 100,000 ids, as bench/http.mjs's many-clients load does; the
// limiters admit every request (1e9 a day on one key, or 100 a minute for each of the many clients).
// Usage: npm run build && node bench/frameworks-micro.mjs [rounds=7] [requests per round=20000]
import http from 'node:http';
import { nestApp } from './lib/nest-app.mjs';
import net from 'node:net';
import os from 'node:os';
import { mkdirSync, writeFileSync } from 'node:fs';

const ROUNDS = Number(process.argv[2] ?? 7);
const N = Number(process.argv[3] ?? 20_000);
const ROOT = new URL('..', import.meta.url).pathname;
const socket = new net.Socket();
Object.defineProperty(socket, 'remoteAddress', { value: '127.0.0.1' });
const day = { algorithm: 'gcra', limit: 1e9, window: '1d' };
const client = (req) => req.headers['x-client'];

async function express(kind) {
  const { default: express } = await import('express');
  const app = express();
  if (kind === 'sluice')
    app.use(
      (await import('../packages/sluice/dist/middleware/express/index.js')).rateLimit({
        policy: day,
        headers: 'draft-7',
      }),
    );
  if (kind === 'erl' || kind === 'erl-sluice') {
    const { rateLimit } = await import('express-rate-limit');
    const store =
      kind === 'erl-sluice'
        ? new (await import('../packages/sluice/dist/compat/express-rate-limit.js')).SluiceStore()
        : undefined;
    app.use(
      rateLimit({
        windowMs: 86_400_000,
        limit: 1e9,
        standardHeaders: 'draft-7',
        legacyHeaders: false,
        ...(store ? { store } : {}),
      }),
    );
  }
  app.get('/ok', (req, res) => void res.type('text/plain').send('ok'));
  return app;
}

async function koa(kind) {
  const { default: Koa } = await import('koa');
  const app = new Koa();
  if (kind === 'sluice')
    app.use(
      (await import('../packages/sluice/dist/middleware/koa/index.js')).rateLimit({ policy: day, headers: 'draft-7' }),
    );
  if (kind === 'koa-ratelimit')
    app.use(
      (await import('koa-ratelimit')).default({
        driver: 'memory',
        db: new Map(),
        duration: 86_400_000,
        max: 1e9,
        id: (ctx) => ctx.ip,
      }),
    );
  app.use((ctx) => {
    ctx.type = 'text/plain';
    ctx.body = 'ok';
  });
  return app.callback();
}

async function nest(kind) {
  return (await nestApp(kind, { limit: 100, client })).getHttpAdapter().getInstance();
}

const VARIANTS = {
  'Express 5, bare': () => express('bare'),
  'Express 5 + sluice/express': () => express('sluice'),
  'Express 5 + express-rate-limit (memory store)': () => express('erl'),
  'Express 5 + express-rate-limit on SluiceStore': () => express('erl-sluice'),
  'Koa 3, bare': () => koa('bare'),
  'Koa 3 + sluice/koa': () => koa('sluice'),
  'Koa 3 + koa-ratelimit (memory)': () => koa('koa-ratelimit'),
  'NestJS 12, bare': () => nest('bare'),
  'NestJS 12 + sluice/nestjs': () => nest('sluice'),
  'NestJS 12 + @nestjs/throttler': () => nest('throttler'),
  'NestJS 12 + @nestjs/throttler on SluiceThrottlerStorage': () => nest('throttler-sluice'),
};
const BARE = { Express: 'Express 5, bare', Koa: 'Koa 3, bare', NestJS: 'NestJS 12, bare' };

let seq = 0;
/** One request through `app`, resolved when the app ends its response. */
function request(app) {
  return new Promise((resolve, reject) => {
    const req = new http.IncomingMessage(socket);
    req.method = 'GET';
    req.url = '/ok';
    const id = String((++seq * 7919) % 100_000);
    req.headers = { host: '127.0.0.1', 'x-client': id };
    req.rawHeaders = ['Host', '127.0.0.1', 'X-Client', id];
    req.push(null);
    const res = new http.ServerResponse(req);
    const end = res.end;
    res.end = function (...args) {
      end.apply(this, args);
      if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
      else resolve();
      return this;
    };
    app(req, res);
  });
}

async function run(app, n) {
  const t0 = process.cpuUsage();
  for (let i = 0; i < n; i++) await request(app);
  const t = process.cpuUsage(t0);
  return ((t.user + t.system) * 1000) / n;
}

const apps = {};
for (const [name, make] of Object.entries(VARIANTS)) apps[name] = await make();
const results = Object.fromEntries(Object.keys(VARIANTS).map((k) => [k, []]));
for (let r = 0; r < ROUNDS; r++) {
  const order = r % 2 === 0 ? Object.keys(VARIANTS) : Object.keys(VARIANTS).reverse();
  for (const name of order) {
    await run(apps[name], 2_000);
    results[name].push(await run(apps[name], N));
  }
  process.stderr.write(
    `round ${r + 1} of ${ROUNDS}, load ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}\n`,
  );
}
const best = (xs) => Math.min(...xs);
const lines = [
  `<!-- generated by bench/frameworks-micro.mjs at ${new Date().toISOString()}; ${ROUNDS} interleaved rounds of ${N} requests, best round each; Node ${process.version}, ${os.cpus().length} vCPU (${os.cpus()[0].model}) -->`,
  '',
  '| variant | CPU µs per request (best round) | added over the bare framework |',
  '|---|---|---|',
];
for (const name of Object.keys(VARIANTS)) {
  const bare = best(results[BARE[name.split(' ')[0]]]) / 1000;
  const m = best(results[name]) / 1000;
  lines.push(
    `| ${name} | ${m.toFixed(2)} | ${name.endsWith('bare') ? '' : `${m - bare >= 0 ? '+' : ''}${(m - bare).toFixed(2)} µs`} |`,
  );
}
const md = lines.join('\n');
mkdirSync(`${ROOT}bench/results`, { recursive: true });
writeFileSync(`${ROOT}bench/results/frameworks-micro.json`, JSON.stringify({ rounds: ROUNDS, n: N, results }, null, 2));
writeFileSync(`${ROOT}bench/results/frameworks-micro.md`, md + '\n');
console.log(md);
process.exit(0);
