// Issue 45, findings 1-3, on the real service over loopback: the bounds of issue 37 were first-come pools,
// and one client filled each. An attacker holds what it can (and re-opens whatever is closed) while a
// legitimate client, on a connection of its own, must get at least 99 % of its answers within 1 s.
// Everything here comes from 127.0.0.1: the attacker and the client share an address, the hardest case
// for the per-address shares. Small caps keep the first three fast; the last runs the issue's numbers at
// the default caps.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { connect } from 'node:net';
import { rlsClient, start, TempConfig } from '../integration/serve-helpers.js';
import type { RunningService } from '../../src/server/serve.js';
import type { Settings } from '../../src/server/config/settings.js';

const cfg = new TempConfig(`domain: api
descriptors:
  - key: key
    rate_limit: { unit: hour, requests_per_unit: 1000000 }
`);
after(() => cfg.remove());

const SHOULD_RATE_LIMIT = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';
const HEALTH_CHECK = '/grpc.health.v1.Health/Check';
const nap = (ms: number) => new Promise((r) => setTimeout(r, ms));
const CHECK = { domain: 'api', descriptors: [{ entries: [{ key: 'key', value: 'legit' }] }] };

/**
 * An attacker that keeps `count` things open, opening another `reopenMs` after one ends, until stopped. The
 * pause keeps it from spinning on refusals in this process, which the service shares: the issue's attacker
 * re-opened what was reset, and one batch per 10 s would have done.
 */
class Attacker {
  private stopped = false;
  private readonly open = new Set<{ end(): void }>();
  ended = 0;
  constructor(
    private readonly openOne: (ended: () => void) => { end(): void },
    private readonly reopenMs = 200,
  ) {}
  /** Opens `count` at once; resolves once they had `settleMs` to be taken in. */
  async hold(count: number, settleMs = 300): Promise<void> {
    for (let i = 0; i < count; i++) this.spawn();
    await nap(settleMs);
  }
  private spawn(): void {
    if (this.stopped) return;
    let done = false;
    const it = this.openOne(() => {
      if (done) return;
      done = true;
      this.open.delete(it);
      this.ended++;
      setTimeout(() => this.spawn(), this.reopenMs * (0.5 + Math.random())); // spread, not in lockstep
    });
    this.open.add(it);
  }
  stop(): void {
    this.stopped = true;
    for (const it of this.open) it.end();
  }
}

