/**
 * Spent store on Redis: one `SET key 1 NX PX ttl` per redemption, atomic across every server sharing the
 * Redis, sent through the Redis connection layer's client adapter (src/stores/redis/adapter.ts). The
 * client is duck-typed, so no Redis client is a dependency of sluice.
 */
import { SluiceError, show } from '../core/errors.js';
import { dialectOf, setIfAbsent, type RedisDialect, type RedisSetClient } from '../stores/redis/adapter.js';
import type { SpentStore } from './spent-store.js';

/**
 * The one method used: ioredis (and iovalkey) `set(key, value, 'PX', ms, 'NX')`, node-redis
 * `set(key, value, { PX, NX })` or valkey-glide `set(key, value, { conditionalSet, expiry })`.
 */
export type { RedisDialect, RedisSetClient };

export interface RedisSpentStoreOptions {
  client: RedisSetClient;
  /** Key prefix. Default 'sluice:pow:spent:'. */
  prefix?: string;
  /** How `set` takes its options. Default: detected (node-redis clients have `isOpen`, ioredis ones `status`, glide ones `customCommand`). */
  dialect?: RedisDialect;
}

export class RedisSpentStore implements SpentStore {
  private readonly client: RedisSetClient;
  private readonly prefix: string;
  private readonly dialect: RedisDialect;

  constructor(options: RedisSpentStoreOptions) {
    const client = options?.client;
    if (typeof client !== 'object' || client === null || typeof client.set !== 'function') {
      throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `RedisSpentStore: 'client' must be an ioredis, iovalkey, node-redis or valkey-glide client with set(), got ${show(client)}`);
    }
    this.client = client;
    this.prefix = options.prefix ?? 'sluice:pow:spent:';
    if (typeof this.prefix !== 'string') {
      throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `RedisSpentStore: 'prefix' must be a string, got ${show(options.prefix)}`);
    }
    const dialect = options.dialect ?? dialectOf(client);
    if (dialect !== 'ioredis' && dialect !== 'node-redis' && dialect !== 'glide') {
      // Guessing wrong would be silent and dangerous: node-redis ignores ioredis-style string arguments,
      // which would drop NX and let every solution replay.
      throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `RedisSpentStore: 'dialect' must be 'ioredis', 'node-redis' or 'glide' (it could not be detected from the client), got ${show(options.dialect)}`);
    }
    this.dialect = dialect;
  }

  spend(id: string, expiresAt: number, now: number): Promise<boolean> {
    const key = this.prefix + id;
    const ttlMs = Math.max(1, Math.ceil(expiresAt - now));
    return setIfAbsent(this.client, this.dialect, key, '1', ttlMs);
  }
}
