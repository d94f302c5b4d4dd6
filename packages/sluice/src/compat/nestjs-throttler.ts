/**
 * A `ThrottlerStorage` for @nestjs/throttler decided by sluice: its guard and decorators stay as they are;
 * the state is sluice's, on the memory store, Redis or Redis Cluster, and a request over the limit changes
 * no state. Exported from `sluice/nestjs`.
 *
 * @example
 * ThrottlerModule.forRoot({ throttlers: [{ ttl: 60_000, limit: 10 }], storage: new SluiceThrottlerStorage({ store: redisStore }) })
 */
import type { ThrottlerStorage } from '@nestjs/throttler';
import { SluiceError, show } from '../core/errors.js';
import { check } from '../core/option-checks.js';
import type { Clock, Decision, PolicyOptions } from '../core/types.js';
import { Limiter } from '../limiter.js';
import { MemoryStore } from '../stores/memory.js';
import type { Store } from '../stores/store.js';

export type ThrottlerAlgorithm = 'sliding-log' | 'sliding-window' | 'fixed-window' | 'token-bucket' | 'gcra';
/** What `increment` answers (@nestjs/throttler does not export its name from the package root). */
export type ThrottlerStorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

const ALGORITHMS: readonly ThrottlerAlgorithm[] = [
  'sliding-log',
  'sliding-window',
  'fixed-window',
  'token-bucket',
  'gcra',
];

export interface SluiceThrottlerStorageOptions {
  /** Where the state lives: a MemoryStore (default, one per storage) or a RedisStore (standalone or Cluster). */
  store?: Store;
  /**
   * How a throttler's `limit` per `ttl` is decided. Default 'sliding-log', as @nestjs/throttler's own
   * storage (a hit counts for `ttl` after it; state O(limit) per key). 'sliding-window' and 'fixed-window'
   * keep a few numbers per key; 'token-bucket' and 'gcra' refill continuously.
   */
  algorithm?: ThrottlerAlgorithm;
  /** Prefixes the policy names, so that two storages sharing a RedisStore keep apart. Default 'throttler'. */
  prefix?: string;
  /** Milliseconds since the epoch (tests inject one). Default: sluice's clock. */
  clock?: Clock;
}

const KNOWN = new Set(['store', 'algorithm', 'prefix', 'clock']);
const invalid = (message: string) =>
  new SluiceError('ERR_SLUICE_INVALID_OPTION', `[SluiceThrottlerStorage] ${message}`);
const seconds = (ms: number) => Math.ceil(ms / 1000);

/**
 * @nestjs/throttler's storage contract, decided by sluice. One Limiter per throttler name, `ttl` and
 * `blockDuration`; a `limit` that differs per route or per request is a per-call limit on the same state.
 */
export class SluiceThrottlerStorage implements ThrottlerStorage {
  private readonly store: Store;
  private readonly algorithm: ThrottlerAlgorithm;
  private readonly prefix: string;
  private readonly clock: Clock | undefined;
  private readonly limiters = new Map<string, { limiter: Limiter; policy: string; limit: number }>();

  constructor(options: SluiceThrottlerStorageOptions = {}) {
    if (typeof options !== 'object' || options === null)
      throw invalid(`options must be an object, got ${show(options)}`);
    for (const field of Object.keys(options)) {
      if (!KNOWN.has(field)) throw invalid(`unknown option '${field}'; known options are ${[...KNOWN].join(', ')}`);
    }
    const algorithm = options.algorithm ?? 'sliding-log';
    check.oneOf(algorithm, ALGORITHMS, "[SluiceThrottlerStorage] 'algorithm'");
    if (options.prefix !== undefined && (typeof options.prefix !== 'string' || options.prefix === ''))
      throw invalid(`'prefix' must be a non-empty string, got ${show(options.prefix)}`);
    this.store = options.store ?? new MemoryStore();
    this.algorithm = algorithm;
    this.prefix = options.prefix ?? 'throttler';
    this.clock = options.clock;
  }

