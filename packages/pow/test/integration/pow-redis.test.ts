// RedisSpentStore against real Redis, with ioredis and node-redis: spent once on any server sharing it,
// expiry judged on Redis's clock (issue 46 finding 5: skew between servers), and a Redis that restarted
// empty refusing what it may have forgotten. Keys carry a unique prefix and are deleted afterwards.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { createClient, type RedisClientType } from 'redis';
import { createChallenge, RedisSpentStore, solveChallenge, verifySolution } from '../../src/index.js';
import { freePort, OwnRedis, redisUrl } from '../../../testing/src/harness.js';

const prefix = `sluice-test:pow:${randomUUID()}:`;
const secret = 'redis test secret, long enough';
let io: Redis;
let nr: RedisClientType;

before(async () => {
  io = new Redis(redisUrl());
  await once(io, 'ready');
  nr = createClient({ url: redisUrl() });
  nr.on('error', () => {});
  await nr.connect();
});

after(async () => {
  const keys = await io.keys(`${prefix}*`);
  if (keys.length > 0) await io.del(...keys);
  io.disconnect();
  await nr.quit();
});

const clients = { ioredis: () => io, 'node-redis': () => nr } as const;

for (const [name, client] of Object.entries(clients)) {
  test(`${name}: a token is spent once, and its key lives until the token's expiry on Redis's clock`, async () => {
    const store = new RedisSpentStore({
      client: client(),
      prefix: `${prefix}${name}:`,
      maxTtlMs: 5000,
      timeoutMs: 1000,
    });
    const expiresAt = Date.now() + 5000;
    assert.equal(await store.spend('id1', expiresAt), true);
    assert.equal(await store.spend('id1', expiresAt), false);
    const ttl = await io.pttl(`${prefix}${name}:{spent}:id1`);
    assert.ok(ttl > 4000 && ttl <= 5000, `PTTL ${ttl}`);
    assert.equal(await store.spend('id2', expiresAt), true);
  });
}

for (const [name, client] of Object.entries(clients)) {
  test(`${name}: one turn's spends share one script call (they went one each), answered each in order, a repeat in the batch spent already`, async () => {
    const store = new RedisSpentStore({
      client: client(),
      prefix: `${prefix}${name}:batch:`,
      maxTtlMs: 5000,
      timeoutMs: 1000,
    });
    const stats = (store as unknown as { connection: { stats: { calls: number; operations: number } } }).connection
      .stats;
    await store.spend('warm', Date.now() + 5000);
    const calls = stats.calls;
    const expiresAt = Date.now() + 5000;
    const results = await Promise.all([
      store.spend('a', expiresAt),
      store.spend('b', expiresAt),
      store.spend('a', expiresAt),
      store.spend('late', Date.now() - 1000),
      store.spend('warm', expiresAt),
    ]);
    assert.deepEqual(results, [true, true, false, 'expired', false]);
    assert.equal(stats.calls - calls, 1);
  });
}

test('verifySolution with the Redis store rejects a replay across verifier instances and clients', async () => {
  const a = new RedisSpentStore({ client: io, prefix, maxTtlMs: 10_000, timeoutMs: 1000 });
  const b = new RedisSpentStore({ client: nr, prefix, maxTtlMs: 10_000, timeoutMs: 1000 });
  const ch = createChallenge({ secret, difficulty: 100, scope: 'login:alice', ttlMs: 10_000 });
  const solution = await solveChallenge(ch);
  assert.equal((await verifySolution(solution, { secret, scope: 'login:alice', store: a })).ok, true);
  assert.deepEqual(await verifySolution(solution, { secret, scope: 'login:alice', store: b }), {
    ok: false,
    reason: 'replayed',
  });
});

