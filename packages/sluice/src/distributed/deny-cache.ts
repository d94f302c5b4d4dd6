/**
 * The local deny cache: a key that was denied is answered here, with zero store calls, until the denial's
 * retryAfterMs has passed. It only ever denies, never admits, so it is exact for admissions.
 *
 * Why a cached denial is the store's own answer: retryAfterMs is the earliest time a retry of the same
 * cost can pass if nothing but time changes the key's state, and a denial charges nothing. So until then
 * the store would deny the same cost, or any larger one, again. Smaller costs, peeks (cost 0) and every
 * other operation go to the store. A reward or reset through this limiter drops the entry; one made by
 * another node is seen only when the entry expires (the key stays denied a little longer, never admitted).
 * The deadline is counted from when the request was sent, so a slow reply shortens the entry, never
 * lengthens it.
 */
import { makeDecision, SluiceError, show } from '../core/index.js';
import type { Clock, Decision, MaybePromise, Policy } from '../core/index.js';
import { check } from '../core/option-checks.js';
import type { StoreTable } from '../stores/store.js';

export interface DenyCacheOptions {
  /** Most keys held; the oldest entry is dropped first (dropping only costs a store call). Default 10,000. */
  maxKeys?: number;
}

/** One remembered denial: the store denied `cost` (and so denies any larger cost) until `until`. */
export interface Denial {
  /** Local time from which the store may admit this cost again. */
  readonly until: number;
  readonly cost: number;
}

/**
 * The deny cache's memory, shared by the limiter's table below and the service's local cache
 * (server/service.ts): bounded, and it only ever answers with a denial the store gave. When full,
 * 'drop-oldest' forgets the key denied longest ago; 'start-again' forgets every key (the service's cache,
 * which is cleared as one block like Envoy's fixed-size one).
 */
export class DeniedKeys<E extends Denial = Denial> {
  private readonly entries = new Map<string, E>();

  constructor(
    private readonly maxKeys: number,
    private readonly whenFull: 'drop-oldest' | 'start-again',
  ) {}

  /** The denial that still answers `cost` for `key` at `now`, or undefined; an expired one is forgotten. */
  covering(key: string, cost: number, now: number): E | undefined {
    const e = this.entries.get(key);
    if (e === undefined) return undefined;
    if (now >= e.until) {
      this.entries.delete(key);
      return undefined;
    }
    return cost >= e.cost ? e : undefined;
  }

  /** Remembers a denial, replacing the key's last one (re-inserted, so eviction order is by last denial). */
  remember(key: string, denial: E): void {
    if (this.entries.size >= this.maxKeys) {
      if (this.whenFull === 'start-again') this.entries.clear();
      else if (!this.entries.has(key)) this.entries.delete(this.entries.keys().next().value!);
    }
    this.entries.delete(key);
    this.entries.set(key, denial);
  }

  forget(key: string): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}

interface Entry extends Denial {
  readonly sentAt: number;
  readonly decision: Decision;
}

export function checkDenyCache(value: unknown, policies: readonly Policy[]): DenyCacheOptions | undefined {
  if (value === undefined || value === false) return undefined;
  const options = value === true ? {} : value;
  if (typeof options !== 'object' || options === null || Object.keys(options).some((k) => k !== 'maxKeys')) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `'denyCache' must be true, false or { maxKeys }, got ${show(value)}`,
    );
  }
  const maxKeys = (options as DenyCacheOptions).maxKeys;
  if (maxKeys !== undefined) check.positiveInteger(maxKeys, "'denyCache.maxKeys'");
  // A concurrency denial's retryAfterMs is the oldest lease's timeout, but any release frees a slot
  // sooner: caching it would deny requests the store admits.
  const c = policies.find((p) => p.algorithm === 'concurrency');
  if (c !== undefined) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `'denyCache' cannot be used with the concurrency policy ${show(c.name)}: a release frees a slot before retryAfterMs`,
    );
  }
  return options as DenyCacheOptions;
}

export class DenyCacheTable implements StoreTable {
  readonly sync: boolean;
  /** Decisions answered from the cache, and decisions passed to the store. */
  hits = 0;
  misses = 0;
  private readonly entries: DeniedKeys<Entry>;

  constructor(
    private readonly inner: StoreTable,
    private readonly clock: Clock,
    options: DenyCacheOptions,
  ) {
    this.sync = inner.sync;
    this.entries = new DeniedKeys(options.maxKeys ?? 10_000, 'drop-oldest');
    const decideWith = inner.decideWith?.bind(inner);
    this.decideWith =
      decideWith === undefined
        ? undefined
        : (key, cost, leaseId, algorithms) => {
            const answer = decideWith(key, cost, leaseId, algorithms);
            const seen = (d: Decision): Decision => {
              if (d.allowed && cost > 0) this.entries.forget(key);
              return d;
            };
            return answer instanceof Promise ? answer.then(seen) : seen(answer);
          };
  }

  decide(key: string, cost: number, leaseId: string | undefined): MaybePromise<Decision> {
    const now = this.clock();
    const e = cost > 0 ? this.entries.covering(key, cost, now) : undefined;
    if (e !== undefined) {
      this.hits++;
      const d = e.decision;
      const wait = Math.max(1, Math.ceil(e.until - now));
      return makeDecision({
        allowed: false,
        limit: d.limit,
        remaining: d.remaining,
        resetAfterMs: Math.max(0, Math.ceil(d.resetAfterMs - (now - e.sentAt))),
        retryAfterMs: wait,
        delayMs: 0,
        policy: d.policy,
        reason: d.reason,
        blocked: d.blocked,
      });
    }
    this.misses++;
    const answer = this.inner.decide(key, cost, leaseId);
    if (answer instanceof Promise) return answer.then((d) => this.learn(key, cost, now, d));
    return this.learn(key, cost, now, answer);
  }

  /**
   * Per-call limits go to the store: another limit may admit what the cached denial denied. An admission
   * drops the key's entry, as the state moved.
   */
  readonly decideWith: StoreTable['decideWith'];

  private learn(key: string, cost: number, sentAt: number, d: Decision): Decision {
    // Failure-policy answers (reason set) say nothing about the key's state, so they are never cached.
    if (cost > 0 && !d.allowed && d.reason === undefined && d.retryAfterMs > 0) {
      // Only forwarded costs reach here: an expired entry's, or a smaller one, whose deadline holds for
      // every larger cost too.
      this.entries.remember(key, { until: sentAt + d.retryAfterMs, sentAt, cost, decision: d });
    } else if (d.allowed && cost > 0) {
      this.entries.forget(key);
    }
    return d;
  }

  adjust(key: string, delta: number): MaybePromise<Decision> {
    if (delta < 0) this.entries.forget(key); // a refund can make a denied cost pass sooner
    return this.inner.adjust(key, delta);
  }

  release(key: string, leaseId: string): MaybePromise<boolean> {
    return this.inner.release(key, leaseId);
  }

  reset(key: string): MaybePromise<void> {
    this.entries.forget(key);
    return this.inner.reset(key);
  }

  close(): MaybePromise<void> {
    this.entries.clear();
    return this.inner.close?.();
  }

  /** Keys held now (for tests and metrics). */
  get size(): number {
    return this.entries.size;
  }
}
