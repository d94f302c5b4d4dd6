/**
 * The facade users call. It validates once at construction, validates each request cheaply, and hands the
 * decision to a store table; the arithmetic lives in core/ and the state in stores/.
 *
 * @example
 * const limiter = new Limiter({ policy: { algorithm: 'gcra', limit: 10, window: '1m' } });
 * const d = await limiter.limit('user:42');
 * if (!d.allowed) reply429(d.retryAfterMs);
 */
import { coarseClock } from './clock.js';
import { compilePolicies, createAlgorithm, SluiceError, show } from './core/index.js';
import type { Decision, Policy, PolicyOptions } from './core/index.js';
import { bindStrategy, type Strategy } from './distributed/strategy.js';
import type { DenyCacheOptions } from './distributed/deny-cache.js';
import type { LeaseOptions } from './distributed/lease.js';
import type { LocalSyncOptions } from './distributed/local-sync.js';
import { MemoryStore } from './stores/memory.js';
import type { Clock } from './core/types.js';
import type { Store, StoreTable } from './stores/store.js';

export interface LimiterOptions {
  /** One policy; or give `policies`. */
  policy?: PolicyOptions;
  /** Several policies on every key, decided atomically: if any rejects, none is charged. */
  policies?: PolicyOptions[];
  /** Where state lives. Default: a new MemoryStore. */
  store?: Store;
  /** Milliseconds on an epoch-aligned, monotonic timeline. Tests inject one; default `coarseClock`. */
  clock?: Clock;
  /**
   * How decisions reach a shared store (README, "Beyond one round trip"). 'atomic' (default): every
   * decision runs the store's script, exact. 'lease': nodes lease chunks of the budget, never above the
   * limit. 'local-sync': nodes admit locally and flush counts, exact near the limit, overshoot at most
   * nodes × threshold (src/distributed/local-sync.ts states the bound term by term).
   * 'lease' and 'local-sync' need a RedisStore and one fixed-window policy.
   */
  strategy?: Strategy;
  /** Answer denied keys locally until retryAfterMs passes, with no store call. Default off. */
  denyCache?: boolean | DenyCacheOptions;
  /** Options of strategy 'lease'. */
  lease?: LeaseOptions;
  /** Options of strategy 'local-sync'. */
  localSync?: LocalSyncOptions;
}

export interface LimitOptions {
  /** Weight of the request (GraphQL points, bytes, ...). A non-negative integer; 0 peeks. Default 1. */
  cost?: number;
}

const KNOWN_OPTIONS = new Set(['policy', 'policies', 'store', 'clock', 'strategy', 'denyCache', 'lease', 'localSync']);

export class Limiter {
  readonly policies: readonly Policy[];
  readonly store: Store;
  /** The table decisions go to: the store's own, or a strategy's (exposed for metrics and tests). */
  readonly table: StoreTable;
  /** The largest cost any request can have: the smallest capacity among the policies. */
  private readonly capacity: number;
  private readonly leasePrefix: string | undefined;
  private leaseSeq = 0;

