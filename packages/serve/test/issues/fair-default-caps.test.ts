// Issue 45, findings 2 and 3 at the default caps (--max-connections 4096, --max-connections-per-address
// 1024), which fair-service.test.ts runs only with small caps: an attacker in a child process (so that
// its thousands of sockets do not stall this process, where the service runs) holds as many idle
// connections as the caps allow, from as many loopback addresses as it takes to fill the listener
// (127.0.0.2 and up, 1024 each), re-opening whatever is closed. A legitimate client on 127.0.0.1 then
// opens a new connection for each check: at least 99 % must be answered within 1 s.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import http from 'node:http';
import http2 from 'node:http2';
import { fileURLToPath } from 'node:url';
import { start, TempConfig } from '../integration/serve-helpers.js';
import type { RunningService } from '../../src/server/serve.js';
import { DEFAULTS } from '../../src/server/config/settings.js';

const cfg = new TempConfig(`domain: api
descriptors:
  - key: key
    rate_limit: { unit: hour, requests_per_unit: 1000000 }
`);

const ATTACKER = fileURLToPath(new URL('../support/idle-attacker.mjs', import.meta.url));
const CAP = DEFAULTS.maxConnections;
const SHARE = DEFAULTS.maxConnectionsPerAddress;
/** Enough addresses, at one share each, to fill the listener's cap. */
const ADDRESSES = Array.from({ length: Math.ceil(CAP / SHARE) }, (_, i) => `127.0.0.${i + 2}`);
const CHECKS = 100;
const nap = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The attacker's child process and the latest count it reported. */
class IdleAttacker {
  private readonly child: ChildProcess;
  held = 0;
  constructor(kind: 'grpc' | 'http', port: number) {
    this.child = spawn(process.execPath, [ATTACKER, kind, String(port), String(SHARE), ...ADDRESSES], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let rest = '';
    this.child.stdout!.on('data', (chunk: Buffer) => {
      const lines = (rest + chunk.toString()).split('\n');
      rest = lines.pop()!;
      if (lines.length > 0) this.held = (JSON.parse(lines.at(-1)!) as { held: number }).held;
    });
  }
  /** Resolves once the attacker holds the whole cap, or it held no more for 3 s (or 20 s went by). */
  async holdsWhatItCan(): Promise<number> {
    const deadline = Date.now() + 20_000;
    let best = 0;
    let bestAt = Date.now();
    while (this.held < CAP && Date.now() < deadline && Date.now() - bestAt < 3000) {
      await nap(250);
      if (this.held > best) [best, bestAt] = [this.held, Date.now()];
    }
    return this.held;
  }
  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((r) => this.child.once('exit', r));
    this.child.kill('SIGTERM');
    await Promise.race([exited, nap(3000)]);
    if (this.child.exitCode === null) this.child.kill('SIGKILL');
  }
}

/** `n` checks one after another, each given 1 s; how many were answered in time, and why the others failed. */
async function legitimate(
  n: number,
  once: () => Promise<string>,
): Promise<{ ok: number; failures: Map<string, number> }> {
  let ok = 0;
  const failures = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const r = await Promise.race([once().catch((e: Error) => e.message), nap(1000).then(() => 'no answer within 1 s')]);
    if (r === 'ok') ok++;
    else failures.set(r, (failures.get(r) ?? 0) + 1);
  }
  return { ok, failures };
}

/** RateLimitRequest { domain: 'api', descriptors: [{ entries: [{ key: 'key', value: 'legit' }] }] }, framed. */
function frame(): Buffer {
  const entry = Buffer.from([0x0a, 3, ...Buffer.from('key'), 0x12, 5, ...Buffer.from('legit')]);
  const descriptor = Buffer.from([0x0a, entry.length, ...entry]);
  const message = Buffer.from([0x0a, 3, ...Buffer.from('api'), 0x12, descriptor.length, ...descriptor]);
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(message.length, 1);
  return Buffer.concat([prefix, message]);
}
const REQUEST = frame();

