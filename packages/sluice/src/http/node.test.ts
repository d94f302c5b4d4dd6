// NodeHeaders.setTrustedHeader must be indistinguishable from ServerResponse.setHeader: the same fields,
// names and values through every public accessor, the same overrides and removals by the handler, the same
// bytes on the wire, and setHeader itself when headers were sent or setHeader is wrapped.
import assert from 'node:assert/strict';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { test } from 'node:test';
import { HttpRateLimiter, type Outcome } from './engine.js';
import { HEADER_STYLES } from './headers.js';
import { NodeHeaders, NodeRequestInfo } from './node.js';

function response(): ServerResponse {
  const req = new IncomingMessage(new Socket());
  req.method = 'GET';
  return new ServerResponse(req);
}

/** Applies the same steps through setHeader and through setTrustedHeader, and compares what a handler sees. */
function same(steps: (res: ServerResponse, set: (name: string, value: string) => void) => void): void {
  const a = response();
  const b = response();
  steps(a, (n, v) => a.setHeader(n, v));
  const target = new NodeHeaders(b);
  steps(b, (n, v) => target.setTrustedHeader(n, v));
  for (const res of [a, b]) if (!res.headersSent) res.writeHead(200);
  assert.deepEqual(b.getHeaders(), a.getHeaders());
  assert.deepEqual(b.getHeaderNames(), a.getHeaderNames());
  const raw = (res: ServerResponse) => (res as unknown as { getRawHeaderNames(): string[] }).getRawHeaderNames(); // untyped in @types/node 20
  assert.deepEqual(raw(b), raw(a));
  assert.equal(
    (b as unknown as { _header: string })._header.replace(/Date: .*\r\n/, ''),
    (a as unknown as { _header: string })._header.replace(/Date: .*\r\n/, ''),
  );
}

test('trusted fields read, override, remove and serialize as setHeader fields do', () => {
  same((_res, set) => {
    set('ratelimit-policy', '10;w=60');
    set('ratelimit', 'limit=10, remaining=9, reset=6');
  });
  same((res, set) => {
    set('ratelimit', 'limit=10, remaining=9, reset=6');
    assert.equal(res.getHeader('RateLimit'), 'limit=10, remaining=9, reset=6');
    assert.equal(res.hasHeader('ratelimit'), true);
    assert.equal(res.hasHeader('constructor'), false);
    assert.equal(res.hasHeader('__proto__'), false);
    assert.equal(res.getHeader('toString'), undefined);
    res.setHeader('Content-Type', 'text/plain');
    res.setHeader('RateLimit', 'overridden by the handler');
    res.removeHeader('ratelimit-policy');
  });
  same((res, set) => {
    set('retry-after', '5');
    res.removeHeader('retry-after');
    res.setHeader('__proto__', 'x');
    res.setHeader('constructor', 'y');
  });
  same((res, set) => {
    set('ratelimit', 'limit=1, remaining=0, reset=1');
    res.writeHead(429, { 'Content-Type': 'text/plain', RateLimit: 'from writeHead' });
  });
  same((res, set) => {
    set('ratelimit', 'a');
    res.writeHead(200, ['x-one', '1', 'ratelimit', 'b', 'x-one', '2']);
  });
  // Trusted fields mixed with the handler's own, before and after.
  same((res, set) => {
    set('ratelimit', 'a');
    res.removeHeader('ratelimit');
    set('ratelimit-policy', 'b');
    res.setHeader('X-After', '1');
    set('retry-after', '3');
  });
  same((res, set) => {
    res.setHeader('X-Before', '1'); // Node's own store exists before the first trusted field
    set('ratelimit', 'a');
    set('ratelimit-policy', 'b');
  });
});

