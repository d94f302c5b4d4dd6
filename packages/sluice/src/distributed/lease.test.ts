// The lease table's local rules, on a scripted Redis and an injected clock: a chunk is spent only before
// the deadlines the reply implies (the window's, and its lease TTL less the margin), counted from when the
// request was sent; what is left when the TTL passes is given back; demand sizes the next ask.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compilePolicy, makeDecision } from '../core/index.js';
import { checkLeaseOptions, LeaseTable } from './lease.js';
import type { ScriptRunner } from './runner.js';

function scripted(replies: Array<(args: string[]) => number[]>, clock: { now: number }, lagMs = 0) {
  const asked: string[][] = [];
  const runner: ScriptRunner = {
    clientClock: false,
    keyFor: (k, s) => `t:{${k}}:${s}`,
    fallback: () =>
      makeDecision({
        allowed: false,
        limit: 0,
        remaining: 0,
        resetAfterMs: 0,
        retryAfterMs: 1,
        delayMs: 0,
        policy: 'p',
        reason: 'store-error',
      }),
    async run(_name, _keys, args) {
      asked.push(args);
      clock.now += lagMs; // the reply arrives later than the request left
      return replies.shift()!(args);
    },
  };
  return { runner, asked };
}

test('a chunk is spent only before the window ends, as counted from the send time', async () => {
  const clock = { now: 1000 };
  const policy = compilePolicy({ name: 'p', algorithm: 'fixed-window', limit: 100, window: 1000 });
  // First reply: 3 tokens, window 1, 1000 ms left when the script ran; it arrives 40 ms after sending.
  const { runner, asked } = scripted([() => [3, 1, 1000], () => [5, 2, 1000]], clock, 40);
  const t = new LeaseTable({ policy, clock: () => clock.now, runner }, { horizonMs: 100, ttlMs: 1000 });
  assert.equal((await t.decide('k', 1)).allowed, true);
  assert.equal(asked[0]![3], '1', 'a first request, with no demand seen yet, asks for one');
  assert.equal(asked[0]![6], '1000', 'the lease TTL goes to the script');
  assert.equal(clock.now, 1040);
  clock.now = 1899; // the lease TTL less its margin: 1000 (sent) + 900, not 1040 + 900
  assert.equal((await t.decide('k', 1)).allowed, true);
  assert.equal(asked.length, 1);
  clock.now = 2000; // the window ends: 1000 (sent) + 1000
  assert.equal((await t.decide('k', 1)).allowed, true);
  assert.equal(asked.length, 2, 'at the deadline the old chunk is dead and a new one is asked for');
  assert.equal(asked[1]![4], '0', 'a chunk from an ended window is not given back');
});

test('an empty grant denies locally until the window ends (a TTL reaching past it); demand sizes the next ask', async () => {
  const clock = { now: 0 };
  const policy = compilePolicy({ name: 'p', algorithm: 'fixed-window', limit: 1000, window: 1000 });
  const { runner, asked } = scripted([() => [2, 0, 1000], () => [0, 0, 990], (a) => [Number(a[3]), 1, 1000]], clock);
  const t = new LeaseTable({ policy, clock: () => clock.now, runner }, { horizonMs: 100, ttlMs: 1000 });
  await t.decide('k', 1);
  clock.now = 10;
  await t.decide('k', 1);
  const denied = await t.decide('k', 1); // chunk spent: asks, gets nothing
  assert.equal(denied.allowed, false);
  assert.equal(denied.retryAfterMs, 990);
  for (let i = 0; i < 100; i++) assert.equal((await t.decide('k', 1)).allowed, false);
  assert.equal(asked.length, 2, 'denials after an empty grant cost no Redis call');
  clock.now = 1000;
  assert.equal((await t.decide('k', 1)).allowed, true);
  // 101 requests seen in the 990 ms since the last ask: about 10 per 100 ms horizon.
  assert.equal(asked[2]![3], String(Math.ceil((101 / 990) * 100)));
});

