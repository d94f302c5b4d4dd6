// The service's parts, each alone: the admin token check, a body's decoding, an nginx subrequest's
// descriptors, and a gRPC call's message (its deadline and the pending-call budget).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EventEmitter } from 'node:events';
import type http2 from 'node:http2';
import { carriesToken } from '../operator/admin.js';
import { decodeBody } from './http-decode.js';
import { nginxRequest } from '../codecs/nginx-request.js';
import { PendingCalls, readMessage, unframe } from './grpc-message.js';
import { BadRequest } from '../codecs/rls-types.js';

test('carriesToken: Bearer or Basic (the token as the password), and nothing else', () => {
  const token = 'a-long-enough-token';
  assert.equal(carriesToken(`Bearer ${token}`, token), true);
  assert.equal(carriesToken(`bearer ${token}`, token), true);
  assert.equal(carriesToken(`Basic ${Buffer.from(`any:${token}`).toString('base64')}`, token), true);
  assert.equal(
    carriesToken(`Basic ${Buffer.from(`${token}:x`).toString('base64')}`, token),
    false,
    'the user name is not the password',
  );
  for (const h of [undefined, '', token, `Bearer ${token}x`, `Bearer ${token.slice(1)}`, `Token ${token}`])
    assert.equal(carriesToken(h, token), false, String(h));
});

test('decodeBody: the compact form, any JSON, and a BadRequest naming the problem', () => {
  assert.deepEqual(
    decodeBody('json', '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}]}]}', undefined)
      .descriptors[0]!.entries,
    [{ key: 'k', value: 'v' }],
  );
  assert.equal(decodeBody('check', '{"key": "u", "cost": 3}', 'api').descriptors[0]!.hitsAddend, 3);
  assert.throws(
    () => decodeBody('json', '{', undefined),
    (e: unknown) => e instanceof BadRequest && /^the body is not valid JSON/.test(e.message),
  );
  assert.throws(
    () => decodeBody('check', '{"key": "u", "cost": 4294967296}', 'api'),
    /'cost' must be a whole number from 0 to 4294967295, got 4294967296/,
  );
});

test('nginxRequest: a descriptor missing a header is skipped; none left is nothing to decide', () => {
  const specs = [
    [{ key: 'ip', header: 'x-real-ip' }],
    [
      { key: 'ip', header: 'x-real-ip' },
      { key: 'path', header: 'x-path' },
    ],
  ];
  assert.deepEqual(nginxRequest('web', specs, { 'x-real-ip': '1.2.3.4' }), {
    domain: 'web',
    descriptors: [{ entries: [{ key: 'ip', value: '1.2.3.4' }] }],
    hitsAddend: 0,
  });
  assert.equal(nginxRequest('web', specs, {}), undefined);
});

/** A stand-in for an HTTP/2 stream: what readMessage uses of one. */
class FakeStream extends EventEmitter {
  destroyed = false;
  closed = false;
  headersSent = false;
  sent: Record<string, unknown> | undefined;
  respond(headers: Record<string, unknown>): void {
    this.headersSent = true;
    this.sent = headers;
  }
  close(): void {
    this.closed = true;
    this.emit('close');
  }
}

test('readMessage: a whole message goes on; one that never ends is DEADLINE_EXCEEDED; past the budget, RESOURCE_EXHAUSTED', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const pending = new PendingCalls(1, 1024);
  const limits = { maxMessageBytes: 100, messageTimeoutMs: 500, pending };
  const whole = new FakeStream();
  let got: Buffer | undefined;
  readMessage(whole as unknown as http2.ServerHttp2Stream, 'identity', limits, (m) => (got = m));
  whole.emit('data', Buffer.from([0, 0, 0, 0, 1, 7]));
  whole.emit('end');
  assert.deepEqual(got, Buffer.from([7]));
  assert.deepEqual([pending.calls, pending.bytes], [0, 0]);

  const stuck = new FakeStream();
  readMessage(stuck as unknown as http2.ServerHttp2Stream, 'identity', limits, () => assert.fail('never whole'));
  stuck.emit('data', Buffer.from([0, 0, 0, 0, 9]));
  const refused = new FakeStream();
  readMessage(refused as unknown as http2.ServerHttp2Stream, 'identity', limits, () => assert.fail('over the budget'));
  assert.equal(refused.sent?.['grpc-status'], '8', 'one call over --grpc-max-pending-calls 1');
  t.mock.timers.tick(499);
  assert.equal(stuck.sent, undefined);
  t.mock.timers.tick(1);
  assert.equal(stuck.sent?.['grpc-status'], '4');
  assert.equal(stuck.closed, true, 'reset, so nothing of it stays');
  assert.deepEqual([pending.calls, pending.bytes], [0, 0]);
});

