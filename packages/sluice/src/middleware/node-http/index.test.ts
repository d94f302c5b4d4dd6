// sluice/http on a real node:http server: the shared adapter suite, plus the wrapper's own error path.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { test } from 'node:test';
import { listen, testAdapter, type Gate } from '../../../test/contracts/http-adapter.js';
import { rateLimit, withRateLimit, type NodeRateLimitOptions } from './index.js';

function app(gate: Gate) {
  return (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/slow') void gate.opened.then(() => res.end('ok'));
    else if (path === '/boom') {
      res.statusCode = 500;
      res.end('boom');
    } else if (path === '/missing') {
      res.statusCode = 404;
      res.end('nope');
    } else if (path === '/info') {
      const i = req.rateLimit;
      res.end(
        JSON.stringify({
          key: i?.key,
          route: i?.route ?? null,
          cost: i?.cost,
          remaining: i?.decision.remaining,
          limited: i?.limited,
        }),
      );
    } else res.end('ok');
  };
}

const quiet500 = (_e: unknown, _req: IncomingMessage, res: ServerResponse) => {
  res.statusCode = 500;
  res.end();
};

testAdapter({
  name: 'node:http',
  serve: (options, gate, host) =>
    listen(createServer(withRateLimit(app(gate), { onError: quiet500, ...options } as NodeRateLimitOptions)), host),
  responseStatus: ((res: ServerResponse) => res.statusCode) as never,
});

test('node:http: the decorator form and a custom handler', async () => {
  const seen: number[] = [];
  const wrap = rateLimit({
    policy: { algorithm: 'gcra', limit: 1, window: '1m' },
    handler: (_req, res, limited) => {
      seen.push(limited.retryAfterSeconds);
      res.statusCode = limited.status;
      res.end('slow down');
    },
  });
  const r = await listen(createServer(wrap((_req, res) => res.end('ok'))));
  try {
    assert.equal(await (await fetch(r.url)).text(), 'ok');
    const refused = await fetch(r.url);
    assert.equal(refused.status, 429);
    assert.equal(await refused.text(), 'slow down');
    assert.equal(refused.headers.get('retry-after'), '60');
    assert.deepEqual(seen, [60]);
  } finally {
    await r.close();
  }
});

test('node:http: by default a failed decision is logged and answered with a bare 500', async (t) => {
  const logged: unknown[][] = [];
  t.mock.method(console, 'error', (...args: unknown[]) => void logged.push(args));
  const boom = new Error('store down');
  const r = await listen(
    createServer(
      withRateLimit((_req, res) => res.end('ok'), {
        policy: { algorithm: 'gcra', limit: 1, window: '1m' },
        key: () => {
          throw boom;
        },
      }),
    ),
  );
  try {
    const res = await fetch(r.url);
    assert.equal(res.status, 500);
    assert.equal(await res.text(), '');
    assert.deepEqual(logged, [['[sluice] deciding a request failed:', boom]]);
  } finally {
    await r.close();
  }
});
