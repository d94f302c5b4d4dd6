// The gRPC transport on node:http2, driven by a raw HTTP/2 client so that every frame it answers with can be
// checked: framing, compression, errors as trailers-only answers, deadlines, and clients that misbehave.
// The Envoy-facing behaviour through a real gRPC client is in test/integration/serve-grpc.test.ts.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http2 from 'node:http2';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { deflateSync, gzipSync } from 'node:zlib';
import pino from 'pino';
import { GOLDEN_REQUEST } from '../../../test/support/rls-reference.js';
import {
  createGrpcServer,
  grpcMessage,
  GrpcStatus,
  HEALTH_CHECK_PATH,
  HEALTH_WATCH_PATH,
  SHOULD_RATE_LIMIT_PATH,
  timeoutMs,
} from './grpc.js';
import type { GrpcServer } from './grpc.js';
import { BadRequest, StoreUnavailable } from '../codecs/rls-types.js';
import type { RateLimitService } from '../service.js';
import type { RlsRequest, RlsResponse } from '../codecs/rls-types.js';

const REQUEST = GOLDEN_REQUEST;
const OK: RlsResponse = {
  overallCode: 'OK',
  statuses: [
    { code: 'OK', currentLimit: undefined, limitRemaining: 0, durationUntilResetMs: 0, rule: undefined, shadow: false },
  ],
  headers: [],
  retryAfterMs: 0,
};
const MAX = 1024;

/** A gRPC message: the compressed flag, the length (4 bytes, big-endian), the bytes. */
function withLength(message: Buffer, compressed: boolean): Buffer {
  const prefix = Buffer.alloc(5);
  prefix[0] = compressed ? 1 : 0;
  prefix.writeUInt32BE(message.length, 1);
  return Buffer.concat([prefix, message]);
}

/** What the service stub does with the next call. */
let behave: (req: RlsRequest) => RlsResponse | Promise<RlsResponse> = () => OK;
const calls: RlsRequest[] = [];
const stub = { shouldRateLimit: (req: RlsRequest) => (calls.push(req), behave(req)) } as unknown as RateLimitService;
/** What the health checks report. */
let serving: () => Promise<boolean> = async () => true;

interface Answer {
  status: number;
  grpcStatus: number | undefined;
  grpcMessage: string | undefined;
  /** The grpc-status was in the response headers: a trailers-only answer. */
  trailersOnly: boolean;
  data: Buffer;
}

let server: GrpcServer;
let session: http2.ClientHttp2Session;

function call(body: Buffer | Buffer[], headers: http2.OutgoingHttpHeaders = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = session.request({
      ':method': 'POST',
      ':path': SHOULD_RATE_LIMIT_PATH,
      'content-type': 'application/grpc',
      te: 'trailers',
      ...headers,
    });
    const chunks: Buffer[] = [];
    let head: http2.IncomingHttpHeaders = {};
    let tail: http2.IncomingHttpHeaders = {};
    req.on('response', (h) => (head = h));
    req.on('trailers', (t) => (tail = t));
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('error', reject);
    req.on('close', () => {
      const from = head['grpc-status'] !== undefined ? head : tail;
      resolve({
        status: Number(head[':status']),
        grpcStatus: from['grpc-status'] === undefined ? undefined : Number(from['grpc-status']),
        grpcMessage: from['grpc-message'] as string | undefined,
        trailersOnly: head['grpc-status'] !== undefined,
        data: Buffer.concat(chunks),
      });
    });
    for (const b of Array.isArray(body) ? body : [body]) req.write(b);
    req.end();
  });
}

