/**
 * `sluice/kit`: the one seam between the limiter and the products built on it (@sluice/guard, @sluice/pow,
 * @sluice/outbound, @sluice/serve). A product imports the limiter through this entry and nothing else; the
 * layer check (scripts/check-layers.ts) and each product's build (rootDir: src) hold them to it.
 *
 * Each export is a promise: its name, signature and meaning change only with a major version of `sluice`,
 * as the public entries do. What is not here may change in any release. The kit is for sluice's own
 * products; an application wants `sluice`, `sluice/redis` and the middleware entries. Where Node's
 * built-ins are not (Workers, browsers), the default condition serves portable.ts: all of this but the
 * Redis kit.
 */
export * from './portable.js';
export { checkRegionsPolicies } from '../distributed/regions/bind.js';

// The Redis kit. RedisConnection is the one path to Redis: the client adapters (ioredis, node-redis,
// iovalkey, GLIDE), plain commands (redisCommand), scripts and function libraries (defineLibrary, with
// the store's Lua by luaSource), each call's deadline, the in-flight bound, and the failure policy
// (Fallback, OnError). Keys are hash-tagged per id (escapeId, slotOf); RedisStore's option checks and
// outage reporting are shared (checkRedisBasics, checkReporting), so every product says an outage once.
export { RedisStore } from '../stores/redis/redis-store.js';
export { connectionStats, type ConnectionStats, redisCommand, RedisConnection } from '../stores/redis/connection.js';
export { adapt, dialectOf, type RedisDialect, type RedisSetClient } from '../stores/redis/adapter.js';
export { defineLibrary } from '../stores/redis/script.js';
export type { LibraryScript, Script } from '../stores/redis/script-shape.js';
export { luaSource } from '../stores/redis/scripts.js';
export { escapeId, slotOf } from '../stores/redis/keys.js';
export { Fallback, type OnError } from '../stores/redis/failure.js';
// The one turn batcher: a feature's operations of a turn of the event loop, sent when the turn ends (or,
// eagerly, once a call is full), in calls of a bounded size, one hash slot each on a Cluster; each call
// goes through the feature's RedisConnection. RedisStore's tables and the guard's state both use it.
export { bySlot } from '../stores/redis/batch.js';
export { TurnBatch, type TurnBatchOptions } from '../stores/redis/turn-batch.js';
export { checkRedisBasics } from '../stores/redis/options.js';
export {
  checkReporting,
  type RedisStoreEvent,
  type RedisStoreListener,
  type StoreLogger,
} from '../stores/redis/health.js';
