/** `sluice/redis`: the Redis and Redis Cluster store. Needs ioredis or redis (node-redis) installed. */
export { RedisStore, type RedisStoreOptions } from './redis-store.js';
export type { OnError } from './failure.js';
export type { RedisStoreStats } from './table.js';
export { CLOSED_RETRY_MS, STORE_ERROR } from './failure.js';
export { evictsLimits, SAFE_EVICTION_POLICIES, type RedisStoreEvent, type RedisStoreListener } from './health.js';
