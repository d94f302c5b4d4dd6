/**
 * `sluice/express-rate-limit`: a `Store` for express-rate-limit whose counts are sluice's, on the memory
 * store, Redis or Redis Cluster. express-rate-limit still decides (`totalHits > limit`); the store counts
 * every hit in an epoch-aligned fixed window (or a sliding-window estimate) with sluice's atomic scripts.
 *
 * @example
 * import { rateLimit } from 'express-rate-limit';
 * import { SluiceStore } from 'sluice/express-rate-limit';
 * app.use(rateLimit({ windowMs: 60_000, limit: 100, store: new SluiceStore() }));
 */
import type {
  ClientRateLimitInfo,
  IncrementResponse,
  Options,
  Store as ExpressRateLimitStore,
} from 'express-rate-limit';
import { SluiceError, show } from '../core/errors.js';
import { check } from '../core/option-checks.js';
import type { Clock } from '../core/types.js';
import { Limiter } from '../limiter.js';
import { MemoryStore } from '../stores/memory.js';
import { STORE_ERROR } from '../stores/redis/failure.js';
import type { Store } from '../stores/store.js';

export interface SluiceStoreOptions {
  /** Where the counts live: a MemoryStore (default, one per SluiceStore) or a RedisStore (standalone or Cluster). */
  store?: Store;
  /**
   * 'fixed-window' (default): hits in the current epoch-aligned window of `windowMs`. 'sliding-window':
   * the sliding-window estimate (the last window's hits weighted by how much of it is still inside the
   * window), which does not let 2 × limit through across a boundary.
   */
  algorithm?: 'fixed-window' | 'sliding-window';
  /** Sub-windows of the sliding-window estimate (default 1); more is tighter and keeps more numbers per key. */
  buckets?: number;
  /**
   * Names this limiter's counts in the store: give each rateLimit() that shares a RedisStore its own (as
   * rate-limit-redis's `prefix`). Default `erl-<windowMs>ms`.
   */
  prefix?: string;
  /** Milliseconds since the epoch (tests inject one). Default: sluice's clock. */
  clock?: Clock;
  /**
   * rate-limit-redis's option, accepted as `false` (its default, and how every sluice window behaves);
   * `true` is refused with what to use instead.
   */
  resetExpiryOnChange?: false;
}

const KNOWN = new Set(['store', 'algorithm', 'buckets', 'prefix', 'clock']);

/**
 * The count no key can reach: a policy limit so high that every hit is admitted, and so counted, as
 * express-rate-limit's stores count. For the sliding window, small enough that the estimate times its
 * sub-window stays an exact integer in a double (the Lua twin compares on it).
 */
function countCap(algorithm: 'fixed-window' | 'sliding-window', windowMs: number, buckets: number): number {
  const cap = 2 ** 31 - 1;
  return algorithm === 'fixed-window'
    ? cap
    : Math.min(cap, Math.floor(Number.MAX_SAFE_INTEGER / Math.ceil(windowMs / buckets)));
}

const invalid = (message: string) => new SluiceError('ERR_SLUICE_INVALID_OPTION', `[SluiceStore] ${message}`);

/** express-rate-limit's Store over a sluice Limiter. `init` is called by rateLimit() with its options. */
export class SluiceStore implements ExpressRateLimitStore {
  /** Counts in a MemoryStore are this process's only; in Redis they are shared (express-rate-limit's double-count check reads this). */
  readonly localKeys: boolean;
  prefix: string | undefined;
  private readonly store: Store;
  private readonly algorithm: 'fixed-window' | 'sliding-window';
  private readonly buckets: number;
  private readonly clock: Clock | undefined;
  private limiter: Limiter | undefined;
  private cap = 0;
  /** Why init failed: express-rate-limit only logs init's errors, so each call then throws it. */
  private failed: Error | undefined;

