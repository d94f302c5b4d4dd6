// Issue 45, finding 7, on the real CLI process: SIGTERM closed the listeners at once ("stopped" 67 ms after
// the signal), keep-alive clients got errors and /readyz said 503 for too short a time for any balancer to
// see. Now /readyz and gRPC health say not-serving at once while decisions go on for --drain-ms; then the
// listeners stop accepting, a request in flight finishes with `Connection: close`, gRPC connections get
// GOAWAY, and the process exits 0. A second signal exits at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import http2 from 'node:http2';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { rlsClient, TempConfig } from '../integration/serve-helpers.js';

const main = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
const nap = (ms: number) => new Promise((r) => setTimeout(r, ms));
const CHECK = { domain: 'api', descriptors: [{ entries: [{ key: 'key', value: 'drain' }] }] };
const BODY = JSON.stringify(CHECK);

/** The CLI as an operator runs it, its JSON log lines collected. */
function serve(
  cfg: TempConfig,
  drainMs: number,
): {
  child: ChildProcessWithoutNullStreams;
  lines: Record<string, unknown>[];
  seen(msg: string): Promise<Record<string, unknown>>;
  exited: Promise<{ code: number | null; at: number }>;
} {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      main,
      'serve',
      '--config',
      cfg.path,
      '--port',
      '0',
      '--grpc-port',
      '0',
      '--admin-port',
      '-1',
      '--watch',
      'false',
    ],
    { env: { ...process.env, SLUICE_DRAIN_MS: String(drainMs) }, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  const lines: Record<string, unknown>[] = [];
  let buf = '';
  child.stdout.on('data', (c: Buffer) => {
    buf += c.toString();
    const parts = buf.split('\n');
    buf = parts.pop()!;
    for (const p of parts) if (p) lines.push(JSON.parse(p) as Record<string, unknown>);
  });
  child.stderr.resume();
  const exited = new Promise<{ code: number | null; at: number }>((resolve) =>
    child.once('exit', (code) => resolve({ code, at: Date.now() })),
  );
  const seen = async (msg: string) => {
    const deadline = Date.now() + 60_000; // tsx compiles the CLI at start: slow on a loaded host
    for (;;) {
      const l = lines.find((x) => x.msg === msg);
      if (l !== undefined) return l;
      if (Date.now() > deadline)
        throw new Error(`no '${msg}' from the child; got ${JSON.stringify(lines.map((x) => x.msg))}`);
      await nap(20);
    }
  };
  return { child, lines, seen, exited };
}

/** One keep-alive HTTP/1.1 connection, requests sent by hand so that their timing is ours. */
class KeepAlive {
  readonly socket: Socket;
  private buf = '';
  private waiting: ((r: { status: number; head: string }) => void) | undefined;
  closed = false;
  constructor(port: number) {
    this.socket = connect(port, '127.0.0.1');
    this.socket.on('error', () => {});
    this.socket.on('close', () => (this.closed = true));
    this.socket.on('data', (d) => {
      this.buf += d.toString();
      const end = this.buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = this.buf.slice(0, end);
      const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
      if (this.buf.length < end + 4 + length) return;
      this.buf = this.buf.slice(end + 4 + length);
      const w = this.waiting;
      this.waiting = undefined;
      w?.({ status: Number(head.slice(9, 12)), head });
    });
  }
  /** Sends the head of a /json request now and its body `bodyAfterMs` later; resolves with the answer. */
  json(bodyAfterMs = 0): Promise<{ status: number; head: string }> {
    const answer = new Promise<{ status: number; head: string }>((resolve) => (this.waiting = resolve));
    this.socket.write(
      `POST /json HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(BODY)}\r\n\r\n`,
    );
    if (bodyAfterMs === 0) this.socket.write(BODY);
    else setTimeout(() => this.socket.write(BODY), bodyAfterMs);
    return Promise.race([answer, nap(5000).then(() => ({ status: 0, head: this.closed ? 'closed' : 'no answer' }))]);
  }
}

