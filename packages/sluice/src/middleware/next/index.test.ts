// sluice/next's withRateLimit on a catch-all route handler, served as Next serves one (a Web Request in, a
// Response out) by @hono/node-server: the shared adapter suite, with the socket address put in a header as
// a platform would and read through 'ipHeader'. The middleware (rateLimit) and both runtimes run in a real
// Next app: test/integration/next.test.ts.
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { test } from 'node:test';
import { createAdaptorServer } from '@hono/node-server';
import { Limiter } from '../../limiter.js';
import { listen, testAdapter, type Gate, type Running } from '../../../test/contracts/http-adapter.js';
import { rateLimit, withRateLimit, type NextRateLimitOptions, type RateLimitInfo } from './index.js';

/** The header the harness sets to the socket address, as Vercel sets x-real-ip. */
const PEER = 'x-test-peer';

/** One route handler for every path of the suite, as `app/[...path]/route.ts` would be. */
function route(gate: Gate) {
  return async (request: Request, _context: unknown, info: RateLimitInfo | undefined): Promise<Response> => {
    const path = new URL(request.url).pathname;
    if (path === '/slow') await gate.opened;
    if (path === '/boom') throw new Error('boom');
    if (path === '/missing') return new Response('nope', { status: 404 });
    if (path === '/graphql') await request.json();
    if (path === '/info')
      return Response.json({
        key: info?.key,
        route: info?.route ?? null,
        cost: info?.cost,
        remaining: info?.decision.remaining,
        limited: info?.limited,
      });
    return new Response('ok');
  };
}

/** Serves `handle` on node:http, the peer address in PEER (a client's own PEER header replaced). */
function serve(handle: (request: Request) => Promise<Response>, host = '127.0.0.1'): Promise<Running> {
  const server = createAdaptorServer({
    fetch: async (request: Request, env: { incoming: { socket: { remoteAddress?: string } } }) => {
      const headers = new Headers(request.headers);
      headers.set(PEER, env.incoming.socket.remoteAddress ?? '');
      const init: RequestInit & { duplex: 'half' } = {
        method: request.method,
        headers,
        body: request.body,
        signal: request.signal,
        duplex: 'half',
      };
      try {
        return await handle(new Request(request.url, init));
      } catch {
        return new Response('error', { status: 500 }); // what Next answers for a route that throws
      }
    },
  }) as Server;
  return listen(server, host);
}

testAdapter({
  name: 'next (withRateLimit)',
  serve: (options, gate, host) => {
    const GET = withRateLimit(route(gate), { ipHeader: PEER, ...(options as NextRateLimitOptions) });
    return serve((request) => GET(request, { params: Promise.resolve({}) }), host);
  },
  body: (async (request: Request) => request.clone().json()) as never,
  responseStatus: ((res: Response) => res.status) as never,
});

test('next: options are checked when built, naming the field', () => {
  const policy = { algorithm: 'gcra', limit: 1, window: '1m' } as const;
  assert.throws(
    () => rateLimit({ policy, ipHeader: 'x real ip' }),
    /rateLimit: 'ipHeader' must be a header name, got "x real ip"/,
  );
  assert.throws(
    () => rateLimit({ policy, skipFailedRequests: true }),
    /'skipFailedRequests' and 'skipSuccessfulRequests' need the route's response.*use withRateLimit/,
  );
  assert.throws(
    () => withRateLimit('GET' as never, { policy }),
    /withRateLimit: the first argument must be a route handler function, got "GET"/,
  );
  assert.throws(
    () => withRateLimit(async () => new Response(), { policy, handler: 1 as never }),
    /'handler' must be a function/,
  );
});