test('every field of every style, allowed and refused, lands as setHeader puts it (node.ts gives each name its own store)', () => {
  const names = new Set<string>();
  for (const style of HEADER_STYLES) {
    const engine = new HttpRateLimiter<IncomingMessage>(
      { policy: { algorithm: 'gcra', limit: 1, window: '1m' }, headers: style, key: () => 'k' },
      'test',
    );
    const req = new IncomingMessage(new Socket());
    for (const refused of [false, true]) {
      const o = engine.check(req, new NodeRequestInfo(req)) as Outcome<IncomingMessage>;
      assert.equal(o.limited, refused);
      // Rendered once and replayed on both sides: legacy's reset reads the wall clock.
      const fields: [string, string][] = [];
      const record = (n: string, v: string) => void fields.push([n, v]);
      engine.writeHeaders(o, { setHeader: record, setTrustedHeader: record });
      same((_res, set) => {
        for (const [n, v] of fields) set(n, v);
      });
      for (const [n] of fields) names.add(n);
    }
  }
  assert.deepEqual([...names].sort(), [
    'ratelimit',
    'ratelimit-limit',
    'ratelimit-policy',
    'ratelimit-remaining',
    'ratelimit-reset',
    'retry-after',
    'x-ratelimit-limit',
    'x-ratelimit-remaining',
    'x-ratelimit-reset',
    'x-ratelimit-resource',
    'x-ratelimit-used',
  ]);
});

test('after headers are sent, or with setHeader wrapped, it is setHeader', () => {
  const sent = response();
  sent.writeHead(200);
  assert.throws(() => new NodeHeaders(sent).setTrustedHeader('ratelimit', 'x'), { code: 'ERR_HTTP_HEADERS_SENT' });

  const wrapped = response();
  const seen: string[] = [];
  const original = wrapped.setHeader.bind(wrapped);
  wrapped.setHeader = (name: string, value: number | string | readonly string[]) => {
    seen.push(name);
    return original(name, value);
  };
  new NodeHeaders(wrapped).setTrustedHeader('ratelimit', 'x');
  assert.deepEqual(seen, ['ratelimit']);
  assert.equal(wrapped.getHeader('ratelimit'), 'x');
});

test('the same response bytes on a real server', async () => {
  const server = createServer((req, res) => {
    const target = new NodeHeaders(res);
    if (req.url === '/trusted') {
      target.setTrustedHeader('ratelimit-policy', '10;w=60');
      target.setTrustedHeader('ratelimit', 'limit=10, remaining=9, reset=6');
    } else {
      res.setHeader('ratelimit-policy', '10;w=60');
      res.setHeader('ratelimit', 'limit=10, remaining=9, reset=6');
    }
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.end('ok');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  try {
    const [a, b] = await Promise.all(['/plain', '/trusted'].map((p) => fetch(`http://127.0.0.1:${port}${p}`)));
    assert.deepEqual(
      [...b!.headers].filter(([k]) => k !== 'date'),
      [...a!.headers].filter(([k]) => k !== 'date'),
    );
    assert.equal(await b!.text(), await a!.text());
  } finally {
    server.close();
  }
});

test("on this Node the trusted path is taken: the header store is the fast one, not setHeader's", () => {
  new NodeHeaders(response()).setTrustedHeader('ratelimit', 'x'); // the first field ever goes through setHeader, which shows where Node keeps it
  const res = response();
  new NodeHeaders(res).setTrustedHeader('ratelimit', 'x');
  const own = res as unknown as Record<symbol, object>;
  const sym = Object.getOwnPropertySymbols(own).find((s) => s.description === 'kOutHeaders');
  assert.ok(sym !== undefined);
  assert.notEqual(Object.getPrototypeOf(own[sym]), null); // setHeader's store has a null prototype
  assert.equal(res.getHeader('ratelimit'), 'x');
});

test("NodeRequestInfo reads a socket's peer address once per socket, and none from a socket without one", () => {
  const socket = new Socket();
  let reads = 0;
  Object.defineProperty(socket, 'remoteAddress', { get: () => (reads++, '203.0.113.9') });
  for (let i = 0; i < 3; i++)
    assert.equal(new NodeRequestInfo(new IncomingMessage(socket)).remoteAddress, '203.0.113.9');
  assert.equal(reads, 1); // node.ts: reaching Node's own cache of it costs more than a WeakMap lookup
  const unconnected = new Socket();
  assert.equal(new NodeRequestInfo(new IncomingMessage(unconnected)).remoteAddress, undefined);
  assert.equal(new NodeRequestInfo(new IncomingMessage(unconnected)).remoteAddress, undefined); // not cached as absent
});
