// BodyRequest takes a body from node:http's parser pushes instead of the Readable stream: these pin what the
// stream used to guarantee. Bodies split over packets and chunked bodies arrive whole, an oversized body gets
// 413 after being drained so the connection goes on, pipelined requests are answered in order, a client
// that leaves mid-body costs nothing, and a request that is not a BodyRequest is still read from its stream.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { IncomingMessage, Server } from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { BodyRequest, readBody } from './body-request.js';

const MAX = 64;

/** Counts the chunks the parser pushed, and lets a test wait for the next one before it writes more. */
class CountingRequest extends BodyRequest {
  static pushed: ((chunk: Buffer | null) => void) | undefined;
  chunks = 0;
  override push(chunk: Buffer | null, encoding?: BufferEncoding): boolean {
    if (chunk !== null) this.chunks++;
    CountingRequest.pushed?.(chunk);
    return super.push(chunk, encoding);
  }
}
const nextPush = () => new Promise<void>((resolve) => (CountingRequest.pushed = () => resolve()));

/** Echoes what readBody gave: {text, chunks, stream: whether it read the stream}, or 413. Records requests whose body never completed. */
function echoServer(options: { IncomingMessage?: typeof IncomingMessage }): { server: Server; unanswered: Set<IncomingMessage> } {
  const unanswered = new Set<IncomingMessage>();
  const server = createServer(options, (req, res) => {
    unanswered.add(req);
    readBody(req, MAX, (text) => {
      unanswered.delete(req);
      const body = text === undefined ? '{"error":"too large"}' : JSON.stringify({ text, chunks: req instanceof CountingRequest ? req.chunks : undefined, stream: req.listenerCount('data') > 0 });
      res.writeHead(text === undefined ? 413 : 200, { 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  return { server, unanswered };
}

/** A raw keep-alive connection that parses Content-Length-framed answers. */
function connect(port: number) {
  const s = net.connect(port, '127.0.0.1');
  s.setNoDelay(true);
  let buf = Buffer.alloc(0);
  let waiting: (() => void) | undefined;
  s.on('data', (d) => {
    buf = Buffer.concat([buf, d]);
    waiting?.();
  });
  const answer = async (): Promise<{ status: number; body: any }> => {
    for (;;) {
      const h = buf.indexOf('\r\n\r\n');
      if (h >= 0) {
        const head = buf.subarray(0, h).toString('latin1');
        const end = h + 4 + Number(/content-length: (\d+)/i.exec(head)![1]);
        if (buf.length >= end) {
          const body = JSON.parse(buf.subarray(h + 4, end).toString());
          buf = buf.subarray(end);
          return { status: Number(head.slice(9, 12)), body };
        }
      }
      await new Promise<void>((r) => (waiting = r));
    }
  };
  return { socket: s, write: (b: string | Buffer) => s.write(b), answer, ready: new Promise((r) => s.once('connect', r)) };
}

const post = (body: string, headers = `content-length: ${Buffer.byteLength(body)}\r\n`) => `POST /json HTTP/1.1\r\nhost: x\r\n${headers}\r\n${body}`;

describe('readBody on a BodyRequest', () => {
  const { server, unanswered } = echoServer({ IncomingMessage: CountingRequest });
  let port: number;
  before(() => new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r())));
  before(() => void (port = (server.address() as AddressInfo).port));
  after(() => new Promise<void>((r) => server.close(() => r())));

  test('a body split over packets arrives whole, a UTF-8 character split between them too', async () => {
    const c = connect(port);
    await c.ready;
    const body = Buffer.from('{"a":"été"}');
    const cut = body.indexOf(0xa9); // inside the first é, between its two bytes
    c.write(`POST /json HTTP/1.1\r\nhost: x\r\ncontent-length: ${body.length}\r\n\r\n`);
    let pushed = nextPush();
    c.write(body.subarray(0, cut));
    await pushed;
    pushed = nextPush();
    c.write(body.subarray(cut, cut + 3));
    await pushed;
    c.write(body.subarray(cut + 3));
    assert.deepEqual(await c.answer(), { status: 200, body: { text: '{"a":"été"}', chunks: 3, stream: false } });
    c.socket.destroy();
  });

  test('a chunked body arrives whole', async () => {
    const c = connect(port);
    await c.ready;
    c.write('POST /json HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n');
    const pushed = nextPush();
    c.write('5\r\n{"a":\r\n');
    await pushed;
    c.write('3\r\n"b"\r\n1\r\n}\r\n0\r\n\r\n');
    assert.deepEqual(await c.answer(), { status: 200, body: { text: '{"a":"b"}', chunks: 3, stream: false } });
    c.socket.destroy();
  });

  test('an empty body is the empty text', async () => {
    const c = connect(port);
    await c.ready;
    c.write('POST /json HTTP/1.1\r\nhost: x\r\n\r\n');
    assert.deepEqual(await c.answer(), { status: 200, body: { text: '', chunks: 0, stream: false } });
    c.socket.destroy();
  });

  test('pipelined requests, oversized ones among them, are answered in order on one connection', async () => {
    const c = connect(port);
    await c.ready;
    const big = 'x'.repeat(MAX + 1);
    c.write(
      post('{"n":1}') +
        post(big) + // declared too large: 413 at once, the body drained
        post('{"n":2}') +
        post(`${(MAX + 1).toString(16)}\r\n${big}\r\n0\r\n\r\n`, 'transfer-encoding: chunked\r\n') + // found too large while read
        post('{"n":3}'),
    );
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await c.answer());
    assert.deepEqual(
      answers.map((a) => [a.status, a.body.text, a.body.stream]),
      [[200, '{"n":1}', false], [413, undefined, undefined], [200, '{"n":2}', false], [413, undefined, undefined], [200, '{"n":3}', false]],
    );
    c.socket.destroy();
  });

  test('a client that leaves mid-body is never answered, and the server goes on', async () => {
    const c = connect(port);
    await c.ready;
    const pushed = nextPush();
    c.write(`POST /json HTTP/1.1\r\nhost: x\r\ncontent-length: 40\r\n\r\n{"half":`);
    await pushed;
    assert.equal(unanswered.size, 1);
    const [req] = unanswered;
    const closed = new Promise((r) => req!.once('close', r));
    c.socket.destroy();
    await closed;
    assert.equal(req!.complete, false);
    unanswered.clear();
    const d = connect(port);
    d.write(post('{"after":1}'));
    assert.deepEqual((await d.answer()).body.text, '{"after":1}');
    d.socket.destroy();
  });
});

describe('readBody on a plain IncomingMessage (the stream path)', () => {
  const { server } = echoServer({});
  let port: number;
  before(() => new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r())));
  before(() => void (port = (server.address() as AddressInfo).port));
  after(() => new Promise<void>((r) => server.close(() => r())));

  test('reads the body from its stream, and answers 413 past the limit', async () => {
    const c = connect(port);
    await c.ready;
    const big = 'y'.repeat(MAX + 1);
    c.write(post('{"s":1}') + post(big) + post(`${(MAX + 1).toString(16)}\r\n${big}\r\n0\r\n\r\n`, 'transfer-encoding: chunked\r\n') + post('{"s":2}'));
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await c.answer());
    assert.deepEqual(
      answers.map((a) => [a.status, a.body.text, a.body.stream]),
      [[200, '{"s":1}', true], [413, undefined, undefined], [413, undefined, undefined], [200, '{"s":2}', true]],
    );
    c.socket.destroy();
  });
});