test('next: with no ipHeader, a request keyed by address fails saying which option to set; a key function needs none', async () => {
  const policy = { algorithm: 'gcra', limit: 1, window: '1m' } as const;
  const GET = withRateLimit(async () => new Response('ok'), { policy });
  const request = new Request('http://localhost/', {
    headers: { 'x-forwarded-for': '6.6.6.6', 'x-real-ip': '6.6.6.6' },
  });
  await assert.rejects(
    () => GET(request, {}),
    (e: Error & { code?: string }) =>
      e.code === 'ERR_SLUICE_NO_CLIENT_ADDRESS' &&
      /through 'ipHeader'.*'x-real-ip' on Vercel.*or give a 'key' function/.test(e.message),
  );
  const missing = withRateLimit(async () => new Response('ok'), { policy, ipHeader: 'x-real-ip' });
  await assert.rejects(() => missing(new Request('http://localhost/'), {}), /no 'x-real-ip' header/);
  const byUser = withRateLimit(async () => new Response('ok'), {
    policy,
    key: (req) => req.headers.get('x-user') ?? 'anonymous',
  });
  const statuses = [];
  for (let i = 0; i < 2; i++)
    statuses.push((await byUser(new Request('http://localhost/', { headers: { 'x-user': 'u1' } }), {})).status);
  assert.deepEqual(statuses, [200, 429]);
});

test("next: ipHeader 'x-forwarded-for' keys by its last entry, and walks past trusted proxies with trustProxy", async () => {
  const limiter = new Limiter({ policy: { name: 'p', algorithm: 'gcra', limit: 5, window: '1m' } });
  const keyOf = async (options: NextRateLimitOptions, xff: string) => {
    const GET = withRateLimit(async (_r, _c, info) => new Response(info?.key), options);
    return (await GET(new Request('http://localhost/', { headers: { 'x-forwarded-for': xff } }), {})).text();
  };
  assert.equal(await keyOf({ limiter, ipHeader: 'x-forwarded-for' }, '6.6.6.6, 203.0.113.7'), '203.0.113.7');
  assert.equal(
    await keyOf(
      { limiter, ipHeader: 'X-Forwarded-For', trustProxy: ['203.0.113.0/24'] },
      '6.6.6.6, 198.51.100.9, 203.0.113.7',
    ),
    '198.51.100.9',
  );
});

test('next: the middleware passes with the headers on NextResponse.next(), refuses with the 429, and a custom handler', async () => {
  const mw = rateLimit({
    policy: { name: 'p', algorithm: 'gcra', limit: 1, window: '1m' },
    ipHeader: 'x-real-ip',
    headers: 'draft-7',
  });
  const request = () => new Request('http://localhost/api', { headers: { 'x-real-ip': '203.0.113.7' } });
  const passed = await mw(request());
  assert.equal(passed.headers.get('x-middleware-next'), '1', 'NextResponse.next(): Next goes on to the route');
  assert.equal(passed.headers.get('ratelimit'), 'limit=1, remaining=0, reset=60');
  const refused = await mw(request());
  assert.equal(refused.status, 429);
  assert.equal(refused.headers.get('x-middleware-next'), null);
  assert.equal(refused.headers.get('retry-after'), '60');
  assert.equal(refused.headers.get('content-type'), 'application/problem+json');
  assert.equal(((await refused.json()) as { status: number }).status, 429);
  const custom = rateLimit({
    policy: { algorithm: 'gcra', limit: 1, window: '1m' },
    ipHeader: 'x-real-ip',
    handler: (_r, limited, headers) => Response.json({ wait: limited.retryAfterSeconds }, { status: 429, headers }),
  });
  await custom(request());
  const r = await custom(request());
  assert.deepEqual([r.status, r.headers.get('retry-after'), await r.json()], [429, '60', { wait: 60 }]);
});

test('next: headers are added to a response whose headers are immutable (a fetched or redirect response)', async () => {
  const GET = withRateLimit(async () => Response.redirect('http://localhost/elsewhere', 307), {
    policy: { name: 'default', algorithm: 'gcra', limit: 5, window: '1m' },
    ipHeader: 'x-real-ip',
  });
  const r = await GET(new Request('http://localhost/', { headers: { 'x-real-ip': '203.0.113.7' } }), {});
  assert.deepEqual(
    [r.status, r.headers.get('location'), r.headers.get('ratelimit')],
    [307, 'http://localhost/elsewhere', '"default";r=4;t=12'],
  );
});