/** A ShouldRateLimit call on a new HTTP/2 connection from 127.0.0.1 (an Envoy that restarts or scales out). */
function grpcCheckOnNewConnection(port: number): Promise<string> {
  return new Promise((resolve) => {
    const session = http2.connect(`http://127.0.0.1:${port}`, {
      localAddress: '127.0.0.1',
    } as http2.SecureClientSessionOptions);
    const done = (r: string) => {
      resolve(r);
      session.destroy();
    };
    session.on('error', (e) => done(`connection error: ${e.message}`));
    session.once('close', () => done('connection closed before the answer'));
    session.once('goaway', () => done('GOAWAY before the answer'));
    const call = session.request({
      ':method': 'POST',
      ':path': '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit',
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    call.on('error', (e) => done(`call error: ${e.message}`));
    const chunks: Buffer[] = [];
    call.on('data', (c: Buffer) => chunks.push(c));
    call.once('trailers', (t) => {
      const body = Buffer.concat(chunks);
      // The answer's overall_code (field 1) is OK (1).
      done(t['grpc-status'] === '0' && body[5] === 0x08 && body[6] === 1 ? 'ok' : `grpc-status ${t['grpc-status']}`);
    });
    call.end(REQUEST);
  });
}

/** A /json check on a new connection from 127.0.0.1. */
function jsonCheckOnNewConnection(port: number): Promise<string> {
  return new Promise((resolve) => {
    const req = http.request(
      {
        port,
        host: '127.0.0.1',
        localAddress: '127.0.0.1',
        method: 'POST',
        path: '/json',
        agent: false,
        headers: { 'content-type': 'application/json', connection: 'close' },
      },
      (res) => {
        res.resume();
        res.once('end', () => resolve(res.statusCode === 200 ? 'ok' : `status ${res.statusCode}`));
      },
    );
    req.on('error', (e) => resolve(`error: ${e.message}`));
    req.end(JSON.stringify({ domain: 'api', descriptors: [{ entries: [{ key: 'key', value: 'legit' }] }] }));
    setTimeout(() => req.destroy(), 1000).unref();
  });
}

function summary(r: { ok: number; failures: Map<string, number> }, held: number): string {
  return `${r.ok} of ${CHECKS} answered within 1 s while the attacker held ${held} of ${CAP}; failures: ${JSON.stringify([...r.failures])}`;
}

describe('issue 45 at the default caps, the attacker in a child process on 127.0.0.2 and up', () => {
  let svc: RunningService;
  before(async () => {
    // Every cap and timeout at its default.
    ({ svc } = await start(cfg.path, { name: 'memory', settings: {} }, { adminPort: -1 }));
  });
  after(async () => {
    await svc.close(500);
    cfg.remove();
  });

  test('4,096 idle gRPC connections refuse every new connection (finding 3): with idle gRPC connections holding the default --max-connections, a new connection keeps getting answers', async (t) => {
    const attacker = new IdleAttacker('grpc', svc.grpcPort!);
    try {
      const held = await attacker.holdsWhatItCan();
      assert.ok(held >= CAP * 0.99, `the attacker holds the cap: ${held} of ${CAP}`);
      const r = await legitimate(CHECKS, () => grpcCheckOnNewConnection(svc.grpcPort!));
      t.diagnostic(summary(r, attacker.held));
      assert.ok(r.ok >= CHECKS * 0.99, summary(r, attacker.held));
    } finally {
      await attacker.stop();
    }
  });

  test('4,096 idle keep-alive sockets shut the HTTP decision port (finding 2): with idle keep-alive sockets holding the default --max-connections, /json checks on new connections keep getting answers', async (t) => {
    const attacker = new IdleAttacker('http', svc.httpPort);
    try {
      const held = await attacker.holdsWhatItCan();
      assert.ok(held >= CAP * 0.99, `the attacker holds the cap: ${held} of ${CAP}`);
      const r = await legitimate(CHECKS, () => jsonCheckOnNewConnection(svc.httpPort));
      t.diagnostic(summary(r, attacker.held));
      assert.ok(r.ok >= CHECKS * 0.99, summary(r, attacker.held));
    } finally {
      await attacker.stop();
    }
  });
});
