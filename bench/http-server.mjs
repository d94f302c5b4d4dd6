#!/usr/bin/env node
// One HTTP server for bench/http.mjs, answering 200 "ok" on GET /ok, with or without a rate limiter.
// Usage: node bench/http-server.mjs <config>; prints the port it listens on (127.0.0.1, port 0).
// Every limiter admits everything (1e9 per day) from the one loopback client, so each request is
// decided and charged on one hot key and the allowed path is what is measured.
// Env LIMIT (default 1e9) lowers the limit for the sanity check that the limiter is really in the path.
// Env PORT (default 0: any) fixes the port, for bench/http-instructions.mjs.
// Exits by itself after 120 s (env LIFETIME_MS), so it can never outlive the benchmark.
import { createServer } from 'node:http';
import { nestApp } from './lib/nest-app.mjs';

const config = process.argv[2];
const LIMIT = Number(process.env.LIMIT ?? 1e9);
const ok = (req, res) => {
  res.writeHead(200, { 'Content-Type': 'text/plain' });
  res.end('ok');
};
// The other common style of a plain handler: fields through setHeader, the body through end(), which adds
// Content-Length. Node then keeps one header store, so sluice's fields cost no writeHead merge.
const okSet = (req, res) => {
  res.setHeader('Content-Type', 'text/plain');
  res.end('ok');
};
// The shortest plain handler, as sluice's own examples write it: no field of its own, the body through end().
const okEnd = (req, res) => {
  res.end('ok');
};
// GCRA: the smooth, boundary-free algorithm sluice is compared on; the peers count fixed windows.
// One day, so that GCRA's step (window/limit) stays above its 1/64 ms resolution at this limit.
const policy = { algorithm: 'gcra', limit: LIMIT, window: '1d' };

