// sluice's stores for express-rate-limit and @nestjs/throttler on Redis: their store contracts on the shared
// standalone Redis (ioredis and node-redis) and on a Redis Cluster this file starts, and what each does when
// Redis is gone (express-rate-limit: an error for its passOnStoreError; the throttler: the RedisStore's onError);
// rate-limit-redis's store suite and the throttler's controller e2e spec on the standalone Redis.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Options } from 'express-rate-limit';
import { Redis } from 'ioredis';
import { SluiceStore } from '../../src/compat/express-rate-limit.js';
import { SluiceThrottlerStorage } from '../../src/compat/nestjs-throttler.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import {
  expressRateLimitStoreContract,
  rateLimitRedisStoreContract,
  throttlerStorageContract,
} from '../contracts/compat-stores.js';
import { throttlerE2eSuite } from '../contracts/throttler-e2e.js';
import { connectBothClients, freePort, runPrefix, useCluster } from '../../../testing/src/harness.js';

const prefix = runPrefix('compat');
const both = await connectBothClients(async (io) => {
  const keys = await io.keys(`${prefix}*`);
  if (keys.length > 0) await io.del(...keys);
});
const cluster = useCluster();
const on = (client: unknown) => () => new RedisStore({ client, prefix, clock: 'client', timeoutMs: 2000 });

expressRateLimitStoreContract('redis (ioredis)', on(both.io));
expressRateLimitStoreContract('redis (node-redis)', on(both.nr));
throttlerStorageContract('redis (ioredis)', on(both.io));
throttlerStorageContract('redis (node-redis)', on(both.nr));
throttlerStorageContract('redis (ioredis) gcra', on(both.io), 'gcra');
rateLimitRedisStoreContract('redis (ioredis)', on(both.io));
rateLimitRedisStoreContract('redis (node-redis)', on(both.nr));
throttlerE2eSuite('redis (ioredis)', on(both.io));
expressRateLimitStoreContract(
  'redis cluster (ioredis)',
  () => new RedisStore({ client: cluster.io, prefix, clock: 'client', timeoutMs: 2000 }),
);
throttlerStorageContract(
  'redis cluster (ioredis)',
  () => new RedisStore({ client: cluster.io, prefix, clock: 'client', timeoutMs: 2000 }),
);
throttlerStorageContract(
  'redis cluster (node-redis)',
  () => new RedisStore({ client: cluster.nr, prefix, clock: 'client', timeoutMs: 2000 }),
);

test('redis gone: the express-rate-limit store rejects (its passOnStoreError decides); the throttler storage answers by onError', async () => {
  const port = await freePort(); // nothing listens there
  const client = new Redis({ port, lazyConnect: false, maxRetriesPerRequest: 0, retryStrategy: () => 50 });
  client.on('error', () => {});
  const errors = console.error;
  console.error = () => {}; // the RedisStore logs the outage, as it should
  try {
    const dead = (onError: 'open' | 'closed') =>
      new RedisStore({ client, prefix, timeoutMs: 20, connectTimeoutMs: 20, onError });
    const erl = new SluiceStore({ store: dead('open') });
    erl.init({ windowMs: 60_000, limit: 5 } as Options);
    await assert.rejects(
      erl.increment('k'),
      (e: Error & { code?: string }) => e.code === 'ERR_SLUICE_STORE_UNAVAILABLE' && /passOnStoreError/.test(e.message),
    );
    const open = await new SluiceThrottlerStorage({ store: dead('open') }).increment('k', 60_000, 5, 0, 'default');
    assert.equal(open.isBlocked, false);
    const closed = await new SluiceThrottlerStorage({ store: dead('closed') }).increment('k', 60_000, 5, 0, 'default');
    assert.equal(closed.isBlocked, true);
    assert.ok(closed.timeToBlockExpire >= 1);
  } finally {
    console.error = errors;
    client.disconnect();
  }
});
