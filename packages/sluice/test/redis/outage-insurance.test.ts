// Issue 24, outages, on a redis-server this test owns (a spare port: it is killed and frozen here). With
// { insurance: 0.25 }, 4 processes used to admit 5,000 more each after Redis was killed on a spent fixed
// window (1.83 x the limit in total): the local limiter started empty, knowing nothing of what Redis had
// just said. Now insurance starts each key from Redis's last answer. Also: a tight await loop against a
// Redis that is down lets timers run and sees Redis again as soon as it is back, and a call that timed
// out but was applied by Redis is counted as a late reply.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Redis } from 'ioredis';
import { Limiter, type Decision } from '../../src/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { runPrefix, useOwnRedis } from '../../../testing/src/harness.js';

const own = useOwnRedis();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function client(): Redis {
  const c = new Redis({ host: '127.0.0.1', port: own.server.port, retryStrategy: () => 20 });
  c.on('error', () => {});
  return c;
}

async function until(cond: () => boolean, ms: number, what: string): Promise<void> {
  const end = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

async function times(limiter: Limiter, key: string, n: number): Promise<Decision[]> {
  const out: Decision[] = [];
  for (let i = 0; i < n; i++) out.push(await limiter.limit(key));
  return out;
}

const allowed = (ds: Decision[]) => ds.filter((d) => d.allowed).length;

test('insurance remembers: after Redis denied a key, killing Redis admits nothing more for it within the window; a key Redis left r starts with at most r; a fresh key gets at most its share', async () => {
  const c = client();
  // A day-long fixed window: the test never straddles its (epoch-aligned) boundary in practice.
  // A timeout long enough that a loaded host never fails a call to a live Redis (a dead one is refused at once).
  const store = new RedisStore({
    client: c,
    prefix: runPrefix('insurance'),
    timeoutMs: 1000,
    onError: { insurance: 0.25 },
  });
  const limiter = new Limiter({ policy: { name: 'day', algorithm: 'fixed-window', limit: 20, window: '1d' }, store });
  try {
    const spent = await times(limiter, 'spent', 21);
    assert.equal(allowed(spent), 20);
    assert.equal(spent[20]!.allowed, false);
    assert.ok(
      spent.every((d) => d.reason === undefined),
      'decided by Redis',
    );
    const partly = await times(limiter, 'partly', 18);
    assert.equal(partly[17]!.remaining, 2);

    await own.server.stop();
    const outage = {
      spent: await times(limiter, 'spent', 50),
      partly: await times(limiter, 'partly', 50),
      fresh: await times(limiter, 'fresh', 50),
    };
    for (const ds of Object.values(outage))
      assert.ok(
        ds.every((d) => d.reason === 'store-error'),
        "every outage answer is the failure policy's",
      );
    assert.equal(allowed(outage.spent), 0, 'a key Redis denied stays denied');
    assert.ok(outage.spent.every((d) => d.retryAfterMs > 0));
    assert.equal(allowed(outage.partly), 2, 'a key Redis left 2 starts with 2, not its share of 5');
    assert.equal(allowed(outage.fresh), 5, 'a key Redis never saw gets its share, 0.25 x 20');

    await own.server.start();
    await until(() => c.status === 'ready', 10_000, 'the client to reconnect');
    // The restarted Redis is empty (no persistence): it decides from scratch, and admits.
    const back = await limiter.limit('spent');
    assert.equal(back.reason, undefined, 'Redis decides again once it is back');
    assert.equal(back.allowed, true);
  } finally {
    c.disconnect();
    if (own.server.proc === undefined) await own.server.start();
  }
});

test('insurance forgets the oldest answers beyond rememberKeys', async () => {
  const c = client();
  const store = new RedisStore({
    client: c,
    prefix: runPrefix('insurance-bound'),
    timeoutMs: 1000,
    onError: { insurance: 0.5, rememberKeys: 2 },
  });
  const limiter = new Limiter({ policy: { name: 'day', algorithm: 'fixed-window', limit: 4, window: '1d' }, store });
  try {
    for (const key of ['a', 'b', 'c']) await times(limiter, key, 5); // each denied by Redis
    await own.server.stop();
    // 'a' was forgotten to make room for 'c': it gets its share (2); 'b' and 'c' stay denied.
    assert.equal(allowed(await times(limiter, 'a', 5)), 2);
    assert.equal(allowed(await times(limiter, 'b', 5)), 0);
    assert.equal(allowed(await times(limiter, 'c', 5)), 0);
  } finally {
    c.disconnect();
    if (own.server.proc === undefined) await own.server.start();
  }
  assert.throws(
    () => new RedisStore({ client: c, onError: { insurance: 0.5, rememberKeys: -1 } }),
    /'onError.rememberKeys' must be .* got -1/,
  );
  assert.throws(
    () => new RedisStore({ client: c, onError: { insurance: 0.5, remember: 1 } as never }),
    /unknown field 'remember'/,
  );
});

test('a tight await loop against a Redis that is down lets timers run, and sees Redis decide as soon as it is back', async () => {
  const c = client();
  // A short timeout: the call sent before the client noticed the kill must time out before the restart.
  const store = new RedisStore({ client: c, prefix: runPrefix('down-loop'), timeoutMs: 50, onError: 'open' });
  const limiter = new Limiter({ policy: { algorithm: 'gcra', limit: 1000, window: '1s' }, store });
  try {
    await limiter.ready();
    await own.server.stop();
    // The restart is itself a timer and a child process: a loop that held the event loop would never see it.
    const restarted = sleep(300).then(() => own.server.start());
    const start = performance.now();
    let fromPolicy = 0;
    let d: Decision;
    do {
      d = await limiter.limit('k');
      if (d.reason !== undefined) fromPolicy++;
      assert.ok(performance.now() - start < 15_000, 'Redis never decided again');
    } while (d.reason !== undefined);
    await restarted;
    assert.ok(
      fromPolicy > 0,
      `the outage was answered by the failure policy ${JSON.stringify(store.stats)} ${(performance.now() - start).toFixed(0)} ms`,
    );
    assert.equal(d.allowed, true);
  } finally {
    c.disconnect();
    if (own.server.proc === undefined) await own.server.start();
  }
});

test('late replies: a call that timed out and was then applied by Redis is counted in stats.late', async () => {
  const c = client();
  const store = new RedisStore({ client: c, prefix: runPrefix('late'), timeoutMs: 200, onError: 'open' });
  const limiter = new Limiter({ policy: { name: 'day', algorithm: 'fixed-window', limit: 10, window: '1d' }, store });
  try {
    await limiter.limit('k');
    own.server.proc!.kill('SIGSTOP');
    let frozen: Decision;
    try {
      frozen = await limiter.limit('k');
    } finally {
      own.server.proc!.kill('SIGCONT');
    }
    assert.equal(frozen.reason, 'store-error');
    assert.ok(store.stats.timeouts >= 1);
    await until(() => store.stats.late >= 1, 5000, 'the late reply');
    // Redis applied it: the key has spent 2, though its caller got the failure policy's answer.
    assert.equal((await limiter.get('k')).remaining, 8);
    assert.equal(store.stats.late, store.stats.timeouts, 'every call that timed out was answered late');
  } finally {
    c.disconnect();
  }
});
