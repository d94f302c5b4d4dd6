// Issue 28, findings 1-3, on the real service over loopback: deep JSON answered 500, slow clients held
// their sockets (headersTimeout 66 s, no cap on connections), and an impossible cost got a Retry-After
// that could never be kept.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import http2 from 'node:http2';
import { post, rlsClient, start, TempConfig } from '../integration/serve-helpers.js';
import type { LogSink } from '../integration/serve-helpers.js';
import type { RunningService } from '../../src/server/serve.js';

const cfg = new TempConfig(`domain: api
descriptors:
  - key: key
    rate_limit: { unit: minute, requests_per_unit: 10 }
  - key: user
    rate_limit: { unit: minute, requests_per_unit: 10, algorithm: token-bucket }
`);

/** Opens a raw TCP connection and resolves with how long it stayed open (ms) and what it was sent. */
function held(port: number, onOpen: (s: Socket) => void = () => {}): Promise<{ ms: number; got: string }> {
  return new Promise((resolve) => {
    const t0 = Date.now();
    let got = '';
    const s = connect(port, '127.0.0.1', () => onOpen(s));
    s.on('data', (d) => (got += d.toString()));
    s.on('error', () => {});
    s.on('close', () => resolve({ ms: Date.now() - t0, got }));
  });
}

