/**
 * The facade users call. It validates once at construction, validates each request cheaply, and hands the
 * decision to a store table; the arithmetic lives in core/ and the state in stores/.
 *
 * @example
 * const limiter = new Limiter({ policy: { algorithm: 'gcra', limit: 10, window: '1m' } });
 * const d = await limiter.limit('user:42');
 * if (!d.allowed) reply429(d.retryAfterMs);
 */
import { brandOf, isInstance, SLUICE_VERSION } from './core/brand.js';
import { coarseClock } from './clock.js';
import {
  compilePolicies,
  createAlgorithm,
  createOverride,
  numberHint,
  overridePolicy,
  SluiceError,
  show,
} from './core/index.js';
import type { Algorithm, Decision, LimitOverride, Policy, PolicyOptions } from './core/index.js';
import { bindStrategy, type Strategy } from './distributed/strategy.js';
import type { DenyCacheOptions } from './distributed/deny-cache.js';
import type { LeaseOptions } from './distributed/lease.js';
import type { LocalSyncOptions } from './distributed/local-sync.js';
import { instanceTag } from './runtime.js';
import { MemoryStore } from './stores/memory.js';
import { currentTelemetry, type Telemetry } from './telemetry.js';
import type { Clock } from './core/types.js';
import { type CheckOptions, check } from './core/option-checks.js';
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
   * How decisions reach a shared store (docs/distributed.md). 'atomic' (default): every
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
  /**
   * Count decisions and time store calls in OpenTelemetry (`await openTelemetry()`). Default: what
   * `setTelemetry()` set, else none (and then no cost: the store's table is used as it is).
   */
  telemetry?: Telemetry;
}

export interface LimitOptions {
  /** Weight of the request (GraphQL points, bytes, ...). A non-negative integer; 0 peeks. Default 1. */
  cost?: number;
  /**
   * Per-call limits, by policy name: this call is decided with that limit (a tenant's plan, say) on the
   * same state as calls without one. A number, or `{ limit, burst }`; a bucket's burst otherwise scales
   * with the limit. See docs/algorithms.md, "Per-call limits".
   */
  limits?: Readonly<Record<string, LimitOverride>>;
}

/** Distinct per-call limits remembered per policy (each a compiled policy and its algorithm). */
const OVERRIDES_KEPT = 256;

const KNOWN_OPTIONS = new Set([
  'policy',
  'policies',
  'store',
  'clock',
  'strategy',
  'denyCache',
  'lease',
  'localSync',
  'telemetry',
]);

const LIMITER = brandOf('Limiter');

/** How a bad cost is refused: ERR_SLUICE_INVALID_COST, with advice for a numeric string. */
const COST: CheckOptions = { code: 'ERR_SLUICE_INVALID_COST', hint: (v) => numberHint('cost', v) };

export class Limiter {
  /** One from another copy of sluice (require and import each load one) of this release is a Limiter too. */
  static [Symbol.hasInstance](x: unknown): boolean {
    return isInstance(this, Limiter, LIMITER, x);
  }

  get [LIMITER](): string {
    return SLUICE_VERSION;
  }

  readonly policies: readonly Policy[];
  readonly store: Store;
  /** The table decisions go to: the store's own, or a strategy's (exposed for metrics and tests). */
  readonly table: StoreTable;
  /** The largest cost any request can have: the smallest capacity among the policies. */
  private readonly capacity: number;
  private readonly leasePrefix: string | undefined;
  private leaseSeq = 0;
  private readonly algorithms: readonly Algorithm[];
  /** Per policy: the algorithms of per-call limits seen lately, by limit and burst. */
  private readonly overrides: Map<string, Algorithm>[];

