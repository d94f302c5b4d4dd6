/**
 * The shapes every layer shares: the policy a user writes, the decision every algorithm returns, and the
 * narrow seam between an algorithm (pure arithmetic on state) and a store (which only keeps and swaps state).
 */

export type AlgorithmName =
  | 'fixed-window'
  | 'sliding-log'
  | 'sliding-window'
  | 'token-bucket'
  | 'gcra'
  | 'leaky-bucket'
  | 'concurrency';

/** A policy as users write it. See docs/algorithms.md. */
export interface PolicyOptions {
  /** Names the policy in decisions and headers. Defaults to `<algorithm>-<limit>-<windowMs>ms`. */
  name?: string;
  algorithm: AlgorithmName;
  /** Requests (cost units) per window; for `concurrency`, requests in flight. */
  limit: number;
  /**
   * Milliseconds or '500ms' / '1s' / '1m' / '1h' / '1d' (epoch-aligned). For `concurrency`, the lease
   * timeout. For `fixed-window`, also 'day', 'week' or 'month': a calendar window in `timeZone`.
   */
  window: number | string;
  /** Calendar windows: the IANA time zone whose midnight resets them. Default 'UTC'. */
  timeZone?: string;
  /** Calendar week: its first day, 1 (Monday, the default) to 7 (Sunday), a day name, or { locale: 'en-US' }. */
  weekStart?: number | string | { locale: string };
  /** token-bucket, gcra, leaky-bucket: requests admitted back to back from idle. Defaults to `limit`. */
  burst?: number;
  /** leaky-bucket: 'meter' admits or rejects; 'shaper' also returns `delayMs` (nginx limit_req). Default 'meter'. */
  mode?: 'meter' | 'shaper';
  /** leaky-bucket shaper: requests from idle forwarded without delay (nginx `delay=N` is `delay: N + 1`). Default 1. */
  delay?: number;
  /** leaky-bucket shaper: forward every admitted request at once, but still count it (nginx `nodelay`). */
  nodelay?: boolean;
  /** sliding-window: sub-window counters per window; more is more exact and costs one number each. Default 1. */
  buckets?: number;
  /**
   * After a request this policy denies, the key stays denied this long (a ban), whatever it refills; a
   * duration, or `{ duration, factor, max, decay }` for bans that grow: each ban is `factor` (default 2)
   * times the one before, at most `max`, and one earlier ban is forgotten per `decay` (default `max`)
   * after a ban ends. Not for concurrency. See docs/algorithms.md, "Bans".
   */
  blockFor?: number | string | BlockForOptions;
  /**
   * fixed-window: count a rejected request too, as envoyproxy/ratelimit counts it (INCRBY, then compare), so
   * hits past the limit keep the window over and a later cost-0 check sees them (Envoy's token quotas).
   * Default false: a rejected request changes no state (Envoy's STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT).
   */
  countRejected?: boolean;
}

export interface BlockForOptions {
  duration: number | string;
  factor?: number;
  max?: number | string;
  decay?: number | string;
}

/** A validated calendar window: its unit, canonical time zone and ISO first weekday. */
export interface Calendar {
  readonly unit: 'day' | 'week' | 'month';
  readonly timeZone: string;
  readonly weekStart: number;
}

/** A validated `blockFor`. With factor 1 bans do not grow, and maxMs = durationMs. */
export interface Block {
  readonly durationMs: number;
  readonly factor: number;
  readonly maxMs: number;
  readonly decayMs: number;
}

/** A validated policy with every default filled in. */
export interface Policy {
  readonly name: string;
  readonly algorithm: AlgorithmName;
  readonly limit: number;
  readonly windowMs: number;
  /** The largest cost that can ever pass: `burst` for bucket algorithms, `limit` for the rest. */
  readonly capacity: number;
  readonly burst: number;
  readonly mode: 'meter' | 'shaper';
  readonly delay: number;
  readonly nodelay: boolean;
  readonly buckets: number;
  /** Set when the policy bans after a denial. */
  readonly block: Block | undefined;
  /** Set for a calendar window (fixed-window only); `windowMs` is then its usual length (a month: 30 days). */
  readonly calendar: Calendar | undefined;
  /** A rejected request is counted as well (fixed-window only; see PolicyOptions.countRejected). */
  readonly countRejected: boolean;
}