async function build() {
  switch (config) {
    case 'node-bare':
      return createServer(ok);
    case 'node-bare-set':
      return createServer(okSet);
    case 'node-bare-end':
      return createServer(okEnd);
    case 'node-bare-imported': {
      // The bare server with sluice's middleware module loaded but never called: a control for how much of
      // a count moves with the heap's layout alone (bench/cg-profile.mjs; docs/benchmarks.md).
      await import('../packages/sluice/dist/middleware/node-http/index.js');
      return createServer(ok);
    }
    case 'node-fields':
    case 'node-fields-end': {
      // The floor of sending draft-7 fields at all: no limiter, the same two fields sluice sends for this
      // policy (constant values of the same length), stored the way sluice stores them. What node:http then
      // does with them (serializing, matching, writing ~100 more bytes) is the same for any limiter that sends
      // them; what node-sluice adds on top of this is sluice's own deciding and rendering.
      const { NodeHeaders } = await import('../packages/sluice/dist/http/node.js');
      const policyText = `${LIMIT};w=86400`;
      const rateText = `limit=${LIMIT}, remaining=${LIMIT - 1}, reset=1`;
      const inner = config === 'node-fields' ? ok : okEnd;
      return createServer((req, res) => {
        const to = new NodeHeaders(res);
        to.setTrustedHeader('ratelimit-policy', policyText);
        to.setTrustedHeader('ratelimit', rateText);
        inner(req, res);
      });
    }
    case 'node-sluice':
    case 'node-sluice-none':
    case 'node-sluice-monotonic':
    case 'node-sluice-set':
    case 'node-sluice-end':
    case 'node-sluice-end-monotonic': {
      const { withRateLimit } = await import('../packages/sluice/dist/middleware/node-http/index.js');
      // -monotonic reads the clock on every decision instead of the default coarse clock, whose 1 ms
      // interval fires once per request under callgrind (bench/http-instructions.mjs), not once per ~35.
      const { monotonicClock } = await import('../packages/sluice/dist/index.js');
      const clock = config.endsWith('-monotonic') ? { clock: monotonicClock } : {};
      const handler = config === 'node-sluice-set' ? okSet : config.startsWith('node-sluice-end') ? okEnd : ok;
      return createServer(
        withRateLimit(handler, { policy, headers: config === 'node-sluice-none' ? 'none' : 'draft-7', ...clock }),
      );
    }
    case 'node-rlf': {
      // The reference point (7 % below bare there): RateLimiterMemory keyed by the peer address, as
      // its README wires it into a plain server, refusing with a bare 429 and sending no rate-limit fields.
      const { RateLimiterMemory } = await import('rate-limiter-flexible');
      const limiter = new RateLimiterMemory({ points: LIMIT, duration: 86_400 });
      return createServer((req, res) => {
        limiter.consume(req.socket.remoteAddress).then(
          () => ok(req, res),
          () => {
            res.writeHead(429);
            res.end();
          },
        );
      });
    }
    case 'express-bare':
    case 'express-sluice':
    case 'express-erl': {
      const { default: express } = await import('express');
      const app = express();
      if (config === 'express-sluice') {
        const { rateLimit } = await import('../packages/sluice/dist/middleware/express/index.js');
        app.use(rateLimit({ policy, headers: 'draft-7' }));
      } else if (config === 'express-erl') {
        const { rateLimit } = await import('express-rate-limit');
        app.use(rateLimit({ windowMs: 86_400_000, limit: LIMIT, standardHeaders: 'draft-7', legacyHeaders: false }));
      }
      app.get('/ok', (req, res) => void res.type('text/plain').send('ok'));
      return createServer(app);
    }
    case 'fastify-bare':
    case 'fastify-sluice':
    case 'fastify-frl': {
      const { default: Fastify } = await import('fastify');
      const app = Fastify();
      if (config === 'fastify-sluice') {
        const { rateLimit } = await import('../packages/sluice/dist/middleware/fastify/index.js');
        await app.register(rateLimit, { policy, headers: 'draft-6' });
      } else if (config === 'fastify-frl') {
        const { default: frl } = await import('@fastify/rate-limit');
        await app.register(frl, { max: LIMIT, timeWindow: 86_400_000, enableDraftSpec: true });
      }
      app.get('/ok', async () => 'ok');
      await app.ready();
      return app.server;
    }
    case 'express-erl-sluice': {
      // express-rate-limit deciding, its counts in sluice's store (a fixed window on the memory store).
      const { default: express } = await import('express');
      const { rateLimit } = await import('express-rate-limit');
      const { SluiceStore } = await import('../packages/sluice/dist/compat/express-rate-limit.js');
      const app = express();
      app.use(
        rateLimit({
          windowMs: 86_400_000,
          limit: LIMIT,
          standardHeaders: 'draft-7',
          legacyHeaders: false,
          store: new SluiceStore(),
        }),
      );
      app.get('/ok', (req, res) => void res.type('text/plain').send('ok'));
      return createServer(app);
    }
    case 'koa-bare':
    case 'koa-sluice':
    case 'koa-ratelimit': {
      const { default: Koa } = await import('koa');
      const app = new Koa();
      if (config === 'koa-sluice') {
        const { rateLimit } = await import('../packages/sluice/dist/middleware/koa/index.js');
        app.use(rateLimit({ policy, headers: 'draft-7' }));
      } else if (config === 'koa-ratelimit') {
        // koa-ratelimit's memory driver, keyed by the client address, with its X-RateLimit-* headers.
        const { default: ratelimit } = await import('koa-ratelimit');
        app.use(ratelimit({ driver: 'memory', db: new Map(), duration: 86_400_000, max: LIMIT, id: (ctx) => ctx.ip }));
      }
      app.use((ctx) => {
        if (ctx.path === '/ok') {
          ctx.type = 'text/plain';
          ctx.body = 'ok';
        }
      });
      return createServer(app.callback());
    }
    case 'nest-bare':
    case 'nest-sluice':
    case 'nest-throttler':
    case 'nest-throttler-sluice':
      return nest(config);
    default:
      throw new Error(`unknown config ${JSON.stringify(config)}`);
  }
}

/**
 * NestJS on @nestjs/platform-express, one controller answering GET /ok. Its load comes from many clients
 * (bench/lib/many-clients.lua sets X-Client to one of 100,000 ids), each far under its limit of 100 a
 * minute: @nestjs/throttler's storage keeps a log of every hit per key, so one hot key at 1e9 a day would
 * measure a log of millions. Both limiters key by that header; decorators are applied as functions, as
 * TypeScript's emit does.
 */
async function nest(config) {
  const client = (req) => req.headers['x-client'] ?? 'none';
  const app = await nestApp(config.replace(/^nest-/, ''), { limit: LIMIT === 1e9 ? 100 : LIMIT, client });
  return app.getHttpServer();
}

const server = await build();
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
const stop = () => {
  server.closeAllConnections?.();
  server.close(() => process.exit(0));
  setTimeout(() => process.exit(0), 500).unref();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
setTimeout(() => process.exit(0), Number(process.env.LIFETIME_MS ?? 120_000)).unref();
