// The Gate's contract on a manual clock: waiting instead of rejecting, order, bounds, cancellation,
// timeouts, the concurrency cap, upstream pauses and penalties, and one timer per key.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AsyncStore } from '../../testing/src/async-store.js';
import { flush, ManualTime } from '../test/fakes/manual-time.js';
import { SluiceError, type Decision, type PolicyOptions } from '../../sluice/src/index.js';
import { Gate, type GateOptions } from './index.js';

const perSecond = (limit: number, burst = limit): PolicyOptions => ({
  name: 'rate',
  algorithm: 'token-bucket',
  limit,
  window: '1s',
  burst,
});

/** A gate on manual time with the exact policies (no safety margin), whose timings these tests pin; the margin has tests of its own. */
function gate(t: ManualTime, options: Partial<GateOptions> & { policies: PolicyOptions[] }): Gate {
  return new Gate({ clock: t.clock, timers: t, marginMs: 0, ...options });
}

/** Starts calls and records, for each, the manual time it was admitted at or the error it got. */
function track(p: Promise<unknown>, t: ManualTime, log: (number | string)[], i: number): void {
  p.then(
    () => (log[i] = t.now),
    (e: unknown) => (log[i] = e instanceof SluiceError ? e.code : String((e as Error)?.name ?? e)),
  );
}

const isCode = (code: string) => (e: unknown) => e instanceof SluiceError && e.code === code;

test('calls wait instead of being rejected, and go exactly when the bucket refills', async () => {
  const t = new ManualTime(0);
  const g = gate(t, { policies: [perSecond(2)] });
  const log: (number | string)[] = [];
  for (let i = 0; i < 6; i++) track(g.wait('k'), t, log, i);
  await t.advance(0);
  assert.deepEqual(log, [0, 0]);
  await t.advance(499);
  assert.equal(log.length, 2, 'nothing passes before the refill');
  await t.advance(2000);
  assert.deepEqual(log, [0, 0, 500, 1000, 1500, 2000]);
  assert.equal(g.pending(), 0);
  assert.equal(t.pending, 0, 'no timer outlives the last waiter (a timeout timer would keep the process alive)');
});

test('FIFO within a priority, higher priorities first', async () => {
  const t = new ManualTime(0);
  const g = gate(t, { policies: [perSecond(1, 1)] });
  const order: string[] = [];
  await g.wait('k'); // spends the bucket: everything below queues
  const calls: [string, number][] = [
    ['a', 0],
    ['b', 0],
    ['c', 5],
    ['d', 0],
    ['e', 5],
    ['f', -1],
  ];
  for (const [name, priority] of calls) void g.wait('k', { priority }).then(() => order.push(name));
  await t.advance(10_000);
  assert.deepEqual(order, ['c', 'e', 'a', 'b', 'd', 'f']);
});

test('head of line: a cheap call behind an expensive one does not overtake it', async () => {
  const t = new ManualTime(0);
  const g = gate(t, { policies: [perSecond(10)] }); // 1 token per 100 ms
  await g.wait('k', { cost: 10 });
  const log: (number | string)[] = [];
  track(g.wait('k', { cost: 5 }), t, log, 0);
  track(g.wait('k', { cost: 1 }), t, log, 1);
  await t.advance(150);
  assert.equal(log[1], undefined, 'the cost-1 call would fit at 100 ms but must not pass before the head');
  await t.advance(1000);
  assert.deepEqual(log, [500, 600]);
});

test('keys do not block each other', async () => {
  const t = new ManualTime(0);
  const g = gate(t, { policies: [perSecond(1, 1)] });
  await g.wait('a');
  const log: (number | string)[] = [];
  track(g.wait('a'), t, log, 0);
  track(g.wait('b'), t, log, 1);
  await t.advance(0);
  assert.deepEqual([log[0], log[1]], [undefined, 0]);
  await t.advance(1000);
  assert.deepEqual(log, [1000, 0]);
});

