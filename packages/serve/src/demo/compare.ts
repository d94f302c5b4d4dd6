// Plays a trace through a real Limiter per contender, on an injected clock, and measures what each admitted.
import { type AlgorithmName, compilePolicy, createAlgorithm, Limiter } from 'sluice/kit';
import { CONTENDERS, type Contender } from './lineup.js';
import { ProbeStore } from './probe-store.js';
import { EPOCH_MS, WINDOW_MS } from './scale.js';
import type { Trace } from './traces.js';
import { maxInWindow, type Admission } from './window-count.js';

/** Nominal bytes per growable-state entry: a log entry is (time, cost); a lease is (expiry, cost, id pointer). */
export const LOG_ENTRY_BYTES = 16;
export const LEASE_BYTES = 24;
/** The short window used to show how bursty the admitted traffic is. */
export const SHORT_WINDOW_MS = 1_000;

export interface Measurement {
  readonly label: string;
  readonly algorithm: AlgorithmName;
  /** Cost units offered and admitted. */
  readonly offered: number;
  readonly admitted: number;
  /** Most cost admitted in any true sliding window (t − W, t]. */
  readonly maxInWindow: number;
  /** Most cost admitted in any (t − 1 s, t]. */
  readonly maxInShortWindow: number;
  /** State per key: slab slots × 8 B, or the most entries held × bytes per entry. */
  readonly stateBytes: number;
  /** Longest delayMs a decision asked for (leaky-bucket shaper); 0 for the rest. */
  readonly maxDelayMs: number;
  /** Most cost forwarded (admission time + delayMs) in any (t − W, t] and (t − 1 s, t]. */
  readonly forwardedMaxInWindow: number;
  readonly forwardedMaxInShortWindow: number;
  /** Admission times, ms since the trace started. */
  readonly admissions: readonly Admission[];
}

interface HeldLease {
  readonly releaseAt: number;
  readonly leaseId: string;
}

/** Runs `trace` through a fresh Limiter for `contender` and measures the outcome. */
export async function measure(trace: Trace, contender: Contender): Promise<Measurement> {
  const key = 'demo-client';
  let traceNow = 0;
  const store = new ProbeStore();
  const limiter = new Limiter({ policy: contender.policy, store, clock: () => EPOCH_MS + traceNow });
  const admissions: Admission[] = [];
  const forwarded: Admission[] = [];
  const leases: HeldLease[] = []; // in release order: every lease is held for the same time
  let released = 0;
  let maxDelayMs = 0;
  for (const request of trace.requests) {
    while (released < leases.length && leases[released]!.releaseAt <= request.at) {
      const lease = leases[released++]!;
      traceNow = lease.releaseAt;
      await limiter.release(key, lease.leaseId);
    }
    traceNow = request.at;
    const decision = await limiter.limit(key, { cost: request.cost });
    if (!decision.allowed) continue;
    admissions.push({ at: request.at, cost: request.cost });
    forwarded.push({ at: request.at + decision.delayMs, cost: request.cost });
    if (decision.delayMs > maxDelayMs) maxDelayMs = decision.delayMs;
    if (contender.holdMs !== undefined && decision.leaseId !== undefined) {
      leases.push({ releaseAt: request.at + contender.holdMs, leaseId: decision.leaseId });
    }
  }
  return {
    label: contender.label,
    algorithm: contender.policy.algorithm,
    offered: trace.requests.reduce((sum, r) => sum + r.cost, 0),
    admitted: admissions.reduce((sum, a) => sum + a.cost, 0),
    maxInWindow: maxInWindow(admissions, WINDOW_MS),
    maxInShortWindow: maxInWindow(admissions, SHORT_WINDOW_MS),
    stateBytes: stateBytesPerKey(contender, store.maxHeldEntries),
    maxDelayMs,
    forwardedMaxInWindow: maxInWindow(forwarded, WINDOW_MS),
    forwardedMaxInShortWindow: maxInWindow(forwarded, SHORT_WINDOW_MS),
    admissions,
  };
}

function stateBytesPerKey(contender: Contender, maxHeldEntries: number): number {
  const algorithm = createAlgorithm(compilePolicy(contender.policy));
  if (algorithm.kind === 'slab') return algorithm.slots * 8;
  return maxHeldEntries * (contender.policy.algorithm === 'concurrency' ? LEASE_BYTES : LOG_ENTRY_BYTES);
}

/** Every contender on one trace, in lineup order. */
export async function compareOnTrace(
  trace: Trace,
  contenders: readonly Contender[] = CONTENDERS,
): Promise<Measurement[]> {
  const results: Measurement[] = [];
  for (const contender of contenders) results.push(await measure(trace, contender));
  return results;
}