/** grpc.health.v1 Check on `session`: 1 SERVING, 2 NOT_SERVING. */
function healthCheck(session: http2.ClientHttp2Session): Promise<number> {
  return new Promise((resolve, reject) => {
    const call = session.request({
      ':method': 'POST',
      ':path': '/grpc.health.v1.Health/Check',
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    const chunks: Buffer[] = [];
    call.on('data', (c: Buffer) => chunks.push(c));
    call.on('error', reject);
    call.on('end', () => {
      const m = Buffer.concat(chunks);
      resolve(m.length >= 7 ? m[6]! : -1); // 5-byte prefix, then field 1 (0x08) and the status
    });
    call.end(Buffer.from([0, 0, 0, 0, 0]));
  });
}

test('SIGTERM closes the listeners at once (finding 7): /readyz and gRPC health say not-serving at once, decisions go on for --drain-ms, a request in flight finishes with Connection: close, gRPC gets GOAWAY, and the process exits 0', async () => {
  const cfg = new TempConfig(
    'domain: api\ndescriptors:\n  - key: key\n    rate_limit: { unit: hour, requests_per_unit: 1000000 }\n',
  );
  const drainMs = 2000;
  const { child, lines, seen, exited } = serve(cfg, drainMs);
  try {
    const listening = await seen('sluice serve listening');
    const port = listening.http as number;
    const grpcPort = listening.grpc as number;
    const kept = new KeepAlive(port);
    assert.equal((await kept.json()).status, 200);
    const session = http2.connect(`http://127.0.0.1:${grpcPort}`);
    session.on('error', () => {});
    let goawayAt: number | undefined;
    session.on('goaway', () => (goawayAt ??= Date.now()));
    assert.equal(await healthCheck(session), 1);
    const client = rlsClient(grpcPort);
    assert.equal((await client.call(CHECK)).overall_code, 'OK');

    const t0 = Date.now();
    child.kill('SIGTERM');
    await seen('signal received');
    assert.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 503, '/readyz says not ready at once');
    assert.equal(await healthCheck(session), 2, 'gRPC health says NOT_SERVING at once');

    // Decisions go on while balancers notice: on the kept connection, on new ones, and over gRPC.
    let answered = 0;
    let asked = 0;
    while (Date.now() - t0 < drainMs - 600) {
      asked += 3;
      if ((await kept.json()).status === 200) answered++;
      const fresh = await fetch(`http://127.0.0.1:${port}/json`, {
        method: 'POST',
        body: BODY,
        headers: { connection: 'close' },
      }).catch(() => undefined);
      await fresh?.body?.cancel();
      if (fresh?.status === 200) answered++;
      if ((await client.call(CHECK).catch(() => undefined))?.overall_code === 'OK') answered++;
      await nap(100);
    }
    assert.ok(asked >= 9, `asked ${asked}`);
    assert.equal(answered, asked, `every decision during the drain was answered: ${answered} of ${asked}`);
    assert.ok(!lines.some((l) => l.msg === 'stopped'), 'not stopped during the drain');

    // A request whose body arrives after the drain ended is in flight as the listeners close: it finishes,
    // and its answer closes the connection.
    const inFlight = kept.json(drainMs - (Date.now() - t0) + 400);
    const last = await inFlight;
    assert.equal(last.status, 200, `the request in flight finished: ${last.head}`);
    assert.match(last.head, /connection: close/i);
    const { code, at } = await exited;
    assert.equal(code, 0);
    assert.ok(at - t0 >= drainMs, `exited ${at - t0} ms after SIGTERM, not before --drain-ms ${drainMs}`);
    assert.ok(
      goawayAt !== undefined && goawayAt - t0 >= drainMs - 100,
      `gRPC connections got GOAWAY after the drain: ${goawayAt === undefined ? 'none' : goawayAt - t0} ms`,
    );
    assert.ok(lines.some((l) => l.msg === 'stopped'));
    client.close();
    session.destroy();
  } finally {
    child.kill('SIGKILL');
    cfg.remove();
  }
});

test('SIGTERM closes the listeners at once (finding 7): a second signal during the drain exits at once', async () => {
  const cfg = new TempConfig(
    'domain: api\ndescriptors:\n  - key: key\n    rate_limit: { unit: hour, requests_per_unit: 1000000 }\n',
  );
  const { child, seen, exited } = serve(cfg, 30_000);
  try {
    await seen('sluice serve listening');
    child.kill('SIGTERM');
    await seen('signal received');
    const t0 = Date.now();
    child.kill('SIGTERM');
    const { code, at } = await exited;
    assert.equal(code, 1);
    assert.ok(at - t0 < 5000, `exited ${at - t0} ms after the second signal (drain 30 s)`);
  } finally {
    child.kill('SIGKILL');
    cfg.remove();
  }
});