test('a full queue rejects at once with ERR_SLUICE_QUEUE_FULL; calls that pass at once never count', async () => {
  const t = new ManualTime(0);
  const g = gate(t, { policies: [perSecond(2, 2)], maxQueue: 3 });
  await g.wait('k');
  await g.wait('k');
  const waiting = [g.wait('k'), g.wait('k'), g.wait('other')]; // 'other' passes at once, not queued
  await t.advance(0);
  const third = g.wait('k');
  assert.equal(g.pending(), 3);
  const fourth = g.wait('k');
  await assert.rejects(
    fourth,
    (e: unknown) =>
      isCode('ERR_SLUICE_QUEUE_FULL')(e) && /3 calls are waiting \('maxQueue' is 3\)/.test((e as Error).message),
  );
  assert.equal(g.stats.full, 1);
  await t.advance(2000);
  await Promise.all([...waiting, third]);
  assert.equal(g.pending(), 0);
});

test('an aborted waiter rejects with the signal reason and frees its place for the next caller', async () => {
  const t = new ManualTime(0);
  const g = gate(t, { policies: [perSecond(1, 1)], maxQueue: 1 });
  await g.wait('k');
  const ac = new AbortController();
  const first = g.wait('k', { signal: ac.signal });
  await assert.rejects(g.wait('k'), isCode('ERR_SLUICE_QUEUE_FULL'));
  ac.abort(new Error('caller gave up'));
  await assert.rejects(first, /caller gave up/);
  assert.equal(g.pending(), 0);
  const second = g.wait('k'); // the freed place is usable at once
  await t.advance(1000);
  assert.equal((await second).allowed, true);
  assert.equal(g.stats.aborted, 1);
  // Already-aborted signals never queue.
  await assert.rejects(g.wait('k', { signal: AbortSignal.abort(new Error('too late')) }), /too late/);
});

test('when the head is cancelled, a cheaper call behind it passes as soon as it fits', async () => {
  const t = new ManualTime(0);
  const g = gate(t, { policies: [perSecond(10)] });
  await g.wait('k', { cost: 10 });
  const ac = new AbortController();
  const log: (number | string)[] = [];
  track(g.wait('k', { cost: 8, signal: ac.signal }), t, log, 0);
  track(g.wait('k', { cost: 1 }), t, log, 1);
  await t.advance(300);
  ac.abort();
  await t.advance(0);
  assert.deepEqual(log, ['AbortError', 300]);
});

test('timeoutMs: a waiter gives up with ERR_SLUICE_QUEUE_TIMEOUT, on one gate-wide timer', async () => {
  const t = new ManualTime(0);
  const g = gate(t, { policies: [{ algorithm: 'fixed-window', limit: 1, window: '1h' }], timeoutMs: 1000 });
  await g.wait('k');
  const log: (number | string)[] = [];
  for (let i = 0; i < 50; i++) track(g.wait(`k`), t, log, i);
  for (let i = 50; i < 100; i++) track(g.wait(`key${i}`, { cost: 1 }), t, log, i); // these pass at once
  await t.advance(0);
  assert.ok(t.pending <= 2, `one sleep timer for 'k' and one deadline timer, not one per waiter (got ${t.pending})`);
  await t.advance(999);
  assert.equal(log.filter((x) => x === 'ERR_SLUICE_QUEUE_TIMEOUT').length, 0);
  await t.advance(1);
  assert.equal(log.filter((x) => x === 'ERR_SLUICE_QUEUE_TIMEOUT').length, 50);
  assert.equal(g.pending(), 0);
  assert.equal(g.stats.timedOut, 50);
  assert.equal(t.pending, 0, 'no timer left behind once nobody waits');
});

test('a cost above capacity fails at once with ERR_SLUICE_COST_EXCEEDS_CAPACITY instead of waiting forever', async () => {
  const t = new ManualTime(0);
  const g = gate(t, {
    policies: [perSecond(100, 20), { name: 'hour', algorithm: 'fixed-window', limit: 5000, window: '1h' }],
  });
  await assert.rejects(
    g.wait('k', { cost: 21 }),
    (e: unknown) =>
      isCode('ERR_SLUICE_COST_EXCEEDS_CAPACITY')(e) && /policy "rate", whose capacity is 20/.test((e as Error).message),
  );
  assert.equal(g.pending(), 0);
  assert.equal(t.pending, 0);
  await assert.rejects(g.wait('k', { cost: -1 }), isCode('ERR_SLUICE_INVALID_COST'));
  await assert.rejects(g.wait('', {}), isCode('ERR_SLUICE_INVALID_KEY'));
  await assert.rejects(g.wait('k', { priority: 1.5 }), isCode('ERR_SLUICE_INVALID_OPTION'));
});

