/** The Gate's options and per-call arguments: their types, and validation that names the bad value. */
import {
  type Clock,
  compilePolicies,
  check,
  type LimiterOptions,
  MemoryStore,
  monotonicClock,
  type Policy,
  type PolicyOptions,
  show,
  SluiceError,
  type Store,
} from 'sluice/kit';
import { realTimers, type Timers } from './timers.js';

export interface GateOptions {
  /** One policy; or give `policies`. */
  policy?: PolicyOptions;
  /** Every policy must admit a call before it goes (e.g. 100/s and at most 10 in flight). */
  policies?: PolicyOptions[];
  /** Where the budget lives: a MemoryStore (default) for one process, a RedisStore to share it across a fleet. */
  store?: Store;
  /** Most calls waiting across all keys; one more is rejected at once with ERR_SLUICE_QUEUE_FULL. Default 10,000. */
  maxQueue?: number;
  /** Longest a call waits before it fails with ERR_SLUICE_QUEUE_TIMEOUT; `Infinity` for no limit. Default 30,000. */
  timeoutMs?: number;
  /** Milliseconds on a monotonic timeline. Default `monotonicClock`; tests inject one with `timers`. */
  clock?: Clock;
  /** Where the gate sets its timers. Default Node's; tests inject a manual scheduler. */
  timers?: Timers;
  /**
   * With a store that answers asynchronously (shared, such as Redis), how often a call held back only by
   * a concurrency policy looks again. Leases released in this process wake the line at once; leases
   * released by other processes cannot, and their retryAfterMs is the lease timeout. Default 50 ms.
   */
  releasePollMs?: number;
  /**
   * Safety margin in whole milliseconds, so the gate runs just under the upstream's rate: its window edge
   * (or its bucket's refill) does not run ahead of the upstream's because the two clocks differ by a few
   * ms or one call's trip is slower than the one before. Sliding-log, sliding-window and bucket policies
   * get windows this much longer; a call a fixed window (calendar ones too) held back waits this much past
   * the window's edge. Concurrency policies are unchanged. 0 for the exact policies. Default 20 (2 % of a 1 s window).
   */
  marginMs?: number;
}

export interface WaitOptions {
  /** Weight of the call (a non-negative integer; 0 passes at once). Default 1. */
  cost?: number;
  /** Higher goes first; FIFO among equals. Any safe integer; default 0 (p-queue's convention). */
  priority?: number;
  /** Aborting it removes the call from the line and rejects with `signal.reason`. */
  signal?: AbortSignal;
}

export interface GateStats {
  /** Calls let through. */
  admitted: number;
  /** Calls that had to wait in line (the rest passed at once). */
  queued: number;
  /** Calls rejected because the line was full. */
  full: number;
  timedOut: number;
  aborted: number;
  /** Admissions handed back to the store because their caller had gone while the store decided. */
  refunded: number;
  /** Errors from the store on release or refund, which cannot be reported to a caller. */
  storeErrors: number;
}

/** GateOptions checked, with every default filled in. */
export interface ResolvedGateOptions {
  /** Every policy, validated together (names unique across all of them). */
  policies: Policy[];
  /** The rate policies' limiter, or the concurrency policies' when there are no rate policies. */
  limiter: LimiterOptions;
  /** The concurrency policies' limiter, when there are rate policies too. */
  leases: LimiterOptions | undefined;
  maxQueue: number;
  timeoutMs: number;
  clock: Clock;
  timers: Timers;
  releasePollMs: number;
  marginMs: number;
}

const KNOWN = new Set([
  'policy',
  'policies',
  'store',
  'maxQueue',
  'timeoutMs',
  'clock',
  'timers',
  'releasePollMs',
  'marginMs',
]);

/**
 * The default margin: a few ms of spread in trip times to a nearby API and under 10 ms between two
 * NTP-synced clocks, covered together for 2 % of a 1 s window (docs/outbound.md says more).
 */
export const DEFAULT_MARGIN_MS = 20;

function invalid(message: string): never {
  throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `Gate ${message}`);
}

