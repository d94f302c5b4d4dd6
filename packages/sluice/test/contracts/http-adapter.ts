// The suite every HTTP adapter runs: real servers on loopback, real fetch. Each adapter's index.test.ts calls
// testAdapter() with a harness that builds its framework's app; time comes from a manual clock in the limiter,
// and real timers run only where the middleware's own hold must (a few milliseconds).
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { Limiter } from '../../src/limiter.js';
import { github, stripe } from '../../src/http/presets.js';
import type { PolicyOptions } from '../../src/core/types.js';
import { MemoryStore } from '../../src/stores/memory.js';
import type { Store, StoreTable, TableSpec } from '../../src/stores/store.js';
import type { LimitedEvent } from '../../src/http/options.js';

/** Opens once; handlers of GET /slow wait on it. */
export class Gate {
  private open_!: () => void;
  readonly opened = new Promise<void>((resolve) => (this.open_ = resolve));
  open(): void {
    this.open_();
  }
}

export interface Running {
  /** e.g. http://127.0.0.1:PORT */
  url: string;
  close(): Promise<void>;
}

export interface AdapterHarness {
  name: string;
  /**
   * Starts an app with the adapter configured by `options` and these routes: GET / and POST /login answer
   * 'ok'; GET /slow answers after `gate` opens; GET /boom throws; POST /graphql answers 'ok' after parsing JSON;
   * GET /missing answers 404; GET /info answers JSON `{ key, route, cost, remaining, limited }` read from the
   * decision the adapter attached to the request, in the framework's idiom (`route` null when undefined).
   */
  serve(options: Record<string, unknown>, gate: Gate, host?: string): Promise<Running>;
  /** How a callback reads this framework's parsed JSON body; undefined if the adapter cannot see one. */
  body?: (req: never) => unknown;
  /** Options this adapter needs so that a cost function can read the body (Fastify: hook 'preHandler'). */
  bodyOptions?: Record<string, unknown>;
  /** The status of the response object `requestWasSuccessful` receives on this framework. */
  responseStatus: (res: never) => number;
}