/** What every algorithm answers, whatever the store. */
export interface Decision {
  readonly allowed: boolean;
  /** The deciding policy's limit. */
  readonly limit: number;
  /** Whole requests of cost 1 still allowed now, after this decision. */
  readonly remaining: number;
  /** Until the deciding policy's state is as if unused. */
  readonly resetAfterMs: number;
  /** 0 when allowed; otherwise the earliest time a retry of the same cost can pass. */
  readonly retryAfterMs: number;
  /** Shaping: hold the request this long before forwarding it. 0 unless a leaky-bucket shaper delays it. */
  readonly delayMs: number;
  /** Name of the deciding (most restrictive) policy. */
  readonly policy: string;
  /** Set when a concurrency policy admitted the request: pass it to `limiter.release()`. */
  readonly leaseId: string | undefined;
  /** Set when the decision was not made by the policies themselves, e.g. 'store-error'. */
  readonly reason: string | undefined;
  /** A denial by a ban (`blockFor`): the key is denied until retryAfterMs whatever it refills (HTTP: 403 if you choose). */
  readonly blocked: boolean;
}

/**
 * One policy's answer, written by an algorithm into a scratch object the store reuses, so the hot path
 * allocates nothing but the final Decision.
 */
export class Verdict {
  allowed = false;
  remaining = 0;
  resetAfterMs = 0;
  retryAfterMs = 0;
  delayMs = 0;
  /** The denial is a ban (`blockFor`). */
  blocked = false;
  /**
   * The denial writes: the store writes `next` (slab) or `ban()`'s state (object) although it denies. Set by
   * a denial that starts a ban, and by a fixed window that counts rejected requests (`countRejected`).
   */
  bans = false;
  /** For slab algorithms: the state to store if every policy on the key admits. */
  readonly next: Float64Array;

  constructor(slots: number) {
    this.next = new Float64Array(slots);
  }
}

/**
 * An algorithm whose state per key is a fixed number of float64 slots in a shared slab. All-zero slots are
 * the idle state. `evaluate` never writes to `s`: the store copies `v.next` in only when every policy admits.
 */
export interface SlabAlgorithm {
  readonly kind: 'slab';
  readonly policy: Policy;
  readonly slots: number;
  evaluate(s: Float64Array, o: number, now: number, cost: number, v: Verdict): void;
  /** penalty (delta > 0) or reward (delta < 0): charge or refund without a limit check. */
  adjust(s: Float64Array, o: number, now: number, delta: number): void;
  /** When the state becomes as if unused; at or before `now` means the store may drop it. */
  idleAt(s: Float64Array, o: number): number;
}

/** An algorithm whose state per key is a growable object (sliding log, concurrency leases). */
export interface ObjectAlgorithm<S = unknown> {
  readonly kind: 'object';
  readonly policy: Policy;
  evaluate(state: S | undefined, now: number, cost: number, v: Verdict): void;
  /** Applies an admitted request. `leaseId` is set for concurrency. */
  commit(state: S | undefined, now: number, cost: number, leaseId: string | undefined): S;
  adjust(state: S | undefined, now: number, delta: number): S | undefined;
  idleAt(state: S | undefined): number;
  /** Concurrency: ends a lease early. Returns whether it was held. */
  release?(state: S | undefined, leaseId: string, now: number): boolean;
  /** Bans (blockFor): the state after a denial whose verdict has `bans` set. */
  ban?(state: S | undefined, now: number, v: Verdict): S;
}

export type Algorithm = SlabAlgorithm | ObjectAlgorithm;

/** Milliseconds on a monotonic, epoch-aligned timeline. */
export type Clock = () => number;