  constructor(options: SluiceStoreOptions = {}) {
    if (typeof options !== 'object' || options === null)
      throw invalid(`options must be an object, got ${show(options)}`);
    for (const field of Object.keys(options)) {
      if (field === 'resetExpiryOnChange') continue;
      if (!KNOWN.has(field)) throw invalid(`unknown option '${field}'; known options are ${[...KNOWN].join(', ')}`);
    }
    // rate-limit-redis's option: false is its default and sluice's behaviour; true (a count that lives until
    // windowMs after its last hit) is no window sluice keeps, so it is refused with what to use instead.
    const resetExpiryOnChange = (options as { resetExpiryOnChange?: unknown }).resetExpiryOnChange;
    if (resetExpiryOnChange !== undefined && resetExpiryOnChange !== false) {
      throw invalid(
        `rate-limit-redis's 'resetExpiryOnChange' is not supported, got ${show(resetExpiryOnChange)}: windows here are epoch-aligned and ` +
          `end on the clock, not windowMs after a key's last hit. Remove it (false is its default), or keep a client that keeps ` +
          `retrying refused with algorithm: 'sliding-window', or with sluice's own middleware and a policy's 'blockFor' (docs/migrating.md)`,
      );
    }
    const algorithm = options.algorithm ?? 'fixed-window';
    check.oneOf(algorithm, ['fixed-window', 'sliding-window'], "[SluiceStore] 'algorithm'", {
      note: '(the algorithms whose state is a count of hits)',
    });
    const buckets = options.buckets ?? 1;
    if (!Number.isInteger(buckets) || buckets < 1 || (algorithm === 'fixed-window' && options.buckets !== undefined)) {
      throw invalid(
        `'buckets' is a positive integer for algorithm 'sliding-window' only, got ${show(options.buckets)}`,
      );
    }
    if (options.prefix !== undefined && (typeof options.prefix !== 'string' || options.prefix === '')) {
      throw invalid(`'prefix' must be a non-empty string, got ${show(options.prefix)}`);
    }
    this.store = options.store ?? new MemoryStore();
    this.localKeys = this.store instanceof MemoryStore;
    this.algorithm = algorithm;
    this.buckets = buckets;
    this.prefix = options.prefix;
    this.clock = options.clock;
  }

  init(options: Options): void {
    try {
      const windowMs = options.windowMs;
      check.positiveInteger(windowMs, "[SluiceStore] express-rate-limit's 'windowMs'", { unit: 'milliseconds' });
      this.cap = countCap(this.algorithm, windowMs, this.buckets);
      if (typeof options.limit === 'number' && options.limit >= this.cap) {
        throw invalid(
          `express-rate-limit's 'limit' ${options.limit} is at or above the most this store counts per window (${this.cap})`,
        );
      }
      this.prefix ??= `erl-${windowMs}ms`;
      const policy = {
        name: this.prefix,
        algorithm: this.algorithm,
        limit: this.cap,
        window: windowMs,
        ...(this.algorithm === 'sliding-window' ? { buckets: this.buckets } : {}),
      };
      this.limiter = new Limiter({
        policy,
        store: this.store,
        ...(this.clock === undefined ? {} : { clock: this.clock }),
      });
      this.failed = undefined;
    } catch (e) {
      this.failed = e as Error;
      throw e;
    }
  }

  private get ready(): Limiter {
    if (this.failed !== undefined) throw this.failed;
    if (this.limiter === undefined)
      throw invalid(`init() was not called: pass the store to express-rate-limit's rateLimit({ store })`);
    return this.limiter;
  }

  /**
   * The count and window end of a key. A key with no hits answers `{ totalHits: 0 }`, as both
   * express-rate-limit's MemoryStore and rate-limit-redis answer for a key decremented to 0: an epoch-aligned
   * window keeps no record of a key apart from its count, so a key never seen (or reset) answers the same,
   * where they answer undefined (docs/migrating.md). Never undefined.
   */
  async get(key: string): Promise<ClientRateLimitInfo> {
    const d = await this.ready.get(key);
    this.checkAnswer(d.reason);
    return { totalHits: this.cap - d.remaining, resetTime: this.resetTime(d.resetAfterMs) };
  }

  async increment(key: string): Promise<IncrementResponse> {
    const d = await this.ready.limit(key);
    this.checkAnswer(d.reason);
    // Denied only at the cap: one more than it, so express-rate-limit refuses.
    const totalHits = d.allowed ? this.cap - d.remaining : this.cap + 1;
    return { totalHits, resetTime: this.resetTime(d.allowed ? d.resetAfterMs : d.retryAfterMs) };
  }

  async decrement(key: string): Promise<void> {
    await this.ready.reward(key);
  }

  async resetKey(key: string): Promise<void> {
    await this.ready.reset(key);
  }

  private resetTime(afterMs: number): Date {
    return new Date((this.clock ?? Date.now)() + afterMs);
  }

  /**
   * A RedisStore that could not reach Redis answers by its `onError`; here that answer would be a count
   * nobody made, so it becomes an error, and express-rate-limit's `passOnStoreError` decides (its default
   * refuses the request with its error handler; true lets it through and logs).
   */
  private checkAnswer(reason: string | undefined): void {
    if (reason !== STORE_ERROR) return;
    // A RedisStore says what its outage is (and logs it once, unless told otherwise): the error names it.
    const outage = (this.store as { outage?: () => { cause: string; downMs: number } | undefined }).outage?.();
    const why =
      outage === undefined
        ? 'its store answered by its failure policy'
        : `Redis has not answered for ${outage.downMs} ms (${outage.cause})`;
    throw new SluiceError(
      'ERR_SLUICE_STORE_UNAVAILABLE',
      `[SluiceStore] the store could not count this hit: ${why}; express-rate-limit's passOnStoreError decides`,
    );
  }
}