/** Validates Gate options at construction; the policies are left to the Limiter, which checks them. */
export function resolveGateOptions(options: GateOptions): ResolvedGateOptions {
  if (typeof options !== 'object' || options === null)
    invalid(`options must be an object such as { policies }, got ${show(options)}`);
  for (const field of Object.keys(options)) {
    if (!KNOWN.has(field)) invalid(`unknown option '${field}'; known options are ${[...KNOWN].join(', ')}`);
  }
  const maxQueue = check.nonNegativeInteger(options.maxQueue ?? 10_000, "Gate 'maxQueue'");
  const timeoutMs = check.positiveNumber(options.timeoutMs ?? 30_000, "Gate 'timeoutMs'", {
    unit: 'milliseconds',
    orInfinity: true,
  });
  const timers = options.timers ?? realTimers;
  if (
    typeof timers !== 'object' ||
    timers === null ||
    typeof timers.setTimeout !== 'function' ||
    typeof timers.clearTimeout !== 'function'
  ) {
    invalid(`'timers' must be an object with setTimeout(fn, ms) and clearTimeout(handle), got ${show(timers)}`);
  }
  const releasePollMs = check.positiveNumber(options.releasePollMs ?? 50, "Gate 'releasePollMs'", {
    unit: 'milliseconds',
  });
  const marginMs = check.nonNegativeInteger(options.marginMs ?? DEFAULT_MARGIN_MS, "Gate 'marginMs'", {
    unit: 'milliseconds',
    note: '(0 for no margin)',
  });
  const clock = options.clock ?? monotonicClock;
  if ((options.policy === undefined) === (options.policies === undefined))
    invalid(`needs exactly one of 'policy' or 'policies'`);
  const written = options.policies ?? [options.policy!];
  const list = withMargin(written, compilePolicies(written), marginMs);
  const policies = compilePolicies(list);
  const counting = policies.find((p) => p.countRejected);
  // A gate retries what it is refused: under Envoy's counting every retry would count, and none would pass.
  if (counting !== undefined)
    invalid(
      `policy ${show(counting.name)}: 'countRejected' counts every refused try, so a gate waiting on it never gets through; leave it out`,
    );
  // Concurrency policies get a limiter of their own, decided first, so that observe() can read the rate
  // policies' remaining budget: a decision only carries the most restrictive policy's count.
  const rates = list.filter((_, i) => policies[i]!.algorithm !== 'concurrency');
  const leases = list.filter((_, i) => policies[i]!.algorithm === 'concurrency');
  const base = { clock, store: options.store ?? new MemoryStore() }; // one store for both limiters
  return {
    policies,
    limiter: { ...base, policies: rates.length > 0 ? rates : leases },
    leases: rates.length > 0 && leases.length > 0 ? { ...base, policies: leases } : undefined,
    maxQueue,
    timeoutMs,
    clock,
    timers,
    releasePollMs,
    marginMs,
  };
}

/**
 * The sliding and bucket rate policies with their windows `marginMs` longer, under the names they were
 * written with (so decisions and store keys name the policy the user wrote). A sliding window's margin is
 * rounded up to a whole number of its buckets, which must divide the window.
 */
function withMargin(list: readonly PolicyOptions[], compiled: readonly Policy[], marginMs: number): PolicyOptions[] {
  return list.map((options, i) => {
    const p = compiled[i]!;
    // A fixed window keeps its length and its edges on the epoch, as the upstream's: the Gate waits the
    // margin past each edge instead (a longer window would drift across the upstream's and let two of
    // its windows' worth land in one of the upstream's).
    if (marginMs === 0 || p.algorithm === 'concurrency' || p.algorithm === 'fixed-window') return options;
    const margin = Math.ceil(marginMs / p.buckets) * p.buckets;
    return { ...options, name: p.name, window: p.windowMs + margin };
  });
}

/** A call's cost: a non-negative integer no larger than the smallest capacity, which it could never pass. */
export function checkCost(policies: readonly Policy[], capacity: number, value: unknown): number {
  const cost = check.nonNegativeInteger(value, "'cost'", { code: 'ERR_SLUICE_INVALID_COST' });
  if (cost > capacity) {
    const p = policies.find((q) => cost > q.capacity)!;
    throw new SluiceError(
      'ERR_SLUICE_COST_EXCEEDS_CAPACITY',
      `'cost' ${cost} can never pass policy ${show(p.name)}, whose capacity is ${p.capacity}; waiting cannot help, so split the call or raise the policy's capacity`,
    );
  }
  return cost;
}

export function checkKey(key: unknown): asserts key is string {
  if (typeof key !== 'string' || key.length === 0) {
    throw new SluiceError('ERR_SLUICE_INVALID_KEY', `'key' must be a non-empty string, got ${show(key)}`);
  }
}

export function checkPriority(priority: unknown): number {
  if (typeof priority !== 'number' || !Number.isSafeInteger(priority)) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `'priority' must be an integer (higher goes first), got ${show(priority)}`,
    );
  }
  return priority;
}

export function checkSignal(signal: unknown): AbortSignal | undefined {
  if (signal === undefined) return undefined;
  if (
    typeof signal !== 'object' ||
    signal === null ||
    typeof (signal as AbortSignal).addEventListener !== 'function' ||
    !('aborted' in signal)
  ) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `'signal' must be an AbortSignal, got ${show(signal)}`);
  }
  return signal as AbortSignal;
}