test('readMessage deadlines: calls still arriving time out oldest first, each at its own deadline; one that arrives whole leaves the list', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const pending = new PendingCalls(10, 1024);
  const limits = { maxMessageBytes: 100, messageTimeoutMs: 500, pending };
  const start = () => {
    const s = new FakeStream();
    readMessage(s as unknown as http2.ServerHttp2Stream, 'identity', limits, () => undefined);
    s.emit('data', Buffer.from([0, 0, 0, 0, 1]));
    return s;
  };
  const first = start();
  const whole = start();
  const second = start();
  whole.emit('data', Buffer.from([7]));
  whole.emit('end');
  assert.equal(pending.calls, 2);
  t.mock.timers.tick(500);
  assert.equal(first.sent?.['grpc-status'], '4', 'the oldest, at its deadline');
  assert.equal(second.sent, undefined, 'a newer one is not due yet');
  assert.equal(whole.sent, undefined, 'the one that arrived whole is not timed out');
  t.mock.timers.tick(500); // the timer is set again for the newer one's deadline, at most a timeout later
  assert.equal(second.sent?.['grpc-status'], '4');
  assert.deepEqual([pending.calls, pending.bytes], [0, 0]);
});

test("unframe: a compressed flag without grpc-encoding is the client's error, INVALID_ARGUMENT", () => {
  assert.throws(
    () => unframe(Buffer.from([1, 0, 0, 0, 1, 7]), 'identity', 100),
    (e: { code: number }) => e.code === 3,
  );
});

test("PendingCalls: one connection holds its share at most; at the total cap the fullest connection's oldest call gives way to another connection's, not to its own", () => {
  const pending = new PendingCalls(4, 1024, 3);
  const limits = { maxMessageBytes: 100, messageTimeoutMs: 0, pending };
  const on = (session: object) => {
    const s = Object.assign(new FakeStream(), { session });
    readMessage(s as unknown as http2.ServerHttp2Stream, 'identity', limits, () => assert.fail('never whole'));
    return s;
  };
  const a = { socket: { remoteAddress: '10.0.0.1' } };
  const b = { socket: { remoteAddress: '10.0.0.2' } };
  const c = { socket: { remoteAddress: '10.0.0.3' } };
  const fromA = [on(a), on(a), on(a)];
  const fourthOfA = on(a);
  assert.equal(fourthOfA.sent?.['grpc-status'], '8', 'over the per-connection share');
  assert.match(String(fourthOfA.sent?.['grpc-message']), /per-connection/);
  const fromB = on(b);
  assert.equal(pending.calls, 4);
  const fromC = on(c);
  assert.equal(fromC.sent, undefined, "a newcomer's call is taken at the total cap");
  assert.equal(fromA[0]!.sent?.['grpc-status'], '8', "the fullest connection's oldest call gave way");
  assert.equal(fromA[0]!.closed, true);
  assert.equal(fromA[1]!.sent, undefined);
  const secondOfB = on(b);
  assert.equal(
    secondOfB.sent?.['grpc-status'],
    '8',
    'A holds 2, B 1: no one is shed for B, whose own share is close to the fullest',
  );
  assert.deepEqual([pending.calls, pending.shed, fromB.sent], [4, 1, undefined]);
});