describe('gRPC transport on node:http2', () => {
  before(async () => {
    server = createGrpcServer({
      service: () => stub,
      log: pino({ level: 'silent' }),
      maxMessageBytes: MAX,
      serving: () => serving(),
    });
    const port = await server.listen('127.0.0.1', 0);
    session = http2.connect(`http://127.0.0.1:${port}`);
  });
  after(async () => {
    session.close();
    await server.close();
  });

  test('a call gets headers, one length-prefixed message and grpc-status 0 in trailers; the request is decoded', async () => {
    behave = () => OK;
    calls.length = 0;
    const a = await call(withLength(REQUEST, false));
    assert.deepEqual([a.status, a.grpcStatus, a.trailersOnly], [200, 0, false]);
    assert.equal(a.data[0], 0);
    assert.equal(a.data.readUInt32BE(1), a.data.length - 5);
    assert.deepEqual(
      a.data.subarray(5),
      Buffer.from([0x08, 0x01, 0x12, 0x02, 0x08, 0x01]),
      'overall_code OK, one status with code OK',
    );
    assert.equal(calls[0]!.domain, 'bench');
    assert.deepEqual(calls[0]!.descriptors[0]!.entries, [{ key: 'remote_address', value: '10.0.0.1' }]);
  });

  test('a message split over several DATA frames is put back together', async () => {
    calls.length = 0;
    const whole = withLength(REQUEST, false);
    const a = await call([whole.subarray(0, 3), whole.subarray(3, 20), whole.subarray(20)]);
    assert.equal(a.grpcStatus, 0);
    assert.equal(calls[0]!.descriptors[0]!.entries[0]!.value, '10.0.0.1');
  });

  test('gzip and deflate messages are inflated; an unknown encoding is UNIMPLEMENTED and names the ones served', async () => {
    assert.equal((await call(withLength(gzipSync(REQUEST), true), { 'grpc-encoding': 'gzip' })).grpcStatus, 0);
    assert.equal((await call(withLength(deflateSync(REQUEST), true), { 'grpc-encoding': 'deflate' })).grpcStatus, 0);
    const snappy = await call(withLength(REQUEST, true), { 'grpc-encoding': 'snappy' });
    assert.deepEqual([snappy.grpcStatus, snappy.trailersOnly], [GrpcStatus.UNIMPLEMENTED, true]);
    assert.match(snappy.grpcMessage!, /snappy is not supported; use one of identity,deflate,gzip/);
    const unmarked = await call(withLength(REQUEST, true));
    assert.equal(
      unmarked.grpcStatus,
      GrpcStatus.INVALID_ARGUMENT,
      'compressed flag without grpc-encoding: the client is at fault',
    );
    const broken = await call(withLength(Buffer.from('not gzip'), true), { 'grpc-encoding': 'gzip' });
    assert.equal(broken.grpcStatus, GrpcStatus.INVALID_ARGUMENT);
    assert.match(broken.grpcMessage!, /does not inflate/);
  });

  test('regression: a small compressed message that inflates past the limit is RESOURCE_EXHAUSTED, not inflated whole', async () => {
    const bomb = gzipSync(Buffer.alloc(1_000_000));
    assert.ok(bomb.length < MAX);
    const a = await call(withLength(bomb, true), { 'grpc-encoding': 'gzip' });
    assert.equal(a.grpcStatus, GrpcStatus.RESOURCE_EXHAUSTED);
    assert.match(a.grpcMessage!, /inflates past the limit of 1024 bytes/);
  });

  test('framing errors are INVALID_ARGUMENT naming the problem; an oversized message is RESOURCE_EXHAUSTED', async () => {
    const cases: [Buffer, number, RegExp][] = [
      [Buffer.alloc(0), GrpcStatus.INVALID_ARGUMENT, /carried no RateLimitRequest/],
      [Buffer.from([0, 0, 0]), GrpcStatus.INVALID_ARGUMENT, /prefix is cut short: 3 of 5 bytes/],
      [withLength(REQUEST, false).subarray(0, 20), GrpcStatus.INVALID_ARGUMENT, /message is cut short: 15 of 37 bytes/],
      [
        Buffer.concat([withLength(REQUEST, false), withLength(REQUEST, false)]),
        GrpcStatus.INVALID_ARGUMENT,
        /exactly one message/,
      ],
      [
        Buffer.concat([Buffer.from([2]), withLength(REQUEST, false).subarray(1)]),
        GrpcStatus.INVALID_ARGUMENT,
        /compressed flag is 2/,
      ],
      [Buffer.from([0, 0, 1, 0, 0]), GrpcStatus.RESOURCE_EXHAUSTED, /larger than the limit of 1024 bytes/],
      [
        withLength(Buffer.alloc(MAX + 100), false),
        GrpcStatus.RESOURCE_EXHAUSTED,
        /larger than the limit of 1024 bytes/,
      ],
      [
        withLength(Buffer.from([0x0a, 0xff, 0xff, 0xff]), false),
        GrpcStatus.INVALID_ARGUMENT,
        /^malformed RateLimitRequest: /,
      ],
    ];
    for (const [body, code, message] of cases) {
      const a = await call(body);
      assert.deepEqual([a.status, a.grpcStatus, a.trailersOnly], [200, code, true], String(message));
      assert.match(a.grpcMessage!, message);
    }
  });

  test('another path is UNIMPLEMENTED, another method HTTP 405, another content-type HTTP 415', async () => {
    const other = await call(withLength(REQUEST, false), {
      ':path': '/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo',
    });
    assert.equal(other.grpcStatus, GrpcStatus.UNIMPLEMENTED);
    assert.match(other.grpcMessage!, /unknown method \/grpc.reflection.v1alpha.ServerReflection\/ServerReflectionInfo/);
    assert.equal((await call(Buffer.alloc(0), { ':method': 'PUT' })).status, 405);
    assert.equal((await call(withLength(REQUEST, false), { 'content-type': 'application/json' })).status, 415);
  });

  test("the service's errors map to gRPC codes, and grpc-message is percent-encoded UTF-8", async () => {
    behave = () => {
      throw new BadRequest("unknown domain 'dömäin 100%'");
    };
    const bad = await call(withLength(REQUEST, false));
    assert.equal(bad.grpcStatus, GrpcStatus.INVALID_ARGUMENT);
    assert.equal(bad.grpcMessage, "unknown domain 'd%C3%B6m%C3%A4in 100%25'");
    assert.equal(decodeURIComponent(bad.grpcMessage!), "unknown domain 'dömäin 100%'");
    behave = () => Promise.reject(new StoreUnavailable('the store could not decide: ECONNREFUSED'));
    assert.deepEqual([(await call(withLength(REQUEST, false))).grpcStatus], [GrpcStatus.UNAVAILABLE]);
    behave = () => {
      throw new TypeError('a bug');
    };
    const bug = await call(withLength(REQUEST, false));
    assert.deepEqual([bug.grpcStatus, bug.grpcMessage], [GrpcStatus.INTERNAL, 'internal error']);
    behave = () => OK;
  });

  test('an asynchronous decision still pending at grpc-timeout is DEADLINE_EXCEEDED, and its late answer is dropped', async () => {
    let settle: (r: RlsResponse) => void = () => {};
    behave = () => new Promise((resolve) => (settle = resolve));
    const a = await call(withLength(REQUEST, false), { 'grpc-timeout': '30m' });
    assert.equal(a.grpcStatus, GrpcStatus.DEADLINE_EXCEEDED);
    assert.match(a.grpcMessage!, /grpc-timeout of 30 ms/);
    settle(OK); // answering a stream that is already closed must not throw
    behave = () => Promise.resolve(OK);
    assert.equal((await call(withLength(REQUEST, false), { 'grpc-timeout': '5S' })).grpcStatus, 0, 'in time');
    behave = () => OK;
  });

  test('grpc.health.v1 Check: SERVING for the server and for the rate limit service, NOT_SERVING when not ready, NOT_FOUND for another service', async () => {
    const check = (service: string) => {
      const name = Buffer.from(service);
      return call(
        withLength(
          Buffer.concat([name.length === 0 ? Buffer.alloc(0) : Buffer.from([0x0a, name.length]), name]),
          false,
        ),
        { ':path': HEALTH_CHECK_PATH },
      );
    };
    const whole = await check('');
    assert.deepEqual([whole.grpcStatus, whole.data.subarray(5)], [0, Buffer.from([0x08, 0x01])]);
    assert.deepEqual(
      (await check('envoy.service.ratelimit.v3.RateLimitService')).data.subarray(5),
      Buffer.from([0x08, 0x01]),
    );
    const other = await check('some.Other');
    assert.deepEqual(
      [other.grpcStatus, other.grpcMessage],
      [
        GrpcStatus.NOT_FOUND,
        'unknown service some.Other; this server serves envoy.service.ratelimit.v3.RateLimitService',
      ],
    );
    serving = async () => false;
    assert.deepEqual((await check('')).data.subarray(5), Buffer.from([0x08, 0x02]), 'NOT_SERVING');
    serving = () => Promise.reject(new Error('the store is gone'));
    assert.deepEqual(
      (await check('')).data.subarray(5),
      Buffer.from([0x08, 0x02]),
      'a failing readiness test is NOT_SERVING',
    );
    serving = async () => true;
    const bad = await call(withLength(Buffer.from([0x0a, 0x05, 0x61]), false), { ':path': HEALTH_CHECK_PATH });
    assert.equal(bad.grpcStatus, GrpcStatus.INVALID_ARGUMENT);
    assert.match(bad.grpcMessage!, /^malformed HealthCheckRequest: /);
  });

  test('a client that resets its call mid-message leaves the server answering the next one', async () => {
    const req = session.request({
      ':method': 'POST',
      ':path': SHOULD_RATE_LIMIT_PATH,
      'content-type': 'application/grpc',
    });
    req.on('error', () => {});
    req.write(withLength(REQUEST, false).subarray(0, 10));
    await new Promise((r) => setTimeout(r, 20));
    req.close(http2.constants.NGHTTP2_CANCEL);
    await new Promise((r) => req.on('close', r));
    assert.equal((await call(withLength(REQUEST, false))).grpcStatus, 0);
  });

  test('a client that speaks HTTP/1.1 to the gRPC port loses its connection, not the server its process', async () => {
    const net = await import('node:net');
    const port = session.socket.remotePort!;
    await new Promise<void>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => s.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
      s.on('error', () => resolve());
      s.on('close', () => resolve());
      s.resume();
    });
    assert.equal((await call(withLength(REQUEST, false))).grpcStatus, 0);
  });
});