test('lease TTL: the chunk stops at the TTL less a tenth, by the clock at sending, and what is left goes back', async () => {
  const clock = { now: 1000 };
  const policy = compilePolicy({ name: 'p', algorithm: 'fixed-window', limit: 100, window: 1000 });
  const { runner, asked } = scripted([() => [4, 1, 1000], () => [6, 1, 550], () => [0, 1, 400]], clock, 40);
  const t = new LeaseTable({ policy, clock: () => clock.now, runner }, { horizonMs: 100, ttlMs: 500 });
  assert.equal((await t.decide('k', 1)).allowed, true);
  clock.now = 1449; // 1000 (sent) + 500 − 50: the last moment the chunk is spent
  assert.equal((await t.decide('k', 1)).allowed, true);
  assert.equal(asked.length, 1);
  clock.now = 1450; // lease over (1040 + 450 would still be spending it): the node asks again...
  assert.equal((await t.decide('k', 1)).allowed, true);
  assert.equal(asked.length, 2);
  assert.equal(asked[1]![4], '2', '...and gives back the 2 tokens it no longer spends');
  // No request comes: when the TTL passes, the timer gives the remainder back by itself (run by hand here,
  // the test does not wait on real time), asking for nothing.
  clock.now = 1490 + 450;
  // biome-ignore lint/complexity/useLiteralKeys: a bracket is how TypeScript lets a test call a private method
  t['giveBackExpired']();
  await new Promise((r) => setImmediate(r));
  assert.equal(asked.length, 3);
  assert.deepEqual([asked[2]![3], asked[2]![4]], ['0', '5']);
  assert.equal((await t.decide('k', 0)).remaining, 0, 'nothing left to spend');
});

test('an empty grant denies locally for one lease TTL, then asks again (a give-back may have come)', async () => {
  const clock = { now: 0 };
  const policy = compilePolicy({ name: 'p', algorithm: 'fixed-window', limit: 100, window: 1000 });
  const { runner, asked } = scripted([() => [0, 0, 1000], () => [1, 0, 800]], clock);
  const t = new LeaseTable({ policy, clock: () => clock.now, runner }, { horizonMs: 100, ttlMs: 200 });
  const denied = await t.decide('k', 1);
  assert.equal(denied.allowed, false);
  assert.equal(denied.retryAfterMs, 200);
  clock.now = 199;
  assert.equal((await t.decide('k', 1)).allowed, false);
  assert.equal(asked.length, 1);
  clock.now = 200;
  assert.equal((await t.decide('k', 1)).allowed, true);
  assert.equal(asked.length, 2);
});

test('lease and local-sync: one fixed-window policy on a store with a runner; reset() refuses', async () => {
  const { runner } = scripted([() => [5, 0, 1000]], { now: 0 });
  const store = {
    bind: () => {
      throw new Error('not used');
    },
    runner: () => runner,
  };
  const { Limiter } = await import('../limiter.js');
  assert.throws(
    () => new Limiter({ policy: { algorithm: 'gcra', limit: 5, window: 1000 }, store, strategy: 'lease' }),
    /strategy "lease" works on one fixed-window policy \(a budget per window that can be split\), got "gcra"/,
  );
  assert.throws(
    () =>
      new Limiter({
        policy: { algorithm: 'fixed-window', limit: 5, window: 1000 },
        store,
        strategy: 'lease',
        lease: { horizonMs: -1 },
      }),
    /'lease.horizonMs' must be a positive number of milliseconds, got -1/,
  );
  assert.throws(
    () =>
      new Limiter({
        policy: { algorithm: 'fixed-window', limit: 5, window: 1000 },
        store,
        strategy: 'lease',
        lease: { ttlMs: 1001 },
      }),
    /'lease.ttlMs' must be a positive number of milliseconds no longer than the window \(1000\), got 1001/,
  );
  assert.throws(
    () =>
      new Limiter({
        policy: { algorithm: 'fixed-window', limit: 5, window: 1000 },
        store,
        strategy: 'lease',
        lease: { ttl: 10 } as never,
      }),
    /'lease' must be an object such as \{ horizonMs, ttlMs \}/,
  );
  assert.deepEqual(checkLeaseOptions(undefined, 1000), { horizonMs: 100, ttlMs: 200 });
  assert.throws(
    () =>
      new Limiter({
        policy: { algorithm: 'fixed-window', limit: 5, window: 1000 },
        store,
        strategy: 'local-sync',
        localSync: { threshold: 1.5 },
      }),
    /'localSync.threshold' must be a positive integer, got 1.5/,
  );
  assert.throws(
    () => new Limiter({ policy: { algorithm: 'fixed-window', limit: 5, window: 1000 }, store, localSync: {} }),
    /'localSync' options need strategy: 'local-sync', got strategy "atomic"/,
  );
  for (const strategy of ['lease', 'local-sync'] as const) {
    const l = new Limiter({
      policy: { algorithm: 'fixed-window', limit: 5, window: 1000 },
      store,
      strategy,
      clock: () => 0,
    });
    await assert.rejects(l.reset('k'), new RegExp(`reset\\(\\) is not available with strategy '${strategy}'`));
  }
});
