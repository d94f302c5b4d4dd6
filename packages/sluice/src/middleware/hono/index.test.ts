// sluice/hono on a real Hono 4 app served by @hono/node-server: the shared adapter suite, plus getConnInfo.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createAdaptorServer } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import { Hono, type Context } from 'hono';
import { listen, testAdapter, type Gate, type Running } from '../../../test/contracts/http-adapter.js';
import { rateLimit, type HonoRateLimitOptions, type RateLimitInfo } from './index.js';
import type { Server } from 'node:http';

function app(options: HonoRateLimitOptions, gate: Gate): Hono {
  const a = new Hono();
  a.use(rateLimit(options));
  a.get('/', (c) => c.text('ok'));
  a.post('/login', (c) => c.text('ok'));
  a.post('/graphql', async (c) => c.text('ok'));
  a.get('/slow', async (c) => {
    await gate.opened;
    return c.text('ok');
  });
  a.get('/info', (c) => {
    const i = c.get('rateLimit') as RateLimitInfo | undefined;
    return c.json({
      key: i?.key,
      route: i?.route ?? null,
      cost: i?.cost,
      remaining: i?.decision.remaining,
      limited: i?.limited,
    });
  });
  a.get('/missing', (c) => c.text('nope', 404));
  a.get('/boom', () => {
    throw new Error('boom');
  });
  a.onError((_e, c) => c.text('error', 500));
  return a;
}

function serve(a: Hono, host = '127.0.0.1'): Promise<Running> {
  return listen(createAdaptorServer({ fetch: a.fetch }) as Server, host);
}

testAdapter({
  name: 'hono',
  serve: (options, gate, host) => serve(app(options as HonoRateLimitOptions, gate), host),
  body: (async (c: Context) => c.req.json()) as never,
  responseStatus: ((res: Response) => res.status) as never,
});

test('hono: an explicit getConnInfo, and a custom handler', async () => {
  const a = new Hono();
  a.use(
    rateLimit({
      policy: { algorithm: 'gcra', limit: 1, window: '1m' },
      getConnInfo,
      handler: (c, limited) => c.json({ wait: limited.retryAfterSeconds }, 429),
    }),
  );
  a.get('/', (c) => c.text('ok'));
  const r = await serve(a);
  try {
    assert.equal(await (await fetch(r.url)).text(), 'ok');
    const refused = await fetch(r.url);
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('retry-after'), '60');
    assert.deepEqual(await refused.json(), { wait: 60 });
  } finally {
    await r.close();
  }
});