/** An open grpc.health.v1 Watch call: the statuses it has streamed, and how it ended. */
class WatchCall {
  readonly statuses: number[] = [];
  grpcStatus: number | undefined;
  readonly ended: Promise<void>;
  private waiting: (() => void) | undefined;
  private pending = Buffer.alloc(0);

  constructor(session: http2.ClientHttp2Session, service: string) {
    const name = Buffer.from(service);
    const req = session.request({
      ':method': 'POST',
      ':path': HEALTH_WATCH_PATH,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    this.req = req;
    req.on('error', () => {});
    // A refusal is a trailers-only answer: its grpc-status comes with the headers.
    req.on('response', (h) => h['grpc-status'] !== undefined && (this.grpcStatus = Number(h['grpc-status'])));
    req.on('trailers', (t) => (this.grpcStatus = Number(t['grpc-status'])));
    req.on('data', (c: Buffer) => {
      this.pending = Buffer.concat([this.pending, c]);
      while (this.pending.length >= 5 && this.pending.length >= 5 + this.pending.readUInt32BE(1)) {
        const length = this.pending.readUInt32BE(1);
        const message = this.pending.subarray(5, 5 + length);
        this.pending = this.pending.subarray(5 + length);
        assert.equal(message[0], 0x08, 'HealthCheckResponse.status, field 1, varint');
        this.statuses.push(message[1]!);
        this.waiting?.();
      }
    });
    this.ended = new Promise((resolve) => req.on('close', resolve));
    req.end(
      withLength(name.length === 0 ? Buffer.alloc(0) : Buffer.concat([Buffer.from([0x0a, name.length]), name]), false),
    );
  }

  private readonly req: http2.ClientHttp2Stream;

  /** Ends the call from the client's side (RST_STREAM CANCEL). */
  cancel(): void {
    this.req.close(http2.constants.NGHTTP2_CANCEL);
  }

  /** Resolves once `n` statuses have arrived. */
  async count(n: number): Promise<void> {
    while (this.statuses.length < n) await new Promise<void>((r) => (this.waiting = r));
  }
}

describe('grpc.health.v1 Watch', () => {
  test('streams the status at once, then each change and nothing else; NOT_SERVING and UNAVAILABLE when the server stops', async () => {
    let ready: boolean | Error = true;
    let asked = 0;
    let onAsk: (() => void) | undefined;
    /** Resolves after `serving` has been asked `n` more times: polls happen, and no message comes of them. */
    const polls = async (n: number) => {
      const until = asked + n;
      while (asked < until) await new Promise<void>((r) => (onAsk = r));
    };
    const watched = createGrpcServer({
      service: () => stub,
      log: pino({ level: 'silent' }),
      maxMessageBytes: MAX,
      serving: async () => {
        asked++;
        onAsk?.();
        if (ready instanceof Error) throw ready;
        return ready;
      },
      watchEveryMs: 2,
    });
    const port = await watched.listen('127.0.0.1', 0);
    const client = http2.connect(`http://127.0.0.1:${port}`);
    try {
      const whole = new WatchCall(client, '');
      await whole.count(1);
      assert.deepEqual(whole.statuses, [1], 'SERVING at once');
      await polls(3);
      assert.deepEqual(whole.statuses, [1], 'an unchanged status is not sent again');
      ready = false;
      await whole.count(2);
      ready = true;
      await whole.count(3);
      ready = new Error('the store is gone');
      await whole.count(4);
      assert.deepEqual(whole.statuses, [1, 2, 1, 2], 'each change, and a failing readiness test is NOT_SERVING');

      const rls = new WatchCall(client, 'envoy.service.ratelimit.v3.RateLimitService');
      await rls.count(1);
      assert.deepEqual(rls.statuses, [2], 'a new Watch starts from the current status');
      const other = new WatchCall(client, 'some.Other');
      await other.count(1);
      await polls(2);
      assert.deepEqual(
        [other.statuses, other.grpcStatus],
        [[3], undefined],
        'SERVICE_UNKNOWN, and the call stays open',
      );

      ready = true;
      await Promise.all([whole.count(5), rls.count(2)]);
      await watched.close();
      await Promise.all([whole.ended, rls.ended, other.ended]);
      assert.deepEqual(
        [whole.statuses, whole.grpcStatus],
        [[1, 2, 1, 2, 1, 2], GrpcStatus.UNAVAILABLE],
        'NOT_SERVING, then the call ends',
      );
      assert.deepEqual([rls.statuses, rls.grpcStatus], [[2, 1, 2], GrpcStatus.UNAVAILABLE]);
      assert.deepEqual([other.statuses, other.grpcStatus], [[3], GrpcStatus.UNAVAILABLE]);
    } finally {
      client.destroy();
      watched.destroy();
    }
  });

  test('the pending-call budget is checked when the server is made: a byte share of 0 is refused, naming the option', () => {
    const make = (maxPendingBytesPerAddress: number) =>
      createGrpcServer({
        service: () => stub,
        log: pino({ level: 'silent' }),
        maxMessageBytes: MAX,
        serving: async () => true,
        maxPendingBytesPerAddress,
      });
    assert.throws(() => make(0), /createGrpcServer 'maxPendingBytesPerAddress' must be a positive integer, got 0/);
    assert.throws(() => make(1.5), /createGrpcServer 'maxPendingBytesPerAddress' must be a positive integer, got 1.5/);
    make(1).destroy();
  });

  test('past maxWatches open Watch calls, one more is RESOURCE_EXHAUSTED, and a freed place can be taken again', async () => {
    const capped = createGrpcServer({
      service: () => stub,
      log: pino({ level: 'silent' }),
      maxMessageBytes: MAX,
      serving: async () => true,
      watchEveryMs: 1000,
      maxWatches: 2,
    });
    const port = await capped.listen('127.0.0.1', 0);
    const client = http2.connect(`http://127.0.0.1:${port}`);
    try {
      const [a, b] = [new WatchCall(client, ''), new WatchCall(client, '')];
      await Promise.all([a.count(1), b.count(1)]);
      const refused = new WatchCall(client, '');
      await refused.ended;
      assert.deepEqual([refused.statuses, refused.grpcStatus], [[], GrpcStatus.RESOURCE_EXHAUSTED]);
      a.cancel();
      await a.ended;
      const again = new WatchCall(client, '');
      await again.count(1);
      assert.deepEqual(again.statuses, [1]);
    } finally {
      client.destroy();
      capped.destroy();
    }
  });

  test('a Watch the client cancels is forgotten: the server closes at once and answers other calls meanwhile', async () => {
    const watched = createGrpcServer({
      service: () => stub,
      log: pino({ level: 'silent' }),
      maxMessageBytes: MAX,
      serving: async () => true,
      watchEveryMs: 2,
    });
    const port = await watched.listen('127.0.0.1', 0);
    const client = http2.connect(`http://127.0.0.1:${port}`);
    try {
      const w = new WatchCall(client, '');
      await w.count(1);
      // A second Watch, cancelled at its first message (RST_STREAM, as a gRPC client sends when its
      // channel stops health checking); the first stays open to the end.
      const cancelled = new Promise<void>((resolve) => {
        const req = client.request({
          ':method': 'POST',
          ':path': HEALTH_WATCH_PATH,
          'content-type': 'application/grpc',
          te: 'trailers',
        });
        req.on('error', () => {});
        req.on('data', () => req.close(http2.constants.NGHTTP2_CANCEL));
        req.on('close', () => resolve());
        req.end(withLength(Buffer.alloc(0), false));
      });
      await cancelled;
      const a = await new Promise<number>((resolve) => {
        const req = client.request({
          ':method': 'POST',
          ':path': SHOULD_RATE_LIMIT_PATH,
          'content-type': 'application/grpc',
          te: 'trailers',
        });
        req.on('trailers', (t) => resolve(Number(t['grpc-status'])));
        req.resume();
        req.end(withLength(REQUEST, false));
      });
      assert.equal(a, 0);
      await watched.close();
      await w.ended;
      assert.equal(w.grpcStatus, GrpcStatus.UNAVAILABLE);
    } finally {
      client.destroy();
      watched.destroy();
    }
  });
});

test('a connection with no call in flight for --grpc-max-connection-idle-ms gets GOAWAY; a call in flight holds the idle clock', async () => {
  const idle = createGrpcServer({
    service: () => stub,
    log: pino({ level: 'silent' }),
    maxMessageBytes: MAX,
    serving: async () => true,
    maxConnectionIdleMs: 400,
  });
  const port = await idle.listen('127.0.0.1', 0);
  const client = http2.connect(`http://127.0.0.1:${port}`);
  try {
    const t0 = Date.now();
    const goaway = new Promise<number>((resolve) => client.once('goaway', () => resolve(Date.now() - t0)));
    // A Watch is a call in flight for as long as it is open: no GOAWAY while it is.
    const w = new WatchCall(client, '');
    await w.count(1);
    await new Promise((r) => setTimeout(r, 700));
    assert.equal(client.closed, false, 'an open call keeps the connection');
    w.cancel();
    const after = await goaway;
    assert.ok(after >= 700, `GOAWAY ${after} ms after connecting, once the call had ended`);
  } finally {
    client.destroy();
    idle.destroy();
  }
});

test('a connection that opens no call within firstCallTimeoutMs (--headers-timeout-ms) is closed', async () => {
  const strict = createGrpcServer({
    service: () => stub,
    log: pino({ level: 'silent' }),
    maxMessageBytes: MAX,
    serving: async () => true,
    firstCallTimeoutMs: 300,
  });
  const port = await strict.listen('127.0.0.1', 0);
  const client = http2.connect(`http://127.0.0.1:${port}`);
  client.on('error', () => {});
  try {
    const t0 = Date.now();
    await new Promise<void>((resolve) => client.once('close', () => resolve()));
    assert.ok(Date.now() - t0 >= 250, `closed after ${Date.now() - t0} ms`);
  } finally {
    client.destroy();
    strict.destroy();
  }
});

test('a connection past its maximum age gets GOAWAY, keeps its call in flight until the grace runs out, then is cut; a new connection is served', async () => {
  const aging = createGrpcServer({
    service: () => stub,
    log: pino({ level: 'silent' }),
    maxMessageBytes: MAX,
    serving: async () => true,
    watchEveryMs: 1000,
    maxConnectionAgeMs: 500,
    maxConnectionAgeGraceMs: 300,
  });
  const port = await aging.listen('127.0.0.1', 0);
  const client = http2.connect(`http://127.0.0.1:${port}`);
  try {
    const goaway = new Promise<number>((resolve) => client.once('goaway', (code: number) => resolve(code)));
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
    // A Watch stays open: it is the call in flight that only the grace period ends. (The age is long enough
    // for the Watch to be open well before the GOAWAY, even on a loaded machine.)
    const w = new WatchCall(client, '');
    await w.count(1);
    assert.equal(await goaway, http2.constants.NGHTTP2_NO_ERROR, 'GOAWAY, not an error');
    await closed;
    await w.ended;
    assert.deepEqual(w.statuses, [1]);
    // A new connection is served as usual.
    const again = http2.connect(`http://127.0.0.1:${port}`);
    const status = await new Promise<number>((resolve) => {
      const req = again.request({
        ':method': 'POST',
        ':path': SHOULD_RATE_LIMIT_PATH,
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      req.on('trailers', (t) => resolve(Number(t['grpc-status'])));
      req.resume();
      req.end(withLength(REQUEST, false));
    });
    again.destroy();
    assert.equal(status, 0);
  } finally {
    client.destroy();
    aging.destroy();
  }
});

describe('gRPC over TLS', () => {
  const fixture = (name: string) =>
    readFileSync(fileURLToPath(new URL(`../../../test/fixtures/tls/${name}`, import.meta.url)));
  const CA = fixture('ca.pem');
  const SERVER = { cert: fixture('server.pem'), key: fixture('server.key') };
  const CLIENT = { cert: fixture('client.pem'), key: fixture('client.key') };
  const ROGUE = { cert: fixture('rogue.pem'), key: fixture('rogue.key') };

  /** One ShouldRateLimit call on a fresh TLS connection: its grpc-status, or the connection's error. */
  function tlsCall(port: number, options: http2.SecureClientSessionOptions): Promise<number | Error> {
    return new Promise((resolve) => {
      const s = http2.connect(`https://127.0.0.1:${port}`, { ca: CA, ...options });
      s.on('error', (e) => resolve(e));
      const req = s.request({
        ':method': 'POST',
        ':path': SHOULD_RATE_LIMIT_PATH,
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      req.on('error', (e) => resolve(e));
      req.on('trailers', (t) => resolve(Number(t['grpc-status'])));
      // Under TLS 1.3 a refused client certificate may only show as the call closing with no answer.
      req.on('close', () => {
        resolve(new Error('the call closed without a status'));
        s.close();
      });
      s.on('close', () => resolve(new Error('the connection closed without a status')));
      req.resume();
      req.end(withLength(REQUEST, false));
    });
  }

  test('with a certificate and key, calls are served over TLS and a plain-text client gets nowhere', async () => {
    const secure = createGrpcServer({
      service: () => stub,
      log: pino({ level: 'silent' }),
      maxMessageBytes: MAX,
      serving: async () => true,
      tls: SERVER,
    });
    const port = await secure.listen('127.0.0.1', 0);
    try {
      behave = () => OK;
      assert.equal(await tlsCall(port, {}), 0);
      const plain = await new Promise<unknown>((resolve) => {
        const s = http2.connect(`http://127.0.0.1:${port}`);
        s.on('error', resolve);
        s.on('close', () => resolve('closed'));
        const req = s.request({
          ':method': 'POST',
          ':path': SHOULD_RATE_LIMIT_PATH,
          'content-type': 'application/grpc',
        });
        req.on('error', () => {});
        req.on('response', () => resolve('answered'));
        req.end(withLength(REQUEST, false));
      });
      assert.notEqual(plain, 'answered');
      assert.throws(
        () => secure.setTls({ cert: Buffer.from('not a certificate'), key: SERVER.key }),
        /PEM|certificate|no start line/i,
      );
      assert.equal(await tlsCall(port, {}), 0, 'a rejected rotation keeps the certificate in use');
      secure.setTls(SERVER);
      assert.equal(await tlsCall(port, {}), 0, 'a rotation applies to new connections');
    } finally {
      secure.destroy();
    }
  });

  test('with a client CA, only clients holding a certificate it signed get through (mutual TLS)', async () => {
    const mutual = createGrpcServer({
      service: () => stub,
      log: pino({ level: 'silent' }),
      maxMessageBytes: MAX,
      serving: async () => true,
      tls: { ...SERVER, clientCa: CA },
    });
    const port = await mutual.listen('127.0.0.1', 0);
    try {
      behave = () => OK;
      assert.equal(await tlsCall(port, CLIENT), 0);
      assert.ok((await tlsCall(port, {})) instanceof Error, 'no client certificate');
      assert.ok((await tlsCall(port, ROGUE)) instanceof Error, 'a certificate from another CA');
    } finally {
      mutual.destroy();
    }
  });

  test('setTls on a server started without TLS says how to get TLS', () => {
    const plain = createGrpcServer({
      service: () => stub,
      log: pino({ level: 'silent' }),
      maxMessageBytes: MAX,
      serving: async () => true,
    });
    assert.throws(
      () => plain.setTls(SERVER),
      /started without TLS; restart it with --grpc-tls-cert and --grpc-tls-key/,
    );
  });
});

test('grpc-timeout is read in every unit, at least 1 ms; malformed values mean no deadline', () => {
  assert.deepEqual(
    ['2H', '3M', '4S', '250m', '1500u', '2000000n', '1n'].map(timeoutMs),
    [7_200_000, 180_000, 4000, 250, 2, 2, 1],
  );
  assert.deepEqual(
    [undefined, '', '10', '123456789S', '1.5S', '10x', ['1S']].map((v) => timeoutMs(v as never)),
    [undefined, undefined, undefined, undefined, undefined, undefined, undefined],
  );
  // The last value is kept: the same one again, a malformed one between, then another.
  assert.deepEqual(['20m', '20m', '10x', '10x', '20m', '4S'].map(timeoutMs), [20, 20, undefined, undefined, 20, 4000]);
});

test('grpcMessage leaves printable ASCII alone and percent-encodes the rest, % included', () => {
  assert.equal(grpcMessage("unknown domain 'x'"), "unknown domain 'x'");
  assert.equal(grpcMessage('50% \r\n é'), '50%25 %0D%0A %C3%A9');
});