/** Keeps the process from ending early, as a socket's own timers are unref'd nowhere here. */
const nap = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('issue 28 on sluice serve', () => {
  let svc: RunningService;
  let logs: LogSink;
  before(async () => {
    ({ svc, logs } = await start(
      cfg.path,
      { name: 'memory', settings: {} },
      {
        headersTimeoutMs: 600,
        requestTimeoutMs: 1200,
        keepAliveTimeoutMs: 1000,
        maxConnections: 20,
        grpcMaxConnectionIdleMs: 0,
      },
    ));
  });
  after(async () => {
    await svc.close();
    cfg.remove();
  });

  test('deep JSON answers 500: 16,000 nested arrays on /json and a deep key on /v1/check are 400s that name the depth', async () => {
    const deep = '['.repeat(16_000) + ']'.repeat(16_000);
    const a = await post(svc.httpPort, '/json', deep);
    assert.equal(a.status, 400);
    assert.match(a.json.error, /nests objects and lists deeper than 5 levels/);
    const b = await post(svc.httpPort, '/v1/check', `{"key": ${deep}}`);
    assert.equal(b.status, 400);
    assert.match(b.json.error, /deeper than 5 levels/);
    const c = await post(
      svc.httpPort,
      '/json',
      `{"domain":"api","descriptors":[{"entries":[{"key":"key","value":${'{"a":'.repeat(3000)}1${'}'.repeat(3000)}}]}]}`,
    );
    assert.equal(c.status, 400);
    assert.ok(!logs.lines.some((l) => (l.level as number) > 40), 'nothing logged above warn');
  });

  test('deep JSON answers 500: long and odd values are 400s naming the bound', async () => {
    const many = {
      domain: 'api',
      descriptors: Array.from({ length: 65 }, (_, i) => ({ entries: [{ key: 'key', value: `v${i}` }] })),
    };
    const a = await post(svc.httpPort, '/json', many);
    assert.equal(a.status, 400);
    assert.equal(a.json.error, `'descriptors' holds 65 descriptors; a request holds at most 64`);
    const long = await post(svc.httpPort, '/v1/check', { key: 'x'.repeat(5000) });
    assert.equal(long.status, 400);
    assert.match(long.json.error, /'value' is 5000 characters long; at most 4096/);
    const wide = await post(svc.httpPort, '/json', {
      domain: 'api',
      descriptors: [{ entries: [{ key: 'key', value: { big: 'y'.repeat(10_000) } }] }],
    });
    assert.equal(wide.status, 400);
    assert.ok(
      wide.json.error.length < 300,
      `the message quotes the value cut short (${wide.json.error.length} characters)`,
    );
    const nginx = await fetch(`http://127.0.0.1:${svc.httpPort}/nginx/%E0%A4%A`);
    assert.equal(nginx.status, 400);
  });

  test('slowloris: a connection that has not sent its headers by --headers-timeout-ms is closed', async () => {
    const silent = held(svc.httpPort);
    // One byte a while, never finishing the headers.
    const trickle = held(svc.httpPort, (s) => {
      s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
      const t = setInterval(() => (s.writable ? s.write('X-A: b\r\n') : clearInterval(t)), 100);
      s.once('close', () => clearInterval(t));
    });
    const [a, b] = await Promise.all([silent, trickle]);
    assert.ok(a.ms >= 500 && a.ms < 3000, `a silent connection was closed after ${a.ms} ms (headers timeout 600)`);
    assert.ok(b.ms >= 500 && b.ms < 3000, `a trickling connection was closed after ${b.ms} ms (headers timeout 600)`);
    assert.match(b.got, /^HTTP\/1\.1 408/);
  });

  test('slowloris: the gRPC listener closes a connection that opens no call by the headers timeout', async () => {
    const r = await held(svc.grpcPort!);
    assert.ok(r.ms >= 500 && r.ms < 3000, `closed after ${r.ms} ms`);
  });

  test('slowloris: the connection cap (--max-connections) holds on HTTP and gRPC', async () => {
    for (const port of [svc.httpPort, svc.grpcPort!]) {
      const sockets: Socket[] = [];
      const closedAt: number[] = [];
      const t0 = Date.now();
      for (let i = 0; i < 30; i++) {
        const s = connect(port, '127.0.0.1');
        // Read: a gRPC connection closed to make room (issue 45) was first sent the server's SETTINGS, and
        // a socket that never reads them never sees the close behind them.
        s.resume();
        s.on('error', () => {});
        s.on('close', () => closedAt.push(Date.now() - t0));
        sockets.push(s);
      }
      await nap(250); // well inside the headers timeout: only the cap closes anything yet
      // fetch's own pooled keep-alive connections from the tests above count against the cap too.
      const open = 30 - closedAt.length;
      assert.ok(open <= 20 && open >= 15, `port ${port}: 30 connections against a cap of 20 left ${open} open`);
      for (const s of sockets) s.destroy();
      await nap(50);
    }
    // The cap counts open connections: once they are gone, a request is served again.
    const ok = await fetch(`http://127.0.0.1:${svc.httpPort}/healthz`);
    assert.equal(ok.status, 200);
  });

  test('an impossible cost in the service: more hits than the rule admits is 429 with reason cost-exceeds-capacity and no Retry-After', async () => {
    const check = await post(svc.httpPort, '/v1/check', { key: 'impossible', cost: 11 });
    assert.equal(check.status, 429);
    assert.equal(check.headers.get('retry-after'), null);
    assert.equal(check.json.reason, 'cost-exceeds-capacity');
    assert.equal(check.json.statuses[0].reason, 'cost-exceeds-capacity');
    assert.equal(check.json.retryAfterMs, 0);
    const json = await post(svc.httpPort, '/json', {
      domain: 'api',
      descriptors: [{ entries: [{ key: 'user', value: 'u' }] }],
      hits_addend: 11,
    });
    assert.equal(json.status, 429);
    assert.equal(json.headers.get('retry-after'), null);
    assert.equal(json.json.overallCode, 'OVER_LIMIT');
    assert.equal(json.json.statuses[0].reason, 'cost-exceeds-capacity');
    assert.ok(!json.json.responseHeadersToAdd.some((h: { key: string }) => h.key === 'Retry-After'));
    // A cost the rule can admit is an ordinary decision, with a Retry-After once denied.
    assert.equal((await post(svc.httpPort, '/v1/check', { key: 'possible', cost: 10 })).status, 200);
    const denied = await post(svc.httpPort, '/v1/check', { key: 'possible', cost: 10 });
    assert.equal(denied.status, 429);
    assert.equal(denied.json.reason, undefined);
    assert.notEqual(denied.headers.get('retry-after'), null);
  });

  test("an impossible cost in the service: gRPC keeps Envoy's answer, OVER_LIMIT, with no Retry-After header", async () => {
    const client = rlsClient(svc.grpcPort!);
    try {
      const r = await client.call({
        domain: 'api',
        descriptors: [{ entries: [{ key: 'user', value: 'g' }] }],
        hits_addend: 11,
      });
      assert.equal(r.overall_code, 'OVER_LIMIT');
      assert.ok(!(r.response_headers_to_add ?? []).some((h: { key: string }) => h.key === 'Retry-After'));
    } finally {
      client.close();
    }
  });

  test('the gRPC listener advertises --grpc-max-concurrent-streams', async () => {
    const session = http2.connect(`http://127.0.0.1:${svc.grpcPort}`);
    try {
      const settings = await new Promise<http2.Settings>((resolve) => session.once('remoteSettings', resolve));
      assert.equal(settings.maxConcurrentStreams, 1000);
    } finally {
      session.destroy();
    }
  });
});