  /**
   * Counts a hit of `key` unless it is over `limit` per `ttl` ms; over it, the key is blocked for
   * `blockDuration` ms when that is positive. Times in the record are whole seconds, rounded up.
   */
  async increment(
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    throttlerName: string,
  ): Promise<ThrottlerStorageRecord> {
    const throttler = `[SluiceThrottlerStorage] throttler ${show(throttlerName)}:`;
    check.positiveInteger(ttl, `${throttler} 'ttl'`, { unit: 'milliseconds' });
    check.nonNegativeInteger(limit, `${throttler} 'limit'`);
    if (typeof blockDuration !== 'number' || !Number.isSafeInteger(Math.max(0, blockDuration))) {
      throw invalid(
        `throttler ${show(throttlerName)}: 'blockDuration' must be an integer of milliseconds, got ${show(blockDuration)}`,
      );
    }
    const block = Math.max(0, blockDuration);
    // A limit of 0 admits nothing and needs no state: every hit is refused, for the block or the ttl.
    if (limit === 0)
      return {
        totalHits: 1,
        timeToExpire: seconds(ttl),
        isBlocked: true,
        timeToBlockExpire: seconds(block > 0 ? block : ttl),
      };
    const entry = this.limiterFor(throttlerName, ttl, block, limit);
    const d =
      limit === entry.limit
        ? await entry.limiter.limit(key)
        : await entry.limiter.limit(key, { limits: { [entry.policy]: limit } });
    if (d.allowed || !d.blocked || d.reason !== undefined) return record(d, limit);
    // A block, as the throttler's own storage keeps it: the window's hits are forgotten, so that when the
    // block ends the key counts afresh (it resets the count at the block's end; emptying it at the start
    // is the same to every caller, since nothing passes meanwhile). A refund keeps the ban, which the
    // same state holds. Only the refusal that starts the block waits all of it (later ones wait less, to
    // within a millisecond), so refusals during the block cost no second call. The ban alone is the wait.
    if (d.retryAfterMs >= block) await entry.limiter.reward(key, EVERY_HIT);
    return record(d, limit, block);
  }

  private limiterFor(
    name: string,
    ttl: number,
    block: number,
    limit: number,
  ): { limiter: Limiter; policy: string; limit: number } {
    const id = `${name}\u0000${ttl}\u0000${block}`;
    let entry = this.limiters.get(id);
    if (entry === undefined) {
      const policy = `${this.prefix}-${name}-${ttl}ms${block > 0 ? `-block${block}ms` : ''}`;
      const options: PolicyOptions = {
        name: policy,
        algorithm: this.algorithm,
        limit,
        window: ttl,
        ...(block > 0 ? { blockFor: block } : {}),
      };
      const limiter = new Limiter({
        policy: options,
        store: this.store,
        ...(this.clock === undefined ? {} : { clock: this.clock }),
      });
      entry = { limiter, policy, limit };
      this.limiters.set(id, entry);
    }
    return entry;
  }
}

/** A refund larger than any window's count: it empties the window whatever limits the key has seen. */
const EVERY_HIT = 2 ** 31 - 1;

/**
 * The record the throttler's guard reads: hits so far (limit + 1 when refused), and seconds to wait. A
 * blocked key waits for its block (at most `block` ms), not for hits its emptied window no longer holds.
 */
function record(d: Decision, limit: number, block = Infinity): ThrottlerStorageRecord {
  if (d.allowed)
    return {
      totalHits: Math.max(1, limit - d.remaining),
      timeToExpire: seconds(d.resetAfterMs),
      isBlocked: false,
      timeToBlockExpire: 0,
    };
  const waitMs = Math.min(d.retryAfterMs, block);
  return {
    totalHits: limit + 1,
    timeToExpire: seconds(Math.max(d.resetAfterMs, waitMs)),
    isBlocked: true,
    timeToBlockExpire: Math.max(1, seconds(waitMs)),
  };
}