test("PendingCalls: at an address's share, its own fullest connection gives way, and other addresses keep theirs", () => {
  const pending = new PendingCalls(100, 1024, 100, 3);
  const limits = { maxMessageBytes: 100, messageTimeoutMs: 0, pending };
  const on = (session: object) => {
    const s = Object.assign(new FakeStream(), { session });
    readMessage(s as unknown as http2.ServerHttp2Stream, 'identity', limits, () => assert.fail('never whole'));
    return s;
  };
  const greedy = { socket: { remoteAddress: '2001:db8::1' } };
  const sameClient = { socket: { remoteAddress: '2001:db8::2' } }; // the same /64
  const other = { socket: { remoteAddress: '2001:db8:0:1::1' } };
  const held = [on(greedy), on(greedy), on(greedy)];
  const elsewhere = on(other);
  const mine = on(sameClient);
  assert.equal(mine.sent, undefined);
  assert.equal(held[0]!.sent?.['grpc-status'], '8');
  assert.equal(elsewhere.sent, undefined);
  assert.equal(pending.calls, 4);
});

test("PendingCalls bytes: past an address's byte share its own fullest connection gives up its largest call; past the total, the address holding the most does; the arriving call's own connection or address is refused instead", () => {
  // Budget 300 bytes, 200 from one address; calls may hold up to 100 bytes each.
  const pending = new PendingCalls(100, 300, 100, 100, 200);
  const limits = { maxMessageBytes: 95, messageTimeoutMs: 0, pending };
  const on = (session: object, bytes: number) => {
    const s = Object.assign(new FakeStream(), { session });
    readMessage(s as unknown as http2.ServerHttp2Stream, 'identity', limits, () => assert.fail('never whole'));
    s.emit('data', Buffer.alloc(bytes));
    return s;
  };
  const a1 = { socket: { remoteAddress: '10.0.0.1' } };
  const a2 = { socket: { remoteAddress: '10.0.0.1' } };
  const b = { socket: { remoteAddress: '10.0.0.2' } };
  const c = { socket: { remoteAddress: '10.0.0.3' } };
  const big = on(a1, 90);
  const small = on(a1, 60);
  const own = on(a1, 60); // a1 would hold 210 of its address's 200: its own connection is the fullest
  assert.match(String(own.sent?.['grpc-message']), /--grpc-max-pending-bytes-per-address/);
  assert.deepEqual([pending.bytes, big.sent, small.sent], [150, undefined, undefined]);
  const other = on(a2, 60); // a2 holds 60, a1 150: a1's largest call gives way
  assert.equal(other.sent, undefined);
  assert.equal(big.sent?.['grpc-status'], '8');
  assert.equal(big.closed, true);
  assert.match(String(big.sent?.['grpc-message']), /most bytes/);
  assert.deepEqual([pending.bytes, small.sent], [120, undefined]);
  const fromB = [on(b, 90), on(b, 90)];
  assert.equal(pending.bytes, 300);
  const fromC = on(c, 50); // past the total: B holds the most (180), C 50; B's largest gives way
  assert.equal(fromC.sent, undefined);
  assert.equal(fromB[0]!.sent?.['grpc-status'], '8');
  assert.deepEqual([pending.bytes, fromB[1]!.sent, small.sent, other.sent], [260, undefined, undefined, undefined]);
  const moreFromC = on(c, 50); // C would hold 100, A holds 120: A's fullest connection's largest call gives way
  assert.equal(moreFromC.sent, undefined);
  assert.equal(small.sent?.['grpc-status'], '8');
  assert.equal(pending.bytes, 250);
  const evenMoreFromC = on(c, 60); // C would hold 160, more than any other address: its call is refused
  assert.match(String(evenMoreFromC.sent?.['grpc-message']), /--grpc-max-pending-bytes\)/);
  assert.deepEqual(
    [pending.bytes, pending.shed, other.sent, fromB[1]!.sent, fromC.sent],
    [250, 3, undefined, undefined, undefined],
  );
  for (const s of [other, fromB[1]!, fromC, moreFromC]) s.close();
  assert.deepEqual([pending.calls, pending.bytes], [0, 0]);
});
