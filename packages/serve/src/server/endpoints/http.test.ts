// POST /json's answer on the wire: its Content-Length is its UTF-8 byte length and its bytes are the UTF-8
// of the rendered text, whether the answer is ASCII (written as latin1, the same bytes by a plain copy) or
// not (a limit named in any script, written as UTF-8).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createServer } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { startService } from '../serve.js';
import { DEFAULTS } from '../config/settings.js';
import { ServeRequest } from './http.js';

const CONFIG = `domain: web
descriptors:
  - key: user
    rate_limit: { name: "café ≤ 😀", unit: hour, requests_per_unit: 5 }
  - key: ip
    rate_limit: { unit: hour, requests_per_unit: 5 }
`;

test('POST /json answers ASCII and non-ASCII bodies with their exact UTF-8 bytes and byte length', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-http-'));
  const config = join(dir, 'policies.yaml');
  writeFileSync(config, CONFIG);
  const quiet = new Writable({ write: (_c, _e, done) => done() });
  const svc = await startService(
    { ...DEFAULTS, config, port: 0, grpcPort: -1, adminPort: -1, watch: false, clock: 'monotonic' },
    { logStream: quiet },
  );
  try {
    for (const [key, name] of [
      ['ip', undefined],
      ['user', 'café ≤ 😀'],
    ] as const) {
      const res = await fetch(`http://127.0.0.1:${svc.httpPort}/json`, {
        method: 'POST',
        body: JSON.stringify({ domain: 'web', descriptors: [{ entries: [{ key, value: '1.2.3.4' }] }] }),
      });
      assert.equal(res.status, 200);
      const bytes = Buffer.from(await res.arrayBuffer());
      assert.equal(Number(res.headers.get('content-length')), bytes.length);
      const text = bytes.toString('utf8');
      assert.deepEqual(Buffer.from(text, 'utf8'), bytes, 'valid UTF-8');
      const answer = JSON.parse(text);
      assert.equal(answer.overallCode, 'OK');
      assert.equal(answer.statuses[0].currentLimit.name, name);
      assert.equal(answer.statuses[0].limitRemaining, 4);
      assert.equal(text, JSON.stringify(answer), 'compact protojson');
    }
  } finally {
    await svc.close(0);
    rmSync(dir, { recursive: true, force: true });
  }
});

// What ServeRequest relies on: node:http's parser hands each body chunk to the request's push() and ends
// the body with push(null). Should a Node release stop doing so, this fails here by name instead of
// /json hanging.
test('ServeRequest: with a body sink, node:http hands it every chunk and the end, and the stream still ends; without one the body flows as data events', async () => {
  const seen: string[] = [];
  const server = createServer({ IncomingMessage: ServeRequest }, (req, res) => {
    if (req.url === '/sink') {
      const parts: Buffer[] = [];
      req.bodyReader = {
        data: (c) => parts.push(c),
        end: () => {
          assert.ok(parts.length >= 3, `the body came in ${parts.length} chunks`);
          seen.push(`sink ${Buffer.concat(parts).toString()}`);
          res.end('ok');
        },
      };
      req.on('data', () => seen.push('data event on a sunk body'));
      req.on('end', () => seen.push('sink stream end'));
      req.resume();
    } else {
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => {
        seen.push(`stream ${Buffer.concat(parts).toString()}`);
        res.end('ok');
      });
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  try {
    const é = Buffer.from('é');
    for (const path of ['/sink', '/stream']) {
      const s = connect(port, '127.0.0.1');
      await once(s, 'connect');
      let answer = '';
      s.on('data', (d: Buffer) => (answer += d.toString('latin1')));
      // A chunked body in three writes, with a two-byte character cut between two of them.
      s.write(`POST ${path} HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n3\r\nab`);
      await new Promise((r) => setTimeout(r, 20));
      s.write(Buffer.concat([Buffer.from('c\r\n3\r\n'), é.subarray(0, 1)]));
      await new Promise((r) => setTimeout(r, 20));
      s.write(Buffer.concat([é.subarray(1), Buffer.from('x\r\n0\r\n\r\n')]));
      const deadline = Date.now() + 5000;
      while (!answer.endsWith('ok')) {
        assert.ok(Date.now() < deadline, `no answer to ${path}: ${JSON.stringify(seen)}`);
        await Promise.race([once(s, 'data'), new Promise((r) => setTimeout(r, 100))]);
      }
      s.destroy();
    }
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(seen.sort(), ['sink abcéx', 'sink stream end', 'stream abcéx'].sort());
  } finally {
    server.closeAllConnections();
    server.close();
  }
});

// ServeRequest ends a sunk body's stream itself (marked consumed, then read(0)), so node:http has nothing
// to dump when the answer finishes. The request must still end and close exactly once, on a kept-alive
// connection too, and nothing may resume it.
test('ServeRequest: a sunk body ends its stream by itself, is never resumed by node:http, and the connection serves the next request', async () => {
  const events: string[] = [];
  const server = createServer({ IncomingMessage: ServeRequest }, (req, res) => {
    const n = events.length;
    req.bodyReader = { data: () => {}, end: () => res.end('ok') };
    req.on('resume', () => events.push(`resume ${n}`));
    req.on('end', () => events.push('end'));
    req.on('close', () => events.push(req.readableEnded ? 'close' : 'close before end'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  try {
    const s = connect(port, '127.0.0.1');
    await once(s, 'connect');
    let answer = '';
    s.on('data', (d: Buffer) => (answer += d.toString('latin1')));
    for (let i = 1; i <= 2; i++) {
      s.write(`POST /json HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}`);
      const deadline = Date.now() + 5000;
      while (answer.split('\r\n\r\nok').length - 1 < i) {
        assert.ok(Date.now() < deadline, `no answer ${i}: ${JSON.stringify(events)}`);
        await Promise.race([once(s, 'data'), new Promise((r) => setTimeout(r, 100))]);
      }
    }
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    assert.deepEqual(events, ['end', 'close', 'end', 'close']);
    s.destroy();
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