  constructor(options: LimiterOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `Limiter options must be an object, got ${show(options)}`);
    }
    for (const field of Object.keys(options)) {
      if (!KNOWN_OPTIONS.has(field)) {
        throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `unknown Limiter option '${field}'; known options are ${[...KNOWN_OPTIONS].join(', ')}`);
      }
    }
    if ((options.policy === undefined) === (options.policies === undefined)) {
      throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `give exactly one of 'policy' or 'policies'`);
    }
    this.policies = compilePolicies(options.policies ?? [options.policy!]);
    const clock = options.clock ?? coarseClock;
    if (typeof clock !== 'function') {
      throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `'clock' must be a function returning milliseconds, got ${show(clock)}`);
    }
    this.store = options.store ?? new MemoryStore();
    if (typeof this.store !== 'object' || this.store === null || typeof this.store.bind !== 'function') {
      throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `'store' must be a sluice store such as new MemoryStore(), got ${show(this.store)}`);
    }
    const spec = { policies: this.policies, algorithms: this.policies.map(createAlgorithm), clock };
    this.table = bindStrategy(this.store, spec, { ...options, clockGiven: options.clock !== undefined });
    this.capacity = Math.min(...this.policies.map((p) => p.capacity));
    this.leasePrefix = this.policies.some((p) => p.algorithm === 'concurrency')
      ? `${process.pid.toString(36)}.${Math.floor(Math.random() * 2 ** 32).toString(36)}.`
      : undefined;
  }

  /**
   * Decides one request of `cost` (default 1) for `key`, charging every policy only if all admit. Bad input
   * rejects, as from an async function. Not `async` itself: an async function that returns a store's
   * Promise settles through two more microtask hops (~40 ns here) than handing that Promise on.
   */
  limit(key: string, options?: LimitOptions): Promise<Decision> {
    try {
      const cost = options === undefined || options.cost === undefined ? 1 : this.checkCost(options.cost);
      checkKey(key);
      return settled(this.table.decide(key, cost, this.leasePrefix === undefined || cost === 0 ? undefined : this.nextLease()));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** `limit` without the Promise, for stores that decide synchronously (the memory store). */
  limitSync(key: string, options?: LimitOptions): Decision {
    const cost = options === undefined || options.cost === undefined ? 1 : this.checkCost(options.cost);
    checkKey(key);
    if (!this.table.sync) throw new SluiceError('ERR_SLUICE_SYNC_UNSUPPORTED', `limitSync() needs a synchronous store such as MemoryStore; this store answers asynchronously, use limit()`);
    return this.table.decide(key, cost, this.leasePrefix === undefined || cost === 0 ? undefined : this.nextLease()) as Decision;
  }

  /** Peeks: the decision a request of cost 0 would get. Changes nothing. */
  get(key: string): Promise<Decision> {
    try {
      checkKey(key);
      return settled(this.table.decide(key, 0, undefined));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** Forgets all state for `key`. */
  async reset(key: string): Promise<void> {
    checkKey(key);
    await this.table.reset(key);
  }

  /** Charges `cost` more to `key` without a limit check (an outcome learnt late, e.g. a failed login). */
  async penalty(key: string, cost = 1): Promise<Decision> {
    checkKey(key);
    return this.table.adjust(key, this.checkAdjustment(cost, 'penalty'));
  }

  /** Refunds `cost` to `key` (e.g. a request that turned out cheap). Never below unused. */
  async reward(key: string, cost = 1): Promise<Decision> {
    checkKey(key);
    return this.table.adjust(key, -this.checkAdjustment(cost, 'reward'));
  }

  /** Ends a concurrency lease before its timeout. Returns whether the lease was still held. */
  async release(key: string, leaseId: string): Promise<boolean> {
    checkKey(key);
    if (typeof leaseId !== 'string' || leaseId.length === 0) {
      throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `'leaseId' must be the leaseId of an allowed decision, got ${show(leaseId)}`);
    }
    return this.table.release(key, leaseId);
  }

  private nextLease(): string | undefined {
    return this.leasePrefix === undefined ? undefined : this.leasePrefix + (++this.leaseSeq).toString(36);
  }

  private checkCost(cost: unknown): number {
    if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 0) {
      throw new SluiceError('ERR_SLUICE_INVALID_COST', `'cost' must be a non-negative integer, got ${show(cost)}`);
    }
    if (cost > this.capacity) {
      const p = this.policies.find((q) => cost > q.capacity)!;
      throw new SluiceError(
        'ERR_SLUICE_COST_EXCEEDS_CAPACITY',
        `'cost' ${cost} can never pass policy ${show(p.name)}, whose capacity is ${p.capacity}; split the request or raise ${p.algorithm === 'token-bucket' || p.algorithm === 'gcra' || p.algorithm === 'leaky-bucket' ? "'burst'" : "'limit'"}`,
      );
    }
    return cost;
  }

  private checkAdjustment(cost: unknown, field: string): number {
    if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 0) {
      throw new SluiceError('ERR_SLUICE_INVALID_COST', `${field} 'cost' must be a non-negative integer, got ${show(cost)}`);
    }
    return cost;
  }
}

/** A store's answer as a Promise: its own if it made one, else one resolved with the decision. */
function settled(d: Decision | Promise<Decision>): Promise<Decision> {
  return d instanceof Promise ? d : Promise.resolve(d);
}

function checkKey(key: unknown): void {
  if (typeof key !== 'string' || key.length === 0) {
    throw new SluiceError('ERR_SLUICE_INVALID_KEY', `'key' must be a non-empty string, got ${show(key)}`);
  }
}