test('a spent proof is not accepted again under clock skew between servers (one 500 ms ahead): Redis keeps it until the expiry on its own clock', async () => {
  const store = new RedisSpentStore({ client: io, prefix, maxTtlMs: 600, timeoutMs: 1000 });
  for (let i = 0; i < 5; i++) {
    const issued = Date.now();
    const ch = createChallenge({ secret, difficulty: 50, scope: 'skew', ttlMs: 600, now: issued });
    const solution = await solveChallenge(ch);
    // Server A, its clock 500 ms ahead, redeems it: on main the key then lived expiry − A's now = 100 ms.
    assert.equal((await verifySolution(solution, { secret, scope: 'skew', store, now: Date.now() + 500 })).ok, true);
    await new Promise((r) => setTimeout(r, 200)); // Redis's clock moves on; the token is still valid for server B
    assert.deepEqual(
      await verifySolution(solution, { secret, scope: 'skew', store, now: Date.now() }),
      { ok: false, reason: 'replayed' },
      `try ${i}`,
    );
  }
});

test("a token already expired on Redis's clock is refused as expired, whatever the verifier's clock says", async () => {
  const store = new RedisSpentStore({ client: io, prefix, maxTtlMs: 0, timeoutMs: 1000 });
  const ch = createChallenge({ secret, difficulty: 50, scope: 'late', ttlMs: 1000, now: Date.now() - 2000 });
  const solution = await solveChallenge(ch);
  // A verifier whose clock is 2 s behind takes it as valid; Redis does not.
  assert.deepEqual(await verifySolution(solution, { secret, scope: 'late', store, now: Date.now() - 2000 }), {
    ok: false,
    reason: 'expired',
  });
});

test('a spent proof is not accepted again after Redis restarts without persistence: tokens issued before the restart are refused', async () => {
  const server = new OwnRedis(await freePort());
  await server.start();
  const client = new Redis({ port: server.port, host: '127.0.0.1', retryStrategy: () => 50 });
  client.on('error', () => {});
  await once(client, 'ready');
  try {
    const store = new RedisSpentStore({ client, prefix: 'pow:', maxTtlMs: 30_000, timeoutMs: 1000, logger: false });
    await new Promise((r) => setTimeout(r, 20)); // the epoch is set as the store meets the connected client
    const ch = createChallenge({ secret, difficulty: 50, scope: 'restart', ttlMs: 30_000 });
    const solution = await solveChallenge(ch);
    assert.equal((await verifySolution(solution, { secret, scope: 'restart', store })).ok, true);
    await new Promise((r) => setTimeout(r, 1100)); // past EPOCH_GRACE_MS: the stated bound is a token issued within it
    await server.stop();
    await server.start(); // empty: no save, no appendonly
    for (let end = Date.now() + 10_000; client.status !== 'ready'; ) {
      if (Date.now() > end) throw new Error(`client still ${client.status}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.deepEqual(await verifySolution(solution, { secret, scope: 'restart', store }), {
      ok: false,
      reason: 'replayed',
    });
    // A challenge issued after the restart is redeemed as usual.
    await new Promise((r) => setTimeout(r, 1100)); // past the epoch's grace
    const fresh = await solveChallenge(createChallenge({ secret, difficulty: 50, scope: 'restart', ttlMs: 30_000 }));
    assert.equal((await verifySolution(fresh, { secret, scope: 'restart', store })).ok, true);
  } finally {
    client.disconnect();
    await server.destroy();
  }
});

test('options are checked, naming the field', () => {
  assert.throws(
    () => new RedisSpentStore({ client: { set: async () => 'OK' } }),
    /RedisSpentStore: 'client' must be an ioredis, iovalkey, node-redis or valkey-glide client/,
  );
  assert.throws(
    () => new RedisSpentStore({ client: io, dialect: 'ioredis' } as never),
    /unknown option 'dialect'.*the client is told apart by itself/,
  );
  assert.throws(
    () => new RedisSpentStore({ client: io, prefix: 'a{b}' }),
    /'prefix' must be a string without '\{' or '\}'/,
  );
  assert.throws(() => new RedisSpentStore({ client: io, maxTtlMs: -1 }), /'maxTtlMs' must be/);
});

test("the spend scripts' SHA1s, written out (@sluice/pow loads without node:crypto), are their sources'", async () => {
  const { createHash } = await import('node:crypto');
  const { SPEND, EPOCH } = await import('../../src/redis-spent-store.js');
  for (const s of [SPEND, EPOCH]) assert.equal(s.sha, createHash('sha1').update(s.source).digest('hex'), s.name);
});