test('options are validated at construction', () => {
  assert.throws(() => new Gate({ policies: [perSecond(1)], maxQueu: 1 } as GateOptions), /unknown option 'maxQueu'/);
  assert.throws(() => new Gate({ policies: [perSecond(1)], timeoutMs: 0 }), /'timeoutMs' must be a positive number/);
  assert.throws(
    () => new Gate({ policies: [perSecond(1)], maxQueue: -1 }),
    /'maxQueue' must be a non-negative integer/,
  );
  assert.throws(
    () => new Gate({ policies: [perSecond(1)], timers: {} as never }),
    /'timers' must be an object with setTimeout/,
  );
  assert.throws(
    () => new Gate({ policies: [perSecond(1)], marginMs: -1 }),
    /'marginMs' must be a non-negative integer of milliseconds \(0 for no margin\), got -1/,
  );
  assert.throws(() => new Gate({ policies: [perSecond(1)], marginMs: 2.5 }), /'marginMs' .* got 2\.5/);
});

test('marginMs (default 20): a bucket refills over its window plus the margin, under the name the user wrote', async () => {
  const t = new ManualTime(0);
  const g = new Gate({ policies: [perSecond(2)], clock: t.clock, timers: t });
  const log: (number | string)[] = [];
  for (let i = 0; i < 4; i++) track(g.wait('k'), t, log, i);
  await t.advance(2000);
  assert.deepEqual(log, [0, 0, 510, 1020], "2 per 1.02 s: 2 % under the upstream's 2 per second");
  assert.equal((await g.wait('k')).policy, 'rate');
  const unnamed = new Gate({ policy: { algorithm: 'sliding-log', limit: 5, window: '1s' }, clock: t.clock, timers: t });
  assert.equal((await unnamed.wait('k')).policy, 'sliding-log-5-1000ms', 'the default name is the written window');
});

test('marginMs: a call a fixed window held back waits the margin past the edge; its window stays on the epoch', async () => {
  const t = new ManualTime(400);
  const g = new Gate({
    policy: { algorithm: 'fixed-window', limit: 2, window: '1s' },
    clock: t.clock,
    timers: t,
    marginMs: 15,
  });
  const log: (number | string)[] = [];
  for (let i = 0; i < 5; i++) track(g.wait('k'), t, log, i);
  await t.advance(3000);
  assert.deepEqual(log, [400, 400, 1015, 1015, 2015]);
});

test("marginMs: a sliding window's margin is rounded up to whole buckets, which must divide its window", () => {
  const t = new ManualTime(0);
  const sw = { name: 'sw', algorithm: 'sliding-window', limit: 10, window: '1s', buckets: 8 } as const;
  // 1000 + 20 = 1020 is no multiple of 8 and would be refused; the margin becomes 24 (window 1024 ms).
  assert.doesNotThrow(() => new Gate({ policies: [sw], clock: t.clock, timers: t, marginMs: 20 }));
  assert.throws(
    () => new Gate({ policies: [{ ...sw, window: 1020 }], clock: t.clock, timers: t, marginMs: 0 }),
    /must divide evenly into 'buckets'/,
  );
});

test('concurrency cap: at most N in flight through run(), the lease freed when fn settles, even on throw', async () => {
  const t = new ManualTime(0);
  const g = gate(t, { policies: [{ name: 'inflight', algorithm: 'concurrency', limit: 2, window: '1m' }] });
  let inFlight = 0;
  let most = 0;
  const finish: (() => void)[] = [];
  const job = (fail: boolean) => () =>
    new Promise<string>((resolve, reject) => {
      inFlight++;
      most = Math.max(most, inFlight);
      finish.push(() => {
        inFlight--;
        if (fail) reject(new Error('upstream broke'));
        else resolve('ok');
      });
    });
  const results = [
    g.run('api', job(true)),
    g.run('api', job(false)),
    g.run('api', job(false)),
    g.run('api', job(false)),
  ];
  const outcome = Promise.allSettled(results);
  await flush();
  assert.equal(inFlight, 2);
  finish.shift()!(); // the first throws: its lease must still be released
  await flush();
  assert.equal(inFlight, 2, 'the next call started as soon as the failing one settled, with no timer');
  while (finish.length) {
    finish.shift()!();
    await flush();
  }
  const settled = await outcome;
  assert.deepEqual(
    settled.map((s) => s.status),
    ['rejected', 'fulfilled', 'fulfilled', 'fulfilled'],
  );
  assert.equal(most, 2);
  assert.equal((await g.limiter.get('api')).remaining, 2, 'every lease was released');
});