/** An idle HTTP keep-alive socket: one GET /healthz, then nothing. */
function idleHttp(port: number) {
  return (ended: () => void) => {
    const s = connect(port, '127.0.0.1', () => s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'));
    s.resume();
    s.on('error', () => {});
    s.once('close', ended);
    return { end: () => s.destroy() };
  };
}

/** An idle gRPC connection: one health Check, then nothing. */
function idleGrpc(port: number) {
  return (ended: () => void) => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on('error', () => {});
    session.once('close', ended);
    session.once('goaway', () => session.destroy());
    const call = session.request({
      ':method': 'POST',
      ':path': HEALTH_CHECK,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    call.on('error', () => {});
    call.resume();
    call.end(Buffer.from([0, 0, 0, 0, 0]));
    return { end: () => session.destroy() };
  };
}

/** `perConnection` never-finishing calls on each of `connections` connections, each re-opened when reset. */
function pendingCalls(
  port: number,
  connections: number,
  options: { localAddress?: string; message?: Buffer } = {},
): { sessions: http2.ClientHttp2Session[]; call: (ended: () => void) => { end(): void } } {
  const { localAddress } = options;
  // By default the prefix says 100 bytes; one follows, and no more.
  const message = options.message ?? Buffer.from([0, 0, 0, 0, 100, 0x0a]);
  const sessions = Array.from({ length: connections }, () => {
    const s = http2.connect(
      `http://127.0.0.1:${port}`,
      localAddress === undefined ? {} : { createConnection: () => connect({ port, host: '127.0.0.1', localAddress }) },
    );
    s.on('error', () => {});
    return s;
  });
  let next = 0;
  return {
    sessions,
    call: (ended) => {
      const session = sessions[next++ % sessions.length]!;
      if (session.destroyed || session.closed) {
        setTimeout(ended, 50);
        return { end: () => {} };
      }
      const call = session.request({
        ':method': 'POST',
        ':path': SHOULD_RATE_LIMIT,
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      call.on('error', () => {});
      call.resume();
      call.once('close', ended);
      call.write(message);
      return { end: () => call.close() };
    },
  };
}

/** `n` checks one after another, each given 1 s; how many were answered in time. */
async function legitimate(n: number, once: () => Promise<boolean>): Promise<{ ok: number; failures: string[] }> {
  let ok = 0;
  const failures: string[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = Date.now();
    const r = await Promise.race([once().catch((e: Error) => e.message), nap(1000).then(() => 'no answer within 1 s')]);
    if (r === true && Date.now() - t0 <= 1000) ok++;
    else failures.push(String(r));
  }
  return { ok, failures };
}

/** A /json check on a connection of its own. */
async function jsonCheck(port: number): Promise<boolean> {
  const r = await fetch(`http://127.0.0.1:${port}/json`, {
    method: 'POST',
    body: JSON.stringify(CHECK),
    headers: { connection: 'close' },
    signal: AbortSignal.timeout(1000),
  });
  await r.body?.cancel();
  return r.status === 200;
}

/** A ShouldRateLimit call on a new gRPC connection (an Envoy that restarts, scales out or reconnects). */
async function grpcCheckOnNewConnection(port: number): Promise<boolean> {
  const client = rlsClient(port);
  try {
    return (await client.call(CHECK)).overall_code === 'OK';
  } finally {
    client.close();
  }
}

/** A counter's value on the admin port's /metrics. */
async function counter(svc: RunningService, series: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${svc.adminPort}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? -1 : Number(line.slice(series.length + 1));
}

function summary(r: { ok: number; failures: string[] }, n: number): string {
  const kinds = new Map<string, number>();
  for (const raw of r.failures) {
    const f = raw.replace(/\(\d{4}-\d\d-\d\dT[^)]*\)/g, '(time)'); // grpc-js stamps each failure
    kinds.set(f, (kinds.get(f) ?? 0) + 1);
  }
  return `${r.ok} of ${n} answered within 1 s; failures: ${JSON.stringify([...kinds])}`;
}

describe('issue 45 on sluice serve: fairness, not first-come pools (small caps)', () => {
  let svc: RunningService;
  before(async () => {
    const caps: Partial<Settings> = {
      maxConnections: 40,
      grpcMaxPendingCalls: 40,
      grpcMaxPendingCallsPerConnection: 16,
      // Held, not cut, for as long as the test runs: only the caps decide.
      headersTimeoutMs: 60_000,
      requestTimeoutMs: 60_000,
      keepAliveTimeoutMs: 60_000,
      grpcMaxConnectionIdleMs: 0,
      adminPort: 0,
    };
    ({ svc } = await start(cfg.path, { name: 'memory', settings: {} }, caps));
  });
  after(async () => {
    await svc.close(500);
  });

  test('the gRPC pending-call cap is one pool for all connections (finding 1): with never-finishing calls over 5 connections holding the cap, a client on its own connection keeps getting answers', async () => {
    const { sessions, call } = pendingCalls(svc.grpcPort!, 5);
    const attacker = new Attacker(call);
    const client = rlsClient(svc.grpcPort!);
    try {
      await client.call(CHECK); // the client's connection is up before the attack
      await attacker.hold(5 * 16);
      const r = await legitimate(100, async () => (await client.call(CHECK)).overall_code === 'OK');
      assert.ok(r.ok >= 99, summary(r, 100));
      const shed = await counter(svc, 'sluice_grpc_pending_calls_shed_total{listener="grpc"}');
      assert.ok(shed > 0, `/metrics counts the calls shed for the client's: ${shed}`);
    } finally {
      attacker.stop();
      client.close();
      for (const s of sessions) s.destroy();
    }
  });

  test('4,096 idle keep-alive sockets shut the HTTP decision port (finding 2): with idle keep-alive sockets holding --max-connections, /json checks on new connections keep getting answers', async () => {
    const attacker = new Attacker(idleHttp(svc.httpPort));
    try {
      await attacker.hold(40);
      const r = await legitimate(100, () => jsonCheck(svc.httpPort));
      assert.ok(r.ok >= 99, summary(r, 100));
      assert.ok(attacker.ended > 0, 'idle sockets were closed to make room');
      const closed = await counter(svc, 'sluice_connections_closed_for_room_total{listener="http"}');
      assert.ok(closed > 0, `/metrics counts the connections closed to make room: ${closed}`);
    } finally {
      attacker.stop();
    }
  });

  test('4,096 idle gRPC connections refuse every new connection (finding 3): with idle gRPC connections holding --max-connections, a new connection keeps getting answers', async () => {
    const attacker = new Attacker(idleGrpc(svc.grpcPort!));
    try {
      await attacker.hold(40);
      const r = await legitimate(50, () => grpcCheckOnNewConnection(svc.grpcPort!));
      assert.ok(r.ok >= 49, summary(r, 50));
      assert.ok(attacker.ended > 0, 'idle connections were closed to make room');
    } finally {
      attacker.stop();
    }
  });

  test('a connection busy with a request is never closed to admit a new one: every connection busy, the newcomer is the one refused', async () => {
    // 40 connections (the cap), each with a call whose message never finishes: every one is busy.
    const sessions = Array.from({ length: 40 }, () => {
      const s = http2.connect(`http://127.0.0.1:${svc.grpcPort}`);
      s.on('error', () => {});
      const c = s.request({
        ':method': 'POST',
        ':path': SHOULD_RATE_LIMIT,
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      c.on('error', () => {});
      c.write(Buffer.from([0, 0, 0, 0, 100, 0x0a]));
      return s;
    });
    await nap(300);
    const alive = () => sessions.filter((s) => !s.destroyed && !s.closed).length;
    try {
      assert.equal(alive(), 40);
      const newcomer = http2.connect(`http://127.0.0.1:${svc.grpcPort}`);
      newcomer.on('error', () => {});
      const refused = await new Promise<string>((resolve) => {
        const c = newcomer.request({
          ':method': 'POST',
          ':path': HEALTH_CHECK,
          'content-type': 'application/grpc',
          te: 'trailers',
        });
        c.on('error', (e) => resolve(`error ${e.message}`));
        c.on('response', (h) => resolve(`answered ${String(h['grpc-status'])}`));
        c.end(Buffer.from([0, 0, 0, 0, 0]));
        newcomer.once('close', () => resolve('closed'));
      });
      newcomer.destroy();
      assert.doesNotMatch(refused, /^answered/, `the newcomer is the one refused: ${refused}`);
      await nap(100);
      assert.equal(alive(), 40, 'no busy connection was closed for it');
    } finally {
      for (const s of sessions) s.destroy();
    }
  });
});

test("one client gets at most its share (--max-connections-per-address): idle sockets from 127.0.0.2 make room among their own, and never close another address's", async () => {
  const { svc } = await start(
    cfg.path,
    { name: 'memory', settings: {} },
    {
      maxConnections: 40,
      maxConnectionsPerAddress: 10,
      keepAliveTimeoutMs: 60_000,
      headersTimeoutMs: 60_000,
      requestTimeoutMs: 60_000,
      grpcPort: -1,
      adminPort: -1,
    },
  );
  const open = (localAddress: string) => {
    const s = connect({ port: svc.httpPort, host: '127.0.0.1', localAddress }, () =>
      s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'),
    );
    s.resume();
    s.on('error', () => {});
    return s;
  };
  const mine = Array.from({ length: 5 }, () => open('127.0.0.1'));
  await nap(200);
  const theirs = Array.from({ length: 40 }, () => open('127.0.0.2'));
  await nap(500);
  try {
    assert.equal(
      mine.filter((s) => !s.destroyed && s.readyState === 'open').length,
      5,
      "the other address's idle connections stay",
    );
    const held = theirs.filter((s) => !s.destroyed && s.readyState === 'open').length;
    assert.equal(held, 10, `one address holds its share of 10, not the listener's 40: ${held}`);
    assert.equal(await jsonCheck(svc.httpPort), true);
  } finally {
    for (const s of [...mine, ...theirs]) s.destroy();
    await svc.close(500);
  }
});

describe("issue 45 on sluice serve: the issue's numbers at the default caps", () => {
  test('4,100 never-finishing gRPC calls over 5 connections, then 4,096 idle keep-alive sockets: a client keeps getting answers', async () => {
    // Held, not cut, for as long as the test runs; every cap at its default. The attacker re-opens what
    // is closed or refused within 5-15 s ("one batch of 4,096 per 10 s would do"), so that its own churn
    // does not stall this process, which it shares with the service.
    const { svc } = await start(
      cfg.path,
      { name: 'memory', settings: {} },
      { headersTimeoutMs: 60_000, requestTimeoutMs: 60_000, grpcMaxConnectionIdleMs: 0, adminPort: -1 },
    );
    try {
      const { sessions, call } = pendingCalls(svc.grpcPort!, 5);
      const calls = new Attacker(call, 10_000);
      const client = rlsClient(svc.grpcPort!);
      try {
        await client.call(CHECK);
        await calls.hold(4100, 1500);
        const r = await legitimate(100, async () => (await client.call(CHECK)).overall_code === 'OK');
        assert.ok(r.ok >= 99, `calls: ${summary(r, 100)}`);
      } finally {
        calls.stop();
        client.close();
        for (const s of sessions) s.destroy();
      }
      const sockets = new Attacker(idleHttp(svc.httpPort), 10_000);
      try {
        await sockets.hold(4096, 4000);
        const r = await legitimate(100, () => jsonCheck(svc.httpPort));
        assert.ok(r.ok >= 99, `idle sockets: ${summary(r, 100)}`);
      } finally {
        sockets.stop();
      }
      // 4,096 idle gRPC connections at the defaults are not run here: with one address's share at 1024,
      // the other 3,072 are closed and re-opened (HTTP/2 sessions at both ends, in this one process), and
      // on this host (2 cores, load average 13) that churn alone put a new connection's first call at
      // 1-3 s (11 and 36 of 50 within 1 s in two runs). fair-default-caps.test.ts runs them (and idle
      // keep-alive sockets filling the whole cap) from an attacker in a child process on four addresses.
    } finally {
      await svc.close(500);
    }
  });
});

describe('pending gRPC bytes are one pool: a client trickling large messages holds what it can of the byte budget, and a client on another address keeps getting answers', () => {
  // Small byte caps, so that a few dozen calls reach them: the budget 2 MiB, one address's share 768 KiB
  // (four addresses at their share ask for 3 MiB, past the budget). The attacker fills with large calls,
  // then tops up with small ones, so that what it fills is full to the last 500 bytes; the client's check
  // names a value of 1,000 characters (values of 4,096 are allowed), and would never fit in what is left.
  // Every attacking call announces a message of 60,000 bytes, sends 49,000 (a small one: 500) and never the
  // rest; whatever is ended (shed, refused, timed out) is opened again.
  const LARGER_CHECK = { domain: 'api', descriptors: [{ entries: [{ key: 'key', value: 'x'.repeat(1000) }] }] };
  let svc: RunningService;
  before(async () => {
    ({ svc } = await start(
      cfg.path,
      { name: 'memory', settings: {} },
      {
        grpcMaxPendingBytes: 2 * 1024 * 1024,
        grpcMaxPendingBytesPerAddress: 768 * 1024,
        headersTimeoutMs: 60_000,
        requestTimeoutMs: 60_000,
        grpcMaxConnectionIdleMs: 0,
        adminPort: 0,
      },
    ));
  });
  after(async () => {
    await svc.close(500);
  });

  /** Calls holding `bytes` each (a 5-byte prefix saying 60,000, then `bytes - 5`), over 4 connections from `localAddress`. */
  function tricklingCalls(localAddress: string, bytes: number) {
    const message = Buffer.concat([Buffer.from([0, 0, 0, 0xea, 0x60]), Buffer.alloc(bytes - 5, 0x0a)]);
    return pendingCalls(svc.grpcPort!, 4, { localAddress, message });
  }

  for (const addresses of [['127.0.0.2'], ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5']]) {
    test(`from ${addresses.length === 1 ? 'one address' : `${addresses.length} addresses (each at its share, together the whole budget)`}: ShouldRateLimit from 127.0.0.1 keeps getting answers`, async (t) => {
      // Each address tries for the whole budget: 2 MiB is 42 calls of 49,000 bytes and 78 of 500.
      const attackers = addresses.flatMap((a) =>
        [49_000, 500].map((bytes) => {
          const { sessions, call } = tricklingCalls(a, bytes);
          return { sessions, attacker: new Attacker(call, 100), count: bytes === 500 ? 80 : 44 };
        }),
      );
      const client = rlsClient(svc.grpcPort!);
      try {
        await client.call(CHECK);
        for (const { attacker, count } of attackers) await attacker.hold(count, 100);
        await nap(500);
        const r = await legitimate(100, async () => (await client.call(LARGER_CHECK)).overall_code === 'OK');
        t.diagnostic(summary(r, 100));
        assert.ok(r.ok >= 99, summary(r, 100));
        const capped = attackers.reduce((n, { attacker }) => n + attacker.ended, 0);
        assert.ok(capped > 0, `the attacker's calls past the caps were ended: ${capped}`);
      } finally {
        for (const { attacker, sessions } of attackers) {
          attacker.stop();
          for (const s of sessions) s.destroy();
        }
        client.close();
      }
    });
  }
});
