// The lease and local-sync keys on Redis: in-process nodes on an injected client clock (far from Redis's
// own) share one budget, and every key lives until its window ends plus a second (local-sync's, one more
// window: the next window starts from its count of nodes), never forever.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, test } from 'node:test';
import { Redis } from 'ioredis';
import { Limiter } from '../../src/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { redisUrl, runPrefix } from './harness.js';

const client = new Redis(redisUrl());
after(() => client.disconnect());

for (const strategy of ['lease', 'local-sync'] as const) {
  test(`redis ${strategy}: three nodes on a client clock share one budget; keys expire with the window`, async () => {
    if (client.status !== 'ready') await once(client, 'ready');
    const prefix = runPrefix(`keys-${strategy}`);
    let now = 1_000_250; // 1970: a client clock nowhere near Redis's
    const nodes = [0, 1, 2].map(() => new Limiter({
      policy: { name: 'p', algorithm: 'fixed-window', limit: 5, window: 1000 },
      store: new RedisStore({ client, prefix, clock: 'client', onError: 'closed', timeoutMs: 2000 }),
      clock: () => now,
      strategy,
      ...(strategy === 'local-sync' ? { localSync: { threshold: 1 } } : {}),
    }));
    let admitted = 0;
    for (let i = 0; i < 30; i++) if ((await nodes[i % 3]!.limit('k')).allowed) admitted++;
    const bound = strategy === 'lease' ? 5 : 5 + 3 * 1;
    assert.ok(admitted >= 5 && admitted <= bound, `${admitted} admitted, limit 5`);
    const key = `${prefix}:{k}:p:${strategy === 'lease' ? 'lease' : 'sync'}`;
    const ttl = await client.pttl(key);
    const extra = strategy === 'lease' ? 1000 : 2000;
    assert.ok(ttl > extra && ttl <= 750 + extra, `${key} expires in ${ttl} ms: the window's 750 ms left plus ${extra}`);
    now += 1000; // the next window: a fresh budget
    let next = 0;
    for (let i = 0; i < 30; i++) if ((await nodes[i % 3]!.limit('k')).allowed) next++;
    assert.ok(next >= 5 && next <= bound, `${next} admitted in the next window`);
  });
}
