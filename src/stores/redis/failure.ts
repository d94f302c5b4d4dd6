/**
 * What a RedisStore answers when Redis cannot: the failure policy. Every such decision carries
 * `reason: 'store-error'`, so callers and metrics can tell it from a real one.
 *
 * - 'open' allows; 'closed' denies with retryAfterMs = CLOSED_RETRY_MS.
 * - { insurance: share } decides on a local MemoryStore whose policies hold `share` of each limit and
 *   burst (at least 1): with N app servers behind one Redis, share = 1/N keeps the fleet near the limit.
 */
import { createAlgorithm, makeDecision, SluiceError, show } from '../../core/index.js';
import type { Decision, Policy } from '../../core/index.js';
import { MemoryStore, type MemoryTable } from '../memory.js';
import type { TableSpec } from '../store.js';

export type OnError = 'open' | 'closed' | { insurance: number };

export const STORE_ERROR = 'store-error';
/** A fail-closed denial's retryAfterMs: Redis is not expected back sooner. */
export const CLOSED_RETRY_MS = 1000;

export function checkOnError(value: unknown): OnError {
  if (value === 'open' || value === 'closed') return value;
  if (typeof value === 'object' && value !== null && Object.keys(value).length === 1 && 'insurance' in value) {
    const share = (value as { insurance: unknown }).insurance;
    if (typeof share === 'number' && share > 0 && share <= 1) return { insurance: share };
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `RedisStore 'onError.insurance' must be this node's share of each limit, a number in (0, 1] such as 1 / servers, got ${show(share)}`);
  }
  throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `RedisStore 'onError' must be 'open', 'closed' or { insurance: <share in (0, 1]> }, got ${show(value)}`);
}

/** A policy with `share` of its limit and burst, for the insurance limiter. */
export function sharedPolicy(p: Policy, share: number): Policy {
  const part = (n: number) => Math.max(1, Math.floor(n * share));
  const limit = part(p.limit);
  const burst = part(p.burst);
  const capacity = part(p.capacity);
  const delay = p.nodelay ? burst : Math.min(p.delay, burst);
  return Object.freeze({ ...p, limit, burst, capacity, delay });
}

export class Fallback {
  private readonly policies: readonly Policy[];
  private readonly insurance: MemoryTable | undefined;

  constructor(readonly mode: OnError, spec: TableSpec) {
    this.policies = spec.policies;
    if (typeof mode === 'object') {
      const policies = spec.policies.map((p) => sharedPolicy(p, mode.insurance));
      this.insurance = new MemoryStore().bind({ policies, algorithms: policies.map(createAlgorithm), clock: spec.clock });
    }
  }

  decide(key: string, cost: number, leaseId: string | undefined): Decision {
    if (this.insurance !== undefined) return mark(this.insurance.decide(key, cost, leaseId));
    const p = this.policies[0]!;
    return this.mode === 'open'
      ? makeDecision(true, p.limit, 0, 0, 0, 0, p.name, leaseId, STORE_ERROR)
      : makeDecision(false, p.limit, 0, 0, CLOSED_RETRY_MS, 0, p.name, undefined, STORE_ERROR);
  }

  adjust(key: string, delta: number): Decision {
    if (this.insurance !== undefined) return mark(this.insurance.adjust(key, delta));
    return this.decide(key, 0, undefined);
  }

  release(key: string, leaseId: string): boolean {
    return this.insurance !== undefined && this.insurance.release(key, leaseId);
  }

  reset(key: string): void {
    this.insurance?.reset(key);
  }
}

function mark(d: Decision): Decision {
  return makeDecision(d.allowed, d.limit, d.remaining, d.resetAfterMs, d.retryAfterMs, d.delayMs, d.policy, d.leaseId, STORE_ERROR);
}