  constructor(options: LimiterOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `Limiter options must be an object, got ${show(options)}`);
    }
    for (const field of Object.keys(options)) {
      if (!KNOWN_OPTIONS.has(field)) {
        throw new SluiceError(
          'ERR_SLUICE_INVALID_OPTION',
          `unknown Limiter option '${field}'; known options are ${[...KNOWN_OPTIONS].join(', ')}`,
        );
      }
    }
    if ((options.policy === undefined) === (options.policies === undefined)) {
      throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `give exactly one of 'policy' or 'policies'`);
    }
    this.policies = compilePolicies(options.policies ?? [options.policy!]);
    const clock = options.clock ?? coarseClock;
    check.function(clock, "'clock'", { note: 'returning milliseconds' });
    this.store = options.store ?? new MemoryStore();
    if (typeof this.store !== 'object' || this.store === null || typeof this.store.bind !== 'function') {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `'store' must be a sluice store such as new MemoryStore(), got ${show(this.store)}`,
      );
    }
    this.algorithms = this.policies.map(createAlgorithm);
    this.overrides = this.policies.map(() => new Map());
    const spec = { policies: this.policies, algorithms: this.algorithms, clock };
    const table = bindStrategy(this.store, spec, { ...options, clockGiven: options.clock !== undefined });
    const telemetry = options.telemetry ?? currentTelemetry();
    if (telemetry !== undefined && typeof telemetry?.instrument !== 'function') {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `'telemetry' must be what openTelemetry() returns, got ${show(telemetry)}`,
      );
    }
    this.table = telemetry === undefined ? table : telemetry.instrument(table, storeName(this.store));
    // A policy that counts rejected requests (countRejected) counts a cost above it too, as Envoy does.
    this.capacity = Math.min(...this.policies.map((p) => (p.countRejected ? Infinity : p.capacity)));
    this.leasePrefix = this.policies.some((p) => p.algorithm === 'concurrency') ? `${instanceTag()}.` : undefined;
  }

  /**
   * Decides one request of `cost` (default 1) for `key`, charging every policy only if all admit. Bad input
   * rejects, as from an async function. Not `async` itself: an async function that returns a store's
   * Promise settles through two more microtask hops than handing that Promise on.
   */
  limit(key: string, options?: LimitOptions): Promise<Decision> {
    try {
      if (options !== undefined && options.limits !== undefined) return settled(this.decideWith(key, options));
      const cost = options === undefined || options.cost === undefined ? 1 : this.checkCost(options.cost);
      checkKey(key);
      return settled(
        this.table.decide(key, cost, this.leasePrefix === undefined || cost === 0 ? undefined : this.nextLease()),
      );
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** `limit` without the Promise, for stores that decide synchronously (the memory store). */
  limitSync(key: string, options?: LimitOptions): Decision {
    if (!this.table.sync)
      throw new SluiceError(
        'ERR_SLUICE_SYNC_UNSUPPORTED',
        `limitSync() needs a synchronous store such as MemoryStore; this store answers asynchronously, use limit()`,
      );
    if (options !== undefined && options.limits !== undefined) return this.decideWith(key, options) as Decision;
    const cost = options === undefined || options.cost === undefined ? 1 : this.checkCost(options.cost);
    checkKey(key);
    return this.table.decide(
      key,
      cost,
      this.leasePrefix === undefined || cost === 0 ? undefined : this.nextLease(),
    ) as Decision;
  }

  /** A decision with per-call limits: validated, then decided on the same state with the overriding algorithms. */
  private decideWith(key: string, options: LimitOptions): Decision | Promise<Decision> {
    const algorithms = this.overriding(options.limits);
    const cost = options.cost === undefined ? 1 : this.checkCost(options.cost, algorithms);
    checkKey(key);
    const leaseId = this.leasePrefix === undefined || cost === 0 ? undefined : this.nextLease();
    if (algorithms === this.algorithms) return this.table.decide(key, cost, leaseId);
    if (this.table.decideWith === undefined) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `per-call 'limits' need strategy 'atomic' on a store that supports them (MemoryStore, RedisStore); this limiter's table does not`,
      );
    }
    return this.table.decideWith(key, cost, leaseId, algorithms);
  }

  /** The algorithms a call with `limits` is decided with: this limiter's own where a policy is not named. */
  private overriding(limits: unknown): readonly Algorithm[] {
    if (typeof limits !== 'object' || limits === null || Array.isArray(limits)) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `'limits' must be an object of limits by policy name, such as { ${show(this.policies[0]!.name)}: 100 }, got ${show(limits)}`,
      );
    }
    let out: Algorithm[] | undefined;
    for (const name of Object.keys(limits)) {
      const i = this.policies.findIndex((p) => p.name === name);
      if (i < 0) {
        throw new SluiceError(
          'ERR_SLUICE_INVALID_OPTION',
          `'limits' names no policy of this limiter: ${show(name)}; its policies are ${this.policies.map((p) => show(p.name)).join(', ')}`,
        );
      }
      const value = (limits as Record<string, unknown>)[name];
      const id = overrideId(value);
      const seen = this.overrides[i]!;
      let a = id === '' ? undefined : seen.get(id);
      if (a === undefined) {
        const base = this.policies[i]!;
        const variant = overridePolicy(base, value);
        a = variant === base ? this.algorithms[i]! : createOverride(base, variant);
        if (seen.size >= OVERRIDES_KEPT) seen.delete(seen.keys().next().value!);
        seen.set(id, a);
      }
      if (a !== this.algorithms[i]) (out ??= [...this.algorithms])[i] = a;
    }
    return out ?? this.algorithms;
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

  /**
   * Resolves once the store can decide: at once for the memory store; for a RedisStore once its client
   * is connected (it rejects with ERR_SLUICE_STORE_UNAVAILABLE after its connectTimeoutMs). For servers
   * that hold start-up until Redis answers; decisions never need it.
   */
  ready(): Promise<void> {
    return this.store.ready?.() ?? Promise.resolve();
  }

  /**
   * Done with this limiter: frees what its store holds for it in this process (a MemoryStore drops its
   * keys at once and no longer counts them against `maxKeys`; a 'lease' or 'local-sync' strategy returns
   * or flushes what it holds). State kept in Redis expires by its TTLs. A limiter used after close()
   * starts from no state.
   */
  async close(): Promise<void> {
    await this.table.close?.();
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
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `'leaseId' must be the leaseId of an allowed decision, got ${show(leaseId)}`,
      );
    }
    return this.table.release(key, leaseId);
  }

  private nextLease(): string | undefined {
    return this.leasePrefix === undefined ? undefined : this.leasePrefix + (++this.leaseSeq).toString(36);
  }

  private checkCost(value: unknown, algorithms?: readonly Algorithm[]): number {
    const cost = check.nonNegativeInteger(value, "'cost'", COST);
    const policies = algorithms === undefined ? this.policies : algorithms.map((a) => a.policy);
    if (algorithms === undefined ? cost > this.capacity : policies.some((q) => cost > q.capacity && !q.countRejected)) {
      const p = policies.find((q) => cost > q.capacity && !q.countRejected)!;
      throw new SluiceError(
        'ERR_SLUICE_COST_EXCEEDS_CAPACITY',
        `'cost' ${cost} can never pass policy ${show(p.name)}, whose capacity is ${p.capacity}; split the request or raise ${p.algorithm === 'token-bucket' || p.algorithm === 'gcra' || p.algorithm === 'leaky-bucket' ? "'burst'" : "'limit'"}`,
      );
    }
    return cost;
  }

  private checkAdjustment(cost: unknown, field: string): number {
    return check.nonNegativeInteger(cost, `${field} 'cost'`, COST);
  }
}

/** The cache id of a per-call limit, '' for one not to cache (anything but numbers is validated afresh). */
function overrideId(value: unknown): string {
  if (typeof value === 'number') return String(value);
  if (typeof value !== 'object' || value === null) return '';
  const { limit, burst } = value as { limit?: unknown; burst?: unknown };
  if (typeof limit !== 'number' || (burst !== undefined && typeof burst !== 'number') || Object.keys(value).length > 2)
    return '';
  return `${limit}/${burst}`;
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

/** A store's name in metrics: its class name without "Store", lower-case ('memory', 'redis'). */
function storeName(store: Store): string {
  const name = (store as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === 'string' && name !== '' && name !== 'Object'
    ? name.replace(/Store$/, '').toLowerCase() || name
    : 'custom';
}
