// The guard when Redis fails, on a redis-server this test owns (a spare port, never the shared one):
// killed, frozen (SIGSTOP) and started again. Each onError mode answers as the README documents, every
// check() and record() settles within a bound, no rejection goes unhandled, and once Redis is back the
// state is shared again.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import { Redis } from 'ioredis';
import { Guard, type RedisGuardState } from '../../src/index.js';
import { RedisStore, type OnError } from '../../../sluice/src/stores/redis/index.js';
import { runPrefix, useOwnRedis } from '../../../testing/src/harness.js';

const TIMEOUT = 50;
/**
 * A check() waits for one call (two when it refuses a stranger, whose sources it then notes); a record()
 * for one; each may wait TIMEOUT, and the offline path that follows a failed call waits for nothing. The
 * bound keeps three rounds; the rest is slack for a loaded machine.
 */
const BOUND = 3 * TIMEOUT + 250;
const own = useOwnRedis();
const unhandled = own.unhandled;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function setup(onError: OnError) {
  const client = new Redis({ port: own.server.port, host: '127.0.0.1' });
  client.on('error', () => {});
  await once(client, 'ready');
  const store = new RedisStore({ client, prefix: runPrefix('guard-faults'), timeoutMs: TIMEOUT, onError });
  const guard = new Guard({ secret: 'faults-secret-0123456789abc', store });
  const state = guard.state as RedisGuardState;
  // Four failures from strangers: one past freeFailures (3), so the account is in backoff.
  for (let i = 1; i <= 4; i++) await guard.record({ account: 'alice', ip: `203.0.113.${i}`, success: false });
  assert.ok(
    (await guard.check({ account: 'alice', ip: '192.0.2.9' })).reasons.includes('account-backoff'),
    'backoff seen while Redis is up',
  );
  return { client, guard, state };
}

/** Runs `f`, and fails unless it settled within `ms`. */
async function timed<T>(f: () => Promise<T>, ms = BOUND): Promise<T> {
  const t = performance.now();
  try {
    return await f();
  } finally {
    const took = performance.now() - t;
    assert.ok(took < ms, `took ${took.toFixed(0)} ms, bound ${ms}`);
  }
}

test("onError 'open': Redis killed, the guard judges on this process's own records meanwhile, and every verdict and record says store-error", async () => {
  const { client, guard, state } = await setup('open');
  assert.equal(
    state.onError,
    'local',
    "a store's 'open' keeps the guard's records in this process while Redis is away",
  );
  await own.server.stop();
  await sleep(100);
  const v = await timed(() => guard.check({ account: 'alice', ip: '192.0.2.9' }));
  assert.deepEqual({ action: v.action, reasons: v.reasons }, { action: 'allow', reasons: ['store-error'] });
  assert.deepEqual(await timed(() => guard.record({ account: 'alice', ip: '192.0.2.9', success: false })), {
    counted: true,
    consecutiveFailures: 1,
    action: 'allow',
    reasons: ['store-error'],
  });
  // A success too: the pair lane cannot be forgotten meanwhile, and the login still records.
  assert.deepEqual(await timed(() => guard.record({ account: 'alice', ip: '192.0.2.9', success: true })), {
    counted: false,
    consecutiveFailures: 0,
    action: 'allow',
    reasons: ['store-error'],
  });
  assert.ok(state.stats.fallbacks >= 3 && state.stats.refused >= 3, JSON.stringify(state.stats));

  // Back: ioredis reconnects and the state is shared again (the new server starts empty).
  await own.server.start();
  await waitReady(client);
  const calls = state.stats.calls;
  for (let i = 1; i <= 4; i++) await guard.record({ account: 'bob', ip: `203.0.113.${i}`, success: false });
  assert.ok((await guard.check({ account: 'bob', ip: '192.0.2.9' })).reasons.includes('account-backoff'));
  assert.ok(state.stats.calls > calls);
  client.disconnect();
});

test("onError 'open': Redis frozen, every call times out and check() still answers within the bound", async () => {
  const { client, guard, state } = await setup('open');
  own.server.proc!.kill('SIGSTOP');
  try {
    const v = await timed(() => guard.check({ account: 'alice', ip: '192.0.2.9' }));
    assert.equal(v.action, 'allow');
    await timed(() => guard.record({ account: 'alice', ip: '192.0.2.9', success: false }));
    assert.ok(state.stats.timeouts >= 2, JSON.stringify(state.stats)); // the check's call and the record's
  } finally {
    own.server.proc!.kill('SIGCONT');
  }
  client.disconnect();
});

test("onError 'closed': check() and record() reject with ERR_SLUICE_STORE_UNAVAILABLE", async () => {
  const { client, guard } = await setup('closed');
  await own.server.stop();
  await sleep(100);
  await timed(() =>
    assert.rejects(guard.check({ account: 'alice', ip: '192.0.2.9' }), { code: 'ERR_SLUICE_STORE_UNAVAILABLE' }),
  );
  await timed(() =>
    assert.rejects(guard.record({ account: 'alice', ip: '192.0.2.9', success: false }), {
      code: 'ERR_SLUICE_STORE_UNAVAILABLE',
    }),
  );
  await own.server.start();
  await waitReady(client);
  client.disconnect();
});

test('onError insurance: the guard state goes local while Redis is away, so this process still backs off', async () => {
  const { client, guard, state } = await setup({ insurance: 0.5 });
  assert.equal(state.onError, 'local');
  await own.server.stop();
  await sleep(100);
  for (let i = 1; i <= 4; i++)
    await timed(() => guard.record({ account: 'carol', ip: `203.0.113.${i}`, success: false }));
  const v = await timed(() => guard.check({ account: 'carol', ip: '192.0.2.9' }));
  assert.ok(v.reasons.includes('account-backoff'), JSON.stringify(v));
  await own.server.start();
  await waitReady(client);
  client.disconnect();
});

test("a first login's success (one SET NX) when Redis died after its check: 'open' records it in this process and says store-error, 'closed' rejects", async () => {
  for (const onError of ['open', 'closed'] as const) {
    const { client, guard, state } = await setup(onError);
    const login = { account: `dave-${onError}`, ip: '198.51.100.77' };
    assert.equal((await guard.check(login)).action, 'allow'); // found nothing: its success would create the record
    await own.server.stop();
    await sleep(100);
    const fallbacks = state.stats.fallbacks;
    if (onError === 'open')
      assert.deepEqual(await timed(() => guard.record({ ...login, success: true })), {
        counted: false,
        consecutiveFailures: 0,
        action: 'allow',
        reasons: ['store-error'],
      });
    else
      await timed(() =>
        assert.rejects(guard.record({ ...login, success: true }), { code: 'ERR_SLUICE_STORE_UNAVAILABLE' }),
      );
    assert.equal(state.stats.fallbacks, fallbacks + 1, onError);
    await own.server.start();
    await waitReady(client);
    client.disconnect();
  }
});

test('no rejection went unhandled', () => {
  assert.deepEqual(unhandled, []);
});

async function waitReady(client: Redis): Promise<void> {
  const end = Date.now() + 15_000;
  while (client.status !== 'ready') {
    if (Date.now() > end) throw new Error(`client still ${client.status}`);
    await sleep(50);
  }
}