test('pause(): nothing on the key passes until the pause is over; other keys are untouched', async () => {
  const t = new ManualTime(0);
  const g = gate(t, { policies: [perSecond(100)] });
  g.pause('k', 2000);
  const log: (number | string)[] = [];
  track(g.wait('k'), t, log, 0);
  track(g.wait('other'), t, log, 1);
  await t.advance(1999);
  assert.deepEqual([log[0], log[1]], [undefined, 0]);
  await t.advance(1);
  assert.deepEqual(log, [2000, 0]);
  track(g.wait('k'), t, log, 2);
  await t.advance(0);
  assert.equal(log[2], 2000, 'a pause that ran out holds nothing back');
});

test('observe(): an upstream with fewer calls left is matched by a penalty; none left pauses until its reset', async () => {
  const t = new ManualTime(0);
  const g = gate(t, {
    policies: [{ name: 'hour', algorithm: 'sliding-log', limit: 10, window: '1h' }],
    timeoutMs: Infinity,
  });
  await g.wait('k');
  assert.equal((await g.limiter.get('k')).remaining, 9);
  await g.observe('k', { remaining: 4, resetAfterMs: 60_000 });
  assert.equal((await g.limiter.get('k')).remaining, 4);
  await g.observe('k', { remaining: 7 }); // more left upstream: never a licence to speed up
  assert.equal((await g.limiter.get('k')).remaining, 4);
  await g.observe('k', { remaining: 0, resetAfterMs: 30_000 });
  assert.equal((await g.limiter.get('k')).remaining, 4, 'no penalty that would outlast the upstream reset');
  const log: (number | string)[] = [];
  track(g.wait('k'), t, log, 0);
  await t.advance(29_999);
  assert.equal(log[0], undefined, 'paused until the reset');
  await t.advance(1);
  assert.equal(log[0], 30_000);
  await g.observe('k', { remaining: 0 }); // no reset given: the only safe reading is a penalty to zero
  assert.equal((await g.limiter.get('k')).remaining, 0);
});

test('observe() reads the rate policies, not a concurrency policy beside them', async () => {
  const t = new ManualTime(0);
  const g = gate(t, {
    policies: [
      { name: 'hour', algorithm: 'sliding-log', limit: 5000, window: '1h' },
      { name: 'inflight', algorithm: 'concurrency', limit: 100, window: '1m' },
    ],
  });
  const d = await g.wait('k');
  assert.ok(d.leaseId !== undefined, 'the admission carries the lease');
  assert.equal(d.remaining, 99, 'and reports the more restrictive count');
  await g.observe('k', { remaining: 1000, resetAfterMs: 600_000 });
  assert.equal(
    (await g.limiter.get('k')).remaining,
    1000,
    'the hourly budget matched, although 99 slots are the smaller count',
  );
  assert.equal(await g.release('k', d.leaseId!), true);
  assert.equal((await g.leases!.get('k')).remaining, 100);
});

test('a call the rate policies deny holds no lease while it waits', async () => {
  const t = new ManualTime(0);
  const g = gate(t, {
    policies: [perSecond(1, 1), { name: 'inflight', algorithm: 'concurrency', limit: 5, window: '1m' }],
  });
  const first = await g.wait('k');
  const second = g.wait('k');
  await t.advance(0);
  assert.equal((await g.leases!.get('k')).remaining, 4, 'only the admitted call holds a lease');
  await t.advance(1000);
  const d = await second;
  assert.equal((await g.leases!.get('k')).remaining, 3);
  await g.release('k', first.leaseId!);
  await g.release('k', d.leaseId!);
  assert.equal((await g.leases!.get('k')).remaining, 5);
});

