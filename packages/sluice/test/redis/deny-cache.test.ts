// The deny cache over a real RedisStore: a seeded trace of costs and clock steps, decided by an atomic
// limiter and a cached one on separate prefixes, gets the same answers; denials the cache holds cost no
// script call.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, test } from 'node:test';
import { Redis } from 'ioredis';
import { Limiter } from '../../src/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { seededRandom } from '../../src/support/random.js';
import { redisUrl, runPrefix } from '../../../testing/src/harness.js';

const client = new Redis(redisUrl());
after(() => client.disconnect());

test('redis: the deny cache never admits what the atomic strategy would deny', async () => {
  await once(client, 'ready');
  for (const algorithm of ['fixed-window', 'sliding-window', 'gcra', 'sliding-log'] as const) {
    let now = 1_000_000;
    const clock = () => now;
    const policy = { name: 'p', algorithm, limit: 4, window: 200 };
    const plain = new RedisStore({
      client,
      prefix: runPrefix(`deny-a-${algorithm}`),
      clock: 'client',
      onError: 'closed',
      timeoutMs: 2000,
    });
    const cachedStore = new RedisStore({
      client,
      prefix: runPrefix(`deny-b-${algorithm}`),
      clock: 'client',
      onError: 'closed',
      timeoutMs: 2000,
    });
    const atomic = new Limiter({ policy, store: plain, clock });
    const cached = new Limiter({ policy, store: cachedStore, clock, denyCache: true });
    const random = seededRandom(7);
    let denied = 0;
    for (let i = 0; i < 400; i++) {
      now += Math.floor(random() * 25);
      const cost = 1 + Math.floor(random() * 2);
      const [x, y] = [await atomic.limit('k', { cost }), await cached.limit('k', { cost })];
      assert.equal(x.reason, undefined);
      assert.equal(y.allowed, x.allowed, `${algorithm}, step ${i} at ${now}, cost ${cost}`);
      if (!x.allowed) denied++;
    }
    assert.ok(denied > 50, `${algorithm}: ${denied} denials`);
    assert.ok(
      cachedStore.stats.operations < plain.stats.operations,
      `${algorithm}: ${cachedStore.stats.operations} operations with the cache, ${plain.stats.operations} without`,
    );
  }
});
