// Issue 24, start-up: a RedisStore given a client that has not connected yet. The store used to answer
// every call from the failure policy until the client was ready, and a tight `await` loop then never let
// the socket connect (151 of 151 decisions failed open, stats.calls 0). Now calls wait for the first
// connection (connectTimeoutMs), and a failure answer never resolves in a chain of microtasks.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { Limiter, type Decision } from '../../src/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { freePort, redisUrl, runPrefix } from '../../../testing/src/harness.js';

/**
 * The stores' timeoutMs: these tests are about a client that is not connected yet, not a slow one, and on
 * a loaded CI host the first call (which may load the script) can take more than the default 50 ms.
 */
const SLOW_HOST_MS = 1000;

/** The first `n` decisions of a tight loop on one key, limit 100 in a fixed hour. */
async function tightLoop(store: RedisStore, n: number): Promise<Decision[]> {
  const limiter = new Limiter({ policy: { name: 'hour', algorithm: 'fixed-window', limit: 100, window: '1h' }, store });
  const seen: Decision[] = [];
  for (let i = 0; i < n; i++) seen.push(await limiter.limit('user:42'));
  return seen;
}

function fromRedis(seen: Decision[]): void {
  assert.equal(seen.length, 200);
  assert.deepEqual(
    seen.filter((d) => d.reason !== undefined),
    [],
    'no decision came from the failure policy',
  );
  assert.equal(seen.filter((d) => d.allowed).length, 100, 'exactly the limit allowed');
  assert.ok(
    seen.slice(0, 100).every((d) => d.allowed) && seen.slice(100).every((d) => !d.allowed),
    'the first 100 allowed, the rest denied',
  );
}

test('a fresh, unawaited ioredis client: the first 200 decisions of a tight loop on limit 100 come from Redis, exactly 100 allowed, none with a reason', async () => {
  const client = new Redis(redisUrl());
  const store = new RedisStore({ client, prefix: runPrefix('start-up-ioredis'), timeoutMs: SLOW_HOST_MS });
  try {
    fromRedis(await tightLoop(store, 200));
    assert.equal(store.stats.fallbacks, 0);
    assert.equal(store.stats.refused, 0);
  } finally {
    client.disconnect();
  }
});

test('a node-redis client whose connect() is not awaited: the first 200 decisions of a tight loop on limit 100 come from Redis, exactly 100 allowed, none with a reason', async () => {
  const client = createClient({ url: redisUrl() });
  void client.connect();
  const store = new RedisStore({ client, prefix: runPrefix('start-up-node-redis'), timeoutMs: SLOW_HOST_MS });
  try {
    fromRedis(await tightLoop(store, 200));
    assert.equal(store.stats.fallbacks, 0);
  } finally {
    await client.disconnect();
  }
});

test('an ioredis client with lazyConnect: the store starts its connection, and decisions come from Redis', async () => {
  const client = new Redis(redisUrl(), { lazyConnect: true });
  const store = new RedisStore({ client, prefix: runPrefix('start-up-lazy'), timeoutMs: SLOW_HOST_MS });
  try {
    fromRedis(await tightLoop(store, 200));
  } finally {
    client.disconnect();
  }
});

test('a client pointed at a port where nothing listens: a tight loop of limit() for 2 s finishes, every answer from the failure policy after connectTimeoutMs, and timers run meanwhile', async () => {
  const port = await freePort();
  const client = new Redis({ host: '127.0.0.1', port, retryStrategy: () => 50 });
  client.on('error', () => {});
  const connectTimeoutMs = 500;
  const store = new RedisStore({ client, prefix: runPrefix('start-up-dead'), connectTimeoutMs, onError: 'closed' });
  const limiter = new Limiter({ policy: { algorithm: 'fixed-window', limit: 100, window: '1h' }, store });
  let ticks = 0;
  const ticker = setInterval(() => ticks++, 50);
  try {
    const start = performance.now();
    let n = 0;
    let first = -1;
    let fromPolicy = 0;
    while (performance.now() - start < 2000) {
      const d = await limiter.limit(`k${n % 10}`);
      if (first < 0) first = performance.now() - start;
      if (d.reason === 'store-error' && !d.allowed) fromPolicy++;
      n++;
    }
    assert.ok(
      first >= connectTimeoutMs - 5,
      `the first answer came after ${first.toFixed(0)} ms, before connectTimeoutMs ${connectTimeoutMs}`,
    );
    assert.equal(fromPolicy, n, "every answer is the failure policy's");
    assert.ok(n > 100, `only ${n} decisions in 2 s`);
    // The loop never held the event loop: the 50 ms interval kept firing through it.
    assert.ok(ticks >= 20, `the interval fired ${ticks} times in 2 s`);
    assert.equal(store.stats.calls, 0);
    assert.equal(store.stats.refused, n);
  } finally {
    clearInterval(ticker);
    client.disconnect();
  }
});

test('store.ready() and limiter.ready() resolve once the client is connected, and reject when it does not connect in time', async () => {
  const client = new Redis(redisUrl());
  const store = new RedisStore({ client, prefix: runPrefix('start-up-ready') });
  const limiter = new Limiter({ policy: { algorithm: 'gcra', limit: 10, window: '1s' }, store });
  try {
    await limiter.ready();
    assert.equal(client.status, 'ready');
    await store.ready();
  } finally {
    client.disconnect();
  }
  const dead = new Redis({ host: '127.0.0.1', port: await freePort(), retryStrategy: () => 50 });
  dead.on('error', () => {});
  try {
    const deadStore = new RedisStore({ client: dead, connectTimeoutMs: 100 });
    await assert.rejects(
      deadStore.ready(),
      (err: Error & { code?: string }) =>
        err.code === 'ERR_SLUICE_STORE_UNAVAILABLE' && /did not connect within 100 ms/.test(err.message),
    );
    await assert.rejects(
      new Limiter({ policy: { algorithm: 'gcra', limit: 10, window: '1s' }, store: deadStore }).ready(),
      /did not connect/,
    );
    await assert.rejects(
      deadStore.ready(-1),
      /RedisStore ready\(\) 'timeoutMs' must be a non-negative number of milliseconds, got -1/,
    );
  } finally {
    dead.disconnect();
  }
  // The memory store has nothing to wait for.
  await new Limiter({ policy: { algorithm: 'gcra', limit: 10, window: '1s' } }).ready();
});

test('options: connectTimeoutMs is checked', () => {
  const client = new Redis({ lazyConnect: true });
  assert.throws(
    () => new RedisStore({ client, connectTimeoutMs: -1 }),
    /'connectTimeoutMs' must be a non-negative number of milliseconds, got -1/,
  );
  assert.throws(() => new RedisStore({ client, connectTimeoutMs: 'soon' as never }), /'connectTimeoutMs'/);
  client.disconnect();
});
