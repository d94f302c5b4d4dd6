// sluice/koa on real Koa 3 and Koa 2 apps: the shared adapter suite, plus a custom handler and per-route use.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { test } from 'node:test';
import Koa, { type Context, type Response } from 'koa';
import Koa2 from 'koa2';
import { listen, testAdapter, type Gate } from '../../../test/contracts/http-adapter.js';
import { rateLimit, type KoaRateLimitOptions } from './index.js';

/** The routes the suite expects, by hand: Koa itself has no router. GraphQL bodies are read as JSON. */
function app(make: typeof Koa, options: KoaRateLimitOptions, gate: Gate): Koa {
  const a = new make();
  a.silent = true; // the default error listener logs every test error to stderr
  a.use(async (ctx, next) => {
    if (ctx.method === 'POST' && ctx.path === '/graphql') {
      let text = '';
      for await (const chunk of ctx.req) text += chunk;
      (ctx.request as unknown as { body: unknown }).body = JSON.parse(text);
    }
    await next();
  });
  a.use(rateLimit(options));
  a.use(async (ctx) => {
    const route = `${ctx.method} ${ctx.path}`;
    if (route === 'GET /' || route === 'HEAD /' || route === 'POST /login' || route === 'POST /graphql')
      ctx.body = 'ok';
    else if (route === 'GET /slow') {
      await gate.opened;
      ctx.body = 'ok';
    } else if (route === 'GET /info') {
      const i = ctx.state.rateLimit;
      ctx.body = {
        key: i?.key,
        route: i?.route ?? null,
        cost: i?.cost,
        remaining: i?.decision.remaining,
        limited: i?.limited,
      };
    } else if (route === 'GET /boom') throw new Error('boom');
    else ctx.status = 404;
  });
  return a;
}

for (const [name, make] of [
  ['koa 3', Koa],
  ['koa 2', Koa2 as unknown as typeof Koa],
] as const) {
  testAdapter({
    name,
    serve: (options, gate, host) =>
      listen(createServer(app(make, options as KoaRateLimitOptions, gate).callback()), host),
    body: ((ctx: Context) => (ctx.request as unknown as { body: unknown }).body) as never,
    responseStatus: ((res: Response) => res.status) as never,
  });
}

test('koa: a custom handler, and rateLimit in front of one path only', async () => {
  const a = new Koa();
  const limited = rateLimit({
    policy: { algorithm: 'sliding-log', limit: 1, window: '1m' },
    handler: (ctx, l) => void (ctx.body = { wait: l.retryAfterSeconds }),
  });
  a.use(async (ctx, next) => (ctx.path === '/login' ? limited(ctx, next) : next()));
  a.use((ctx) => void (ctx.body = ctx.path === '/login' ? 'ok' : 'free'));
  const r = await listen(createServer(a.callback()));
  try {
    assert.equal(await (await fetch(`${r.url}/login`, { method: 'POST' })).text(), 'ok');
    const refused = await fetch(`${r.url}/login`, { method: 'POST' });
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('retry-after'), '60');
    assert.deepEqual(await refused.json(), { wait: 60 });
    const free = await fetch(`${r.url}/`);
    assert.equal(await free.text(), 'free');
    assert.equal(free.headers.get('ratelimit'), null);
  } finally {
    await r.close();
  }
});

test('koa: a bad option is refused when the middleware is built, naming it', () => {
  assert.throws(
    () => rateLimit({ policy: { algorithm: 'gcra', limit: 1, window: '1m' }, hook: 'x' } as never),
    /unknown koa rateLimit option 'hook'/,
  );
});