test('no busy loop: 200 waiters on a 10/s key cost about one timer per admission', async () => {
  const t = new ManualTime(0);
  const g = gate(t, { policies: [perSecond(10, 1)], timeoutMs: Infinity });
  const all: Promise<Decision>[] = [];
  for (let i = 0; i < 200; i++) all.push(g.wait('k'));
  await t.advance(30_000);
  await Promise.all(all);
  assert.ok(t.requested.length <= 200, `timers set: ${t.requested.length}`);
  assert.ok(
    t.requested.every((ms) => ms === 100),
    'each sleep is exactly the retryAfterMs',
  );
});

test('async store: same order and timing, one decision in flight per key', async () => {
  const t = new ManualTime(0);
  const store = new AsyncStore();
  const g = gate(t, { policies: [perSecond(2)], store });
  const log: (number | string)[] = [];
  for (let i = 0; i < 5; i++) track(g.wait('k'), t, log, i);
  await t.advance(1500);
  assert.deepEqual(log, [0, 0, 500, 1000, 1500]);
});

test('async store: a waiter cancelled while the store decides gets no admission, and it is refunded', async () => {
  const t = new ManualTime(0);
  const store = new AsyncStore();
  const g = gate(t, { policies: [perSecond(1, 1)], store });
  store.hold = true;
  const ac = new AbortController();
  const p = g.wait('k', { signal: ac.signal });
  const q = g.wait('k');
  await flush();
  assert.equal(store.held.length, 1, 'one decision in flight for the key');
  ac.abort(new Error('gone'));
  await assert.rejects(p, /gone/);
  store.hold = false;
  store.releaseHeld(); // admits the cancelled call: the gate must hand the token back
  await flush();
  assert.equal(g.stats.refunded, 1);
  assert.equal((await q).allowed, true);
  assert.equal(t.now, 0, 'the refunded token went to the next waiter without waiting for a refill');
});

test('store errors reject the call they belong to, with the store error; the line goes on', async () => {
  const t = new ManualTime(0);
  const store = new AsyncStore();
  const g = gate(t, { policies: [perSecond(5)], store });
  let fail = true;
  const original = g.limiter.limit.bind(g.limiter);
  g.limiter.limit = (key, options) =>
    fail ? ((fail = false), Promise.reject(new Error('redis down'))) : original(key, options);
  const a = g.wait('k');
  const b = g.wait('k');
  await assert.rejects(a, /redis down/);
  assert.equal((await b).allowed, true);
});

test('shared store: a call held back by a concurrency policy looks again every releasePollMs, not at the lease timeout', async () => {
  const t = new ManualTime(0);
  const store = new AsyncStore();
  const g = gate(t, {
    policies: [{ name: 'inflight', algorithm: 'concurrency', limit: 1, window: '1m' }, perSecond(100)],
    store,
    releasePollMs: 40,
  });
  const other = gate(t, {
    policies: [{ name: 'inflight', algorithm: 'concurrency', limit: 1, window: '1m' }, perSecond(100)],
    store,
  });
  const held = await other.wait('k'); // "another process" holds the only slot
  const log: (number | string)[] = [];
  track(g.wait('k'), t, log, 0);
  await t.advance(100);
  assert.equal(log[0], undefined);
  await other.release('k', held.leaseId!);
  await t.advance(40);
  assert.equal(log[0], 120, 'seen on the first poll after the release (polls at 40, 80, 120 ms)');
  assert.ok(t.requested.filter((ms) => ms === 40).length >= 3);
});

test('async store: an admission that comes back after a pause began is handed back, and the call waits out the pause', async () => {
  const t = new ManualTime(0);
  const store = new AsyncStore();
  const g = gate(t, { policies: [perSecond(10)], store });
  store.hold = true;
  const log: (number | string)[] = [];
  track(g.wait('k'), t, log, 0);
  await flush();
  g.pause('k', 1000); // a 429 arrives while the decision is in flight
  store.hold = false;
  store.releaseHeld();
  await t.advance(999);
  assert.equal(log[0], undefined, 'nothing goes during the pause');
  assert.equal(g.stats.refunded, 1);
  await t.advance(1);
  assert.equal(log[0], 1000);
  assert.equal((await g.limiter.get('k')).remaining, 9, 'the handed-back admission was not charged twice');
});