/** Listens on port 0 and returns the URL (127.0.0.1 even on '::') and a close that drops kept-alive sockets. */
export function listen(server: Server, host = '127.0.0.1'): Promise<Running> {
  return new Promise((resolve) => {
    server.listen(0, host, () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://${host === '::' ? '127.0.0.1' : host}:${port}`,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}

/** The memory store behind Promises, as a networked store (Redis) answers: exercises the asynchronous path. */
export class AsyncStore implements Store {
  private readonly inner = new MemoryStore();
  bind(spec: TableSpec): StoreTable {
    const t = this.inner.bind(spec);
    return {
      sync: false,
      decide: async (k, c, l) => t.decide(k, c, l),
      adjust: async (k, d) => t.adjust(k, d),
      release: async (k, l) => t.release(k, l),
      reset: async (k) => t.reset(k),
    };
  }
}

/** A clock the test moves by hand. */
export function manualClock(start = 1_800_000_000_000): { now: number; clock: () => number } {
  const c = { now: start, clock: () => c.now };
  return c;
}

/** Polls `cond` each millisecond until it holds (at most 2 s): waiting on a state, never on a duration. */
export async function until(cond: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 1));
  }
  assert.fail(`timed out waiting for ${what}`);
}

const GITHUB_EXAMPLE = `query { viewer { login repositories(first: 100) { edges { node { id
  issues(first: 50) { edges { node { id labels(first: 60) { edges { node { id name } } } } } } } } } } }`;

export function testAdapter(h: AdapterHarness): void {
  const name = h.name;

  async function withServer(
    options: Record<string, unknown>,
    body: (r: Running, gate: Gate) => Promise<void>,
    host?: string,
  ) {
    const gate = new Gate();
    const r = await h.serve(options, gate, host);
    try {
      await body(r, gate);
    } finally {
      gate.open();
      await r.close();
    }
  }

  function gcra(limit: number, window: string | number = '1m', extra: Partial<PolicyOptions> = {}) {
    const c = manualClock();
    return {
      c,
      limiter: new Limiter({ policy: { name: 'p', algorithm: 'gcra', limit, window, ...extra }, clock: c.clock }),
    };
  }

  test(`${name}: draft-8 headers list every policy; the deciding one is in RateLimit`, async () => {
    const c = manualClock();
    const limiter = new Limiter({
      policies: [
        { name: 'burst', algorithm: 'token-bucket', limit: 3, window: '1s' },
        { name: 'hourly', algorithm: 'fixed-window', limit: 100, window: '1h' },
      ],
      clock: c.clock,
    });
    await withServer({ limiter, headers: 'draft-8' }, async ({ url }) => {
      const r = await fetch(`${url}/`);
      assert.equal(r.status, 200);
      assert.equal(await r.text(), 'ok');
      assert.equal(r.headers.get('ratelimit-policy'), '"burst";q=3;w=1, "hourly";q=100;w=3600');
      assert.equal(r.headers.get('ratelimit'), '"burst";r=2;t=1');
    });
  });

  test(`${name}: draft-7, draft-6, legacy and none header styles`, async () => {
    for (const style of ['draft-7', 'draft-6', 'legacy', 'none'] as const) {
      const { limiter } = gcra(10);
      await withServer({ limiter, headers: style }, async ({ url }) => {
        const r = await fetch(`${url}/`);
        await r.text();
        const g = (n: string) => r.headers.get(n);
        if (style === 'draft-7') {
          assert.equal(g('ratelimit'), 'limit=10, remaining=9, reset=6');
          assert.equal(g('ratelimit-policy'), '10;w=60');
        } else if (style === 'draft-6') {
          assert.deepEqual(
            [g('ratelimit-policy'), g('ratelimit-limit'), g('ratelimit-remaining'), g('ratelimit-reset')],
            ['10;w=60', '10', '9', '6'],
          );
        } else if (style === 'legacy') {
          assert.deepEqual(
            [g('x-ratelimit-limit'), g('x-ratelimit-remaining'), g('x-ratelimit-used'), g('x-ratelimit-resource')],
            ['10', '9', '1', 'p'],
          );
          const reset = Number(g('x-ratelimit-reset'));
          const expected = Math.ceil((Date.now() + 6000) / 1000);
          assert.ok(Math.abs(reset - expected) <= 1, `epoch reset ${reset} near ${expected}`);
        } else {
          for (const n of ['ratelimit', 'ratelimit-policy', 'x-ratelimit-limit', 'ratelimit-limit'])
            assert.equal(g(n), null);
        }
      });
    }
  });

  test(`${name}: a limited request gets 429, Retry-After rounded up and a problem+json body`, async () => {
    const { c, limiter } = gcra(2, '10s');
    await withServer({ limiter, headers: 'draft-7' }, async ({ url }) => {
      for (let i = 0; i < 2; i++) assert.equal((await fetch(`${url}/`).then((r) => (r.text(), r))).status, 200);
      c.now += 1; // the next token is 5000 ms away from the first; 4999 ms from now
      const r = await fetch(`${url}/`);
      assert.equal(r.status, 429);
      assert.equal(r.headers.get('retry-after'), '5');
      assert.equal(r.headers.get('ratelimit'), 'limit=2, remaining=0, reset=5');
      assert.equal(r.headers.get('content-type'), 'application/problem+json');
      const body = await r.json();
      assert.deepEqual(body, {
        type: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
        title: 'Request cannot be satisfied as assigned quota has been exceeded',
        status: 429,
        detail: 'Rate limit "p" exceeded; retry after 5 seconds.',
        'violated-policies': ['p'],
      });
      const head = await fetch(`${url}/`, { method: 'HEAD' });
      assert.equal(head.status, 429);
      assert.equal(head.headers.get('retry-after'), '5');
      assert.equal(await head.text(), '');
      c.now += 4999;
      assert.equal((await fetch(`${url}/`).then((r) => (r.text(), r))).status, 200);
    });
  });

  test(`${name}: the status is configurable`, async () => {
    const { limiter } = gcra(1);
    await withServer({ limiter, status: 503 }, async ({ url }) => {
      await (await fetch(`${url}/`)).text();
      const r = await fetch(`${url}/`);
      assert.equal(r.status, 503);
      assert.equal(((await r.json()) as { status: number }).status, 503);
      assert.equal(r.headers.get('retry-after'), '60');
    });
  });

  test(`${name}: a spoofed X-Forwarded-For from an untrusted peer is ignored`, async () => {
    const { limiter } = gcra(1);
    await withServer({ limiter, trustProxy: ['10.0.0.0/8'] }, async ({ url }) => {
      const a = await fetch(`${url}/`, { headers: { 'x-forwarded-for': '203.0.113.1' } });
      const b = await fetch(`${url}/`, { headers: { 'x-forwarded-for': '203.0.113.2' } });
      await a.text();
      await b.text();
      assert.deepEqual([a.status, b.status], [200, 429]);
      assert.equal((await limiter.get('127.0.0.1')).remaining, 0);
      assert.equal((await limiter.get('203.0.113.1')).remaining, 1);
    });
  });

  test(`${name}: X-Forwarded-For and Forwarded from a trusted proxy are read from the right`, async () => {
    const { limiter } = gcra(5);
    await withServer({ limiter, trustProxy: 'loopback' }, async ({ url }) => {
      await (await fetch(`${url}/`, { headers: { 'x-forwarded-for': '6.6.6.6, 203.0.113.7' } })).text();
      assert.equal((await limiter.get('203.0.113.7')).remaining, 4);
      assert.equal((await limiter.get('6.6.6.6')).remaining, 5);
      // Two IPv6 clients in one /64 share a key; the mapped form of an IPv4 client is unwrapped.
      await (await fetch(`${url}/`, { headers: { 'x-forwarded-for': '2001:db8:1:2::a' } })).text();
      await (await fetch(`${url}/`, { headers: { 'x-forwarded-for': '2001:db8:1:2:ffff::b' } })).text();
      assert.equal((await limiter.get('2001:db8:1:2::/64')).remaining, 3);
      await (await fetch(`${url}/`, { headers: { 'x-forwarded-for': '::ffff:198.51.100.4' } })).text();
      assert.equal((await limiter.get('198.51.100.4')).remaining, 4);
    });
    const second = gcra(5);
    await withServer(
      { limiter: second.limiter, trustProxy: ['127.0.0.1'], proxyHeader: 'forwarded' },
      async ({ url }) => {
        await (
          await fetch(`${url}/`, {
            headers: { forwarded: 'for=6.6.6.6, for="[2001:db8::1]:4711";proto=https', 'x-forwarded-for': '9.9.9.9' },
          })
        ).text();
        assert.equal((await second.limiter.get('2001:db8::/64')).remaining, 4);
        assert.equal((await second.limiter.get('9.9.9.9')).remaining, 5);
      },
    );
  });

  test(`${name}: IPv4-mapped peers are keyed as IPv4, IPv6 peers by /64 (dual-stack server)`, async () => {
    const { limiter } = gcra(5);
    await withServer(
      { limiter },
      async ({ url }) => {
        const port = new URL(url).port;
        await (await fetch(`http://127.0.0.1:${port}/`)).text(); // arrives as ::ffff:127.0.0.1
        assert.equal((await limiter.get('127.0.0.1')).remaining, 4);
        await (await fetch(`http://[::1]:${port}/`)).text();
        assert.equal((await limiter.get('::/64')).remaining, 4);
      },
      '::',
    );
  });

  test(`${name}: the shaper holds requests delayMs apart`, async () => {
    const c = manualClock();
    // 200/s: one every 5 ms; the first goes at once, the next two wait 5 and 10 ms; the fifth is refused.
    const limiter = new Limiter({
      policy: { name: 's', algorithm: 'leaky-bucket', mode: 'shaper', limit: 200, window: '1s', burst: 4 },
      clock: c.clock,
    });
    await withServer({ limiter }, async ({ url }) => {
      const t0 = performance.now();
      const done: number[] = [];
      const statuses = await Promise.all(
        [0, 1, 2, 3, 4].map(async (i) => {
          const r = await fetch(`${url}/?i=${i}`);
          await r.text();
          done[i] = performance.now() - t0;
          return r.status;
        }),
      );
      assert.deepEqual([...statuses].sort(), [200, 200, 200, 200, 429]);
      const passed = done.filter((_, i) => statuses[i] === 200).sort((a, b) => a - b);
      // Held at least 5, 10 and 15 ms (nothing else moved the manual clock).
      assert.ok(
        passed[1]! >= 5 && passed[2]! >= 10 && passed[3]! >= 15,
        `completion times ${passed.map((t) => t.toFixed(1)).join(', ')} ms`,
      );
    });
  });

  test(`${name}: a client that disconnects while held frees its place`, async () => {
    const c = manualClock();
    // One a second, three queued: the second request is held a whole second.
    const limiter = new Limiter({
      policy: { name: 's', algorithm: 'leaky-bucket', mode: 'shaper', limit: 1, window: '1s', burst: 3 },
      clock: c.clock,
    });
    await withServer({ limiter }, async ({ url }) => {
      await (await fetch(`${url}/`)).text();
      assert.equal((await limiter.get('127.0.0.1')).remaining, 2);
      const abort = new AbortController();
      const held = fetch(`${url}/`, { signal: abort.signal }).catch((e: Error) => e);
      await until(async () => (await limiter.get('127.0.0.1')).remaining === 1, 'the second request to be queued');
      abort.abort();
      assert.ok((await held) instanceof Error);
      await until(async () => (await limiter.get('127.0.0.1')).remaining === 2, 'the held request to be refunded');
    });
  });

  test(`${name}: concurrency slots are released on finish, on error, and when the client aborts`, async () => {
    const c = manualClock();
    const limiter = new Limiter({
      policy: { name: 'c', algorithm: 'concurrency', limit: 1, window: '1m' },
      clock: c.clock,
    });
    await withServer({ limiter }, async ({ url }) => {
      for (let i = 0; i < 3; i++) assert.equal((await fetch(`${url}/`).then((r) => (r.text(), r))).status, 200);
      const boom = await fetch(`${url}/boom`);
      await boom.text();
      assert.equal(boom.status, 500);
      await until(async () => (await limiter.get('127.0.0.1')).remaining === 1, 'release after an error');
      const abort = new AbortController();
      const slow = fetch(`${url}/slow`, { signal: abort.signal }).catch((e: Error) => e);
      await until(async () => (await limiter.get('127.0.0.1')).remaining === 0, 'the slow request to hold the slot');
      const refused = await fetch(`${url}/`);
      await refused.text();
      assert.equal(refused.status, 429);
      abort.abort();
      await slow;
      await until(async () => (await limiter.get('127.0.0.1')).remaining === 1, 'release when the client aborts');
      assert.equal((await fetch(`${url}/`).then((r) => (r.text(), r))).status, 200);
    });
  });

  test(`${name}: an asynchronous store decides through Promises, with the same answers and lease releases`, async () => {
    const c = manualClock();
    const limiter = new Limiter({
      policies: [
        { name: 'rate', algorithm: 'gcra', limit: 3, window: '1m' },
        { name: 'c', algorithm: 'concurrency', limit: 1, window: '1m' },
      ],
      store: new AsyncStore(),
      clock: c.clock,
    });
    await withServer({ limiter, headers: 'draft-7' }, async ({ url }) => {
      const statuses = [];
      const limits = [];
      for (let i = 0; i < 4; i++) {
        const r = await fetch(`${url}/`);
        await r.text();
        statuses.push(r.status);
        limits.push(r.headers.get('ratelimit'));
      }
      // One in flight at a time, so requests 2 and 3 pass only if each lease was released; the fourth is
      // refused by the rate policy, which then decides.
      assert.deepEqual(statuses, [200, 200, 200, 429]);
      assert.equal(limits[0], 'limit=1, remaining=0, reset=60');
      assert.equal(limits[3], 'limit=3, remaining=0, reset=20');
    });
  });

  test(`${name}: dry run decides and reports but never limits`, async () => {
    const { limiter } = gcra(1);
    const events: LimitedEvent[] = [];
    await withServer(
      { limiter, dryRun: true, onLimited: (_req: unknown, e: LimitedEvent) => events.push(e) },
      async ({ url }) => {
        for (let i = 0; i < 3; i++) {
          const r = await fetch(`${url}/`);
          await r.text();
          assert.equal(r.status, 200);
          assert.equal(r.headers.get('ratelimit'), null);
          assert.equal(r.headers.get('retry-after'), null);
        }
      },
    );
    assert.equal(events.length, 2);
    assert.deepEqual(
      events.map((e) => [e.key, e.dryRun, e.decision.allowed, e.retryAfterSeconds]),
      [
        ['127.0.0.1', true, false, 60],
        ['127.0.0.1', true, false, 60],
      ],
    );
  });

  test(`${name}: skip, allow lists, per-route policies and API-key keys`, async () => {
    const c = manualClock();
    await withServer(
      {
        clock: c.clock,
        policy: { name: 'all', algorithm: 'gcra', limit: 100, window: '1m' },
        routes: [
          {
            name: 'login',
            method: 'POST',
            path: '/login',
            policy: { name: 'login', algorithm: 'sliding-log', limit: 1, window: '1m' },
          },
        ],
        skip: (_req: unknown, info: { path: string }) => info.path === '/boom',
      },
      async ({ url }) => {
        const a = await fetch(`${url}/login`, { method: 'POST' });
        const b = await fetch(`${url}/login`, { method: 'POST' });
        await a.text();
        await b.text();
        assert.deepEqual([a.status, b.status], [200, 429]);
        assert.equal(b.headers.get('ratelimit'), '"login";r=0;t=60');
        const r = await fetch(`${url}/`);
        await r.text();
        assert.equal(r.headers.get('ratelimit'), '"all";r=99;t=1');
        const skipped = await fetch(`${url}/boom`);
        await skipped.text();
        assert.equal(skipped.headers.get('ratelimit'), null);
      },
    );
    await withServer(
      { policy: { algorithm: 'gcra', limit: 1, window: '1m' }, allow: ['127.0.0.0/8'] },
      async ({ url }) => {
        for (let i = 0; i < 3; i++) {
          const r = await fetch(`${url}/`);
          await r.text();
          assert.equal(r.status, 200);
          assert.equal(r.headers.get('ratelimit'), null);
        }
      },
    );
    await withServer(
      { policy: { algorithm: 'gcra', limit: 1, window: '1m' }, key: { header: 'x-api-key' } },
      async ({ url }) => {
        const s = async (k: string) =>
          (await fetch(`${url}/`, { headers: { 'x-api-key': k } }).then((r) => (r.text(), r))).status;
        assert.deepEqual([await s('alpha'), await s('beta'), await s('alpha')], [200, 200, 429]);
      },
    );
  });

  async function get(url: string, init?: RequestInit): Promise<Response> {
    const r = await fetch(url, init);
    await r.text();
    return r;
  }

  test(`${name}: skipFailedRequests gives back the charge of a 4xx, a 5xx and an aborted request`, async () => {
    const { limiter } = gcra(2);
    const left = async () => (await limiter.get('127.0.0.1')).remaining;
    await withServer({ limiter, skipFailedRequests: true }, async ({ url }, gate) => {
      for (let i = 0; i < 3; i++) {
        assert.equal((await get(`${url}/missing`)).status, 404);
        await until(async () => (await left()) === 2, 'the 404 to be refunded');
      }
      assert.equal((await get(`${url}/boom`)).status, 500);
      await until(async () => (await left()) === 2, 'the 500 to be refunded');
      const abort = new AbortController();
      const slow = fetch(`${url}/slow`, { signal: abort.signal }).catch((e: Error) => e);
      await until(async () => (await left()) === 1, 'the slow request to be charged');
      abort.abort();
      assert.ok((await slow) instanceof Error);
      await until(async () => (await left()) === 2, 'the aborted request to be refunded');
      gate.open();
      // Successes still count.
      assert.deepEqual(
        [(await get(`${url}/`)).status, (await get(`${url}/`)).status, (await get(`${url}/`)).status],
        [200, 200, 429],
      );
    });
  });

  test(`${name}: skipSuccessfulRequests counts only failures`, async () => {
    const { limiter } = gcra(2);
    const left = async () => (await limiter.get('127.0.0.1')).remaining;
    await withServer({ limiter, skipSuccessfulRequests: true }, async ({ url }) => {
      for (let i = 0; i < 3; i++) {
        assert.equal((await get(`${url}/`)).status, 200);
        await until(async () => (await left()) === 2, 'the 200 to be refunded');
      }
      assert.equal((await get(`${url}/missing`)).status, 404);
      assert.equal((await get(`${url}/missing`)).status, 404);
      assert.equal(await left(), 0);
      const refused = await get(`${url}/`);
      assert.equal(refused.status, 429);
      // A refused request charged nothing, so nothing is given back either.
      assert.equal(await left(), 0);
    });
  });

  test(`${name}: requestWasSuccessful decides what is skipped, sync or async, with the framework's req and res`, async () => {
    for (const async of [false, true]) {
      const { limiter } = gcra(1);
      const seen: number[] = [];
      const judge = (_req: unknown, res: never) => {
        const status = h.responseStatus(res);
        seen.push(status);
        return status === 404; // a 404 is "success" here, and skipped
      };
      await withServer(
        {
          limiter,
          skipSuccessfulRequests: true,
          requestWasSuccessful: async ? async (req: unknown, res: never) => judge(req, res) : judge,
        },
        async ({ url }) => {
          assert.equal((await get(`${url}/missing`)).status, 404);
          await until(async () => (await limiter.get('127.0.0.1')).remaining === 1, 'the 404 to be refunded');
          assert.equal((await get(`${url}/`)).status, 200);
          await until(() => seen.length === 2, 'the 200 to be judged');
          assert.equal((await get(`${url}/`)).status, 429);
          assert.deepEqual(seen, [404, 200]);
        },
      );
    }
  });

  test(`${name}: deny lists refuse addresses and keys with 403 before counting; allow lists pass keys uncounted`, async () => {
    const { limiter } = gcra(1);
    await withServer({ limiter, deny: ['127.0.0.0/8', '::1'], allow: ['127.0.0.1'] }, async ({ url }) => {
      const r = await fetch(`${url}/`);
      assert.equal(r.status, 403);
      assert.equal(r.headers.get('content-type'), 'application/problem+json');
      assert.equal(r.headers.get('ratelimit'), null);
      assert.equal(r.headers.get('retry-after'), null);
      assert.deepEqual(await r.json(), {
        type: 'about:blank',
        title: 'Forbidden',
        status: 403,
        detail: 'The client is not allowed to make this request.',
        'violated-policies': [],
      });
      assert.equal((await limiter.get('127.0.0.1')).remaining, 1);
    });
    const keyed = { policy: { algorithm: 'gcra', limit: 1, window: '1m' }, key: { header: 'x-api-key' } };
    await withServer(
      { ...keyed, deny: { keys: ['stolen'] }, allow: { keys: ['partner'] }, denyStatus: 401 },
      async ({ url }) => {
        const s = async (k: string) => (await get(`${url}/`, { headers: { 'x-api-key': k } })).status;
        assert.deepEqual([await s('stolen'), await s('stolen')], [401, 401]);
        const partner = await get(`${url}/`, { headers: { 'x-api-key': 'partner' } });
        assert.equal(partner.headers.get('ratelimit'), null);
        assert.deepEqual(
          [await s('partner'), await s('partner'), await s('alpha'), await s('alpha')],
          [200, 200, 200, 429],
        );
      },
    );
    // Key lists match what a key function returns, per route; dry run lets a denied request through.
    const byUser = {
      policy: { algorithm: 'gcra', limit: 5, window: '1m' },
      key: (_req: unknown, info: { header(n: string): string | undefined }) => info.header('x-user'),
    };
    await withServer({ ...byUser, deny: { keys: ['mallory'], addresses: ['192.0.2.0/24'] } }, async ({ url }) => {
      assert.equal((await get(`${url}/`, { headers: { 'x-user': 'mallory' } })).status, 403);
      assert.equal((await get(`${url}/`, { headers: { 'x-user': 'alice' } })).status, 200);
    });
    await withServer({ ...byUser, dryRun: true, deny: { keys: ['mallory'] } }, async ({ url }) => {
      assert.equal((await get(`${url}/`, { headers: { 'x-user': 'mallory' } })).status, 200);
    });
  });

  test(`${name}: limit as a number, or a function of the request (sync or async), decides on the shared state`, async () => {
    const policy = { name: 'p', algorithm: 'gcra', limit: 2, window: '1m' };
    await withServer({ clock: manualClock().clock, policy, limit: 3 }, async ({ url }) => {
      const r = [await get(`${url}/`), await get(`${url}/`), await get(`${url}/`), await get(`${url}/`)];
      assert.deepEqual(
        r.map((x) => x.status),
        [200, 200, 200, 429],
      );
      assert.equal(r[0]!.headers.get('ratelimit-policy'), '"p";q=3;w=60');
      assert.equal(r[0]!.headers.get('ratelimit'), '"p";r=2;t=20');
    });
    for (const async of [false, true]) {
      const plan = (_req: unknown, info: { header(n: string): string | undefined }) =>
        info.header('x-plan') === 'pro' ? 5 : undefined;
      const limit = async
        ? async (req: unknown, info: { header(n: string): string | undefined }) => plan(req, info)
        : plan;
      await withServer(
        { clock: manualClock().clock, policy, key: { header: 'x-api-key' }, limit, headers: 'draft-7' },
        async ({ url }) => {
          const s = async (k: string, pro: boolean) =>
            get(`${url}/`, { headers: { 'x-api-key': k, ...(pro ? { 'x-plan': 'pro' } : {}) } });
          const pro = [];
          for (let i = 0; i < 6; i++) pro.push(await s('acme', true));
          assert.deepEqual(
            pro.map((x) => x.status),
            [200, 200, 200, 200, 200, 429],
          );
          assert.deepEqual(
            [pro[0]!.headers.get('ratelimit-policy'), pro[0]!.headers.get('ratelimit')],
            ['5;w=60', 'limit=5, remaining=4, reset=12'],
          );
          const free = [await s('tiny', false), await s('tiny', false), await s('tiny', false)];
          assert.deepEqual(
            free.map((x) => x.status),
            [200, 200, 429],
          );
          assert.equal(free[0]!.headers.get('ratelimit-policy'), '2;w=60');
          // The same key without the plan's limit: decided on the same state, which is over 2 already.
          assert.equal((await s('acme', false)).status, 429);
        },
      );
    }
  });

  test(`${name}: a ban (blockFor) answers banStatus, 403 here, with Retry-After to its end; ordinary denials keep 429`, async () => {
    const c = manualClock();
    const limiter = new Limiter({
      policies: [
        { name: 'login', algorithm: 'gcra', limit: 1, window: '1m', blockFor: '10m' },
        { name: 'rest', algorithm: 'gcra', limit: 5, window: '1m' },
      ],
      clock: c.clock,
    });
    await withServer({ limiter, banStatus: 403, headers: 'draft-7' }, async ({ url }) => {
      assert.equal((await get(`${url}/`)).status, 200);
      const banned = await fetch(`${url}/`);
      assert.equal(banned.status, 403);
      assert.equal(banned.headers.get('retry-after'), '600');
      assert.equal(((await banned.json()) as { status: number }).status, 403);
      c.now += 60_000; // refilled, still banned
      const still = await get(`${url}/`);
      assert.deepEqual([still.status, still.headers.get('retry-after')], [403, '540']);
      c.now += 540_000;
      assert.equal((await get(`${url}/`)).status, 200, 'the ban is over');
    });
    const plain = gcra(1);
    await withServer({ limiter: plain.limiter, banStatus: 403 }, async ({ url }) => {
      assert.deepEqual([(await get(`${url}/`)).status, (await get(`${url}/`)).status], [200, 429]);
    });
  });

  test(`${name}: the decision is attached to the request for handlers`, async () => {
    const { limiter } = gcra(5);
    await withServer({ limiter }, async ({ url }) => {
      await get(`${url}/`);
      const r = await fetch(`${url}/info`);
      assert.deepEqual(await r.json(), { key: '127.0.0.1', route: null, cost: 1, remaining: 3, limited: false });
    });
    await withServer(
      {
        clock: manualClock().clock,
        routes: [{ name: 'info', path: '/info', cost: 2, policy: { algorithm: 'gcra', limit: 5, window: '1m' } }],
      },
      async ({ url }) => {
        const r = await fetch(`${url}/info`);
        assert.deepEqual(await r.json(), {
          key: 'info:127.0.0.1',
          route: 'info',
          cost: 2,
          remaining: 3,
          limited: false,
        });
      },
    );
    // A request no rule decides carries no decision.
    await withServer(
      { routes: [{ name: 'root', path: '/', policy: { algorithm: 'gcra', limit: 5, window: '1m' } }] },
      async ({ url }) => {
        assert.deepEqual(await (await fetch(`${url}/info`)).json(), { route: null });
      },
    );
  });

  test(`${name}: a key function that throws becomes the framework's error`, async () => {
    await withServer(
      {
        policy: { algorithm: 'gcra', limit: 1, window: '1m' },
        key: () => {
          throw new Error('no user');
        },
      },
      async ({ url }) => {
        const r = await fetch(`${url}/`);
        await r.text();
        assert.equal(r.status, 500);
      },
    );
  });

  test(`${name}: stripe preset, test mode: 25 reads and 25 writes per second, split by method`, async () => {
    const c = manualClock();
    await withServer({ ...stripe({ mode: 'test' }), clock: c.clock }, async ({ url }) => {
      const headers = { authorization: 'Bearer sk_test_123' };
      for (let i = 0; i < 25; i++)
        assert.equal((await fetch(`${url}/`, { headers }).then((r) => (r.text(), r))).status, 200);
      const over = await fetch(`${url}/`, { headers });
      await over.text();
      assert.equal(over.status, 429);
      assert.equal(over.headers.get('retry-after'), '1');
      assert.equal(over.headers.get('ratelimit-policy'), '"read";q=25;w=1');
      const write = await fetch(`${url}/login`, { method: 'POST', headers });
      await write.text();
      assert.equal(write.status, 200);
      assert.equal(write.headers.get('ratelimit'), '"write";r=24;t=1');
      // Another account has its own buckets.
      assert.equal(
        (await fetch(`${url}/`, { headers: { authorization: 'Bearer sk_test_456' } }).then((r) => (r.text(), r)))
          .status,
        200,
      );
      c.now += 40; // one token back: 25 per 1000 ms
      assert.equal((await fetch(`${url}/`, { headers }).then((r) => (r.text(), r))).status, 200);
    });
    const live = stripe();
    assert.deepEqual(
      live.routes!.map((r) => [r.name, r.policy!.limit, r.policy!.algorithm]),
      [
        ['stripe-read', 100, 'token-bucket'],
        ['stripe-write', 100, 'token-bucket'],
      ],
    );
  });

  test(`${name}: github preset: 60/h anonymous, 5000/h per user, X-RateLimit-* headers, GraphQL points`, async () => {
    const c = manualClock();
    const user = (_req: unknown, info: { header(n: string): string | undefined }) =>
      info.header('authorization')?.replace(/^token /, '');
    const graphql = h.body === undefined ? undefined : { body: h.body as never };
    await withServer(
      { ...github({ user, ...(graphql ? { graphql } : {}) }), ...(graphql ? h.bodyOptions : {}), clock: c.clock },
      async ({ url }) => {
        for (let i = 0; i < 60; i++) assert.equal((await fetch(`${url}/`).then((r) => (r.text(), r))).status, 200);
        const over = await fetch(`${url}/`);
        await over.text();
        assert.equal(over.status, 429);
        assert.deepEqual(
          ['limit', 'remaining', 'used', 'resource'].map((n) => over.headers.get(`x-ratelimit-${n}`)),
          ['60', '0', '60', 'core'],
        );
        const authed = await fetch(`${url}/`, { headers: { authorization: 'token octocat' } });
        await authed.text();
        assert.equal(authed.status, 200);
        assert.deepEqual(
          ['limit', 'remaining', 'used'].map((n) => authed.headers.get(`x-ratelimit-${n}`)),
          ['5000', '4999', '1'],
        );
        if (graphql !== undefined) {
          const g = await fetch(`${url}/graphql`, {
            method: 'POST',
            headers: { authorization: 'token octocat', 'content-type': 'application/json' },
            body: JSON.stringify({ query: GITHUB_EXAMPLE }),
          });
          await g.text();
          assert.equal(g.status, 200);
          assert.deepEqual(
            ['limit', 'remaining', 'used', 'resource'].map((n) => g.headers.get(`x-ratelimit-${n}`)),
            ['5000', '4949', '51', 'graphql'],
          );
        }
      },
    );
  });
}
