// A lone decision of cost 1 on one fixed-size policy, on Redis time, takes the script's one-key path
// (driver.lua's single()) and, when allowed, comes back packed in one integer; every other verdict, and
// every batch, answers as before. These pin both paths through both clients: the answers, the TTL until
// idle, a rejection that changes nothing, and verdicts too large to pack.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Limiter } from '../../src/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { escapeId, keyOf } from '../../src/stores/redis/keys.js';
import { connectBothClients, runPrefix } from './harness.js';

const { io, nr } = await connectBothClients();
const prefix = runPrefix('lone');
const clients = { ioredis: io, 'node-redis': nr };

for (const [name, client] of Object.entries(clients)) {
  test(`${name}: lone decisions count down, the denial carries retryAfterMs, and changes nothing`, async () => {
    const store = new RedisStore({ client, prefix, timeoutMs: 2000 });
    for (const algorithm of ['token-bucket', 'gcra', 'fixed-window'] as const) {
      const id = `count:${name}:${algorithm}:${Math.random()}`;
      const l = new Limiter({ policy: { name: 'p', algorithm, limit: 3, window: '1h' }, store });
      const remaining: number[] = [];
      for (let i = 0; i < 3; i++) {
        const d = await l.limit(id);
        assert.equal(d.allowed, true, `${algorithm} decision ${i}`);
        assert.equal(d.retryAfterMs, 0);
        assert.ok(d.resetAfterMs > 0 && d.resetAfterMs <= 3_600_000, `${algorithm} resetAfterMs ${d.resetAfterMs}`);
        remaining.push(d.remaining);
      }
      assert.deepEqual(remaining, [2, 1, 0], algorithm);
      const key = keyOf(prefix, escapeId(id), 'p');
      const before = [await io.getBuffer(key), await io.pexpiretime(key)];
      const denied = await l.limit(id);
      assert.equal(denied.allowed, false, algorithm);
      assert.equal(denied.remaining, 0);
      assert.ok(denied.retryAfterMs > 0, `${algorithm} retryAfterMs ${denied.retryAfterMs}`);
      assert.deepEqual([await io.getBuffer(key), await io.pexpiretime(key)], before, `${algorithm}: a denial changed the key`);
    }
    assert.equal(store.stats.calls, store.stats.operations, 'one script call per lone decision');
    assert.equal(store.stats.fallbacks, 0);
  });

  test(`${name}: a lone decision's TTL is the time until idle`, async () => {
    const store = new RedisStore({ client, prefix, timeoutMs: 2000 });
    const id = `ttl:${name}:${Math.random()}`;
    const l = new Limiter({ policy: { name: 'tb', algorithm: 'token-bucket', limit: 10, window: '1s' }, store });
    await l.limit(id); // one token refills in 100 ms
    const ttl = await io.pttl(keyOf(prefix, escapeId(id), 'tb'));
    assert.ok(ttl > 50 && ttl <= 100, `PTTL ${ttl}`);
  });

  test(`${name}: verdicts too large to pack in one integer come back whole, alone and in a batch`, async () => {
    const store = new RedisStore({ client, prefix, timeoutMs: 2000 });
    // remaining + 1 at 2^21 and above, and resetAfterMs at 2^32 and above, take the four-number reply.
    const wide = new Limiter({ policy: { name: 'wide', algorithm: 'gcra', limit: 5_000_000, window: '1h' }, store });
    const long = new Limiter({ policy: { name: 'long', algorithm: 'token-bucket', limit: 1, window: 5_000_000_000 }, store });
    // remaining + 1 = 2^21 with an odd resetAfterMs (3): packed, it would need 2^53 + 3, which a double rounds.
    const edge = new Limiter({ policy: { name: 'edge', algorithm: 'token-bucket', limit: 2 ** 21, window: 3 * 2 ** 21 }, store });
    for (const batch of [1, 3]) {
      const ids = Array.from({ length: batch }, () => `wide:${name}:${Math.random()}`);
      const [w, g, e] = await Promise.all([wide, long, edge].map((l) => Promise.all(ids.map((id) => l.limit(id)))));
      for (const d of w!) assert.deepEqual([d.allowed, d.remaining, d.retryAfterMs], [true, 4_999_999, 0]);
      for (const d of g!) {
        assert.deepEqual([d.allowed, d.remaining], [true, 0]);
        assert.equal(d.resetAfterMs, 5_000_000_000);
      }
      for (const d of e!) assert.deepEqual([d.allowed, d.remaining, d.resetAfterMs], [true, 2 ** 21 - 1, 3]);
    }
    assert.equal(store.stats.fallbacks, 0);
  });
}
