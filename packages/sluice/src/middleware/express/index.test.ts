// sluice/express on real Express 5 and Express 4 servers: the shared adapter suite, plus a custom handler.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { test } from 'node:test';
import express, { type Request } from 'express';
import express4 from 'express4';
import { listen, testAdapter, type Gate } from '../../../test/contracts/http-adapter.js';
import { rateLimit, type ExpressRateLimitOptions } from './index.js';

type Factory = typeof express;

function app(make: Factory, options: ExpressRateLimitOptions, gate: Gate) {
  const a = make();
  a.use(make.json());
  a.use(rateLimit(options));
  a.get('/', (_req, res) => void res.send('ok'));
  a.post('/login', (_req, res) => void res.send('ok'));
  a.post('/graphql', (_req, res) => void res.send('ok'));
  a.get('/slow', (_req, res) => void gate.opened.then(() => res.send('ok')));
  a.get('/info', (req, res) => {
    const i = req.rateLimit;
    res.json({
      key: i?.key,
      route: i?.route ?? null,
      cost: i?.cost,
      remaining: i?.decision.remaining,
      limited: i?.limited,
    });
  });
  a.get('/boom', () => {
    throw new Error('boom');
  });
  // Quiet error handler: the default one logs every test error to stderr.
  a.use((_err: unknown, _req: unknown, res: express.Response, _next: unknown) => void res.status(500).send('error'));
  return a;
}

for (const [name, make] of [
  ['express 5', express],
  ['express 4', express4 as unknown as Factory],
] as const) {
  testAdapter({
    name,
    serve: (options, gate, host) => listen(createServer(app(make, options as ExpressRateLimitOptions, gate)), host),
    body: ((req: Request) => req.body) as never,
    responseStatus: ((res: express.Response) => res.statusCode) as never,
  });
}

test('express: a custom handler, and rateLimit on one route', async () => {
  const a = express();
  a.post(
    '/login',
    rateLimit({
      policy: { algorithm: 'sliding-log', limit: 1, window: '1m' },
      handler: (_req, res, _next, limited) => void res.status(limited.status).json({ wait: limited.retryAfterSeconds }),
    }),
    (_req, res) => void res.send('ok'),
  );
  a.get('/', (_req, res) => void res.send('free'));
  const r = await listen(createServer(a));
  try {
    assert.equal(await (await fetch(`${r.url}/login`, { method: 'POST' })).text(), 'ok');
    const refused = await fetch(`${r.url}/login`, { method: 'POST' });
    assert.equal(refused.status, 429);
    assert.deepEqual(await refused.json(), { wait: 60 });
    const free = await fetch(`${r.url}/`);
    assert.equal(await free.text(), 'free');
    assert.equal(free.headers.get('ratelimit'), null);
  } finally {
    await r.close();
  }
});
