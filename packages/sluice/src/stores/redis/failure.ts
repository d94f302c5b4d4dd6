/**
 * What a RedisStore answers when Redis cannot: the failure policy. Every such decision carries
 * `reason: 'store-error'`, so callers and metrics can tell it from a real one.
 *
 * - 'open' allows; 'closed' denies with retryAfterMs = CLOSED_RETRY_MS.
 * - { insurance: share } decides on a local MemoryStore whose policies hold `share` of each limit and
 *   burst (at least 1): with N app servers behind one Redis, share = 1/N keeps the fleet near the limit.
 *   A key Redis answered lately (last-answers.ts) starts from that answer: one Redis denied stays denied
 *   until its retryAfterMs, one Redis left r requests starts with at most r. Keys Redis never saw (or
 *   answered so long ago that their state is idle) start with the share.
 */
import { createAlgorithm, createOverride, makeDecision, SluiceError, show } from '../../core/index.js';
import type { Algorithm, Clock, Decision, Policy } from '../../core/index.js';
import { MemoryStore, type MemoryTable } from '../memory.js';
import type { TableSpec } from '../store.js';
import { LastAnswers, REMEMBER_KEYS } from './last-answers.js';

/** `rememberKeys`: how many keys' last Redis answers insurance keeps, per limiter (default 10,000, about 130 bytes each). */
export type OnError = 'open' | 'closed' | { insurance: number; rememberKeys?: number };

export const STORE_ERROR = 'store-error';
/** A fail-closed denial's retryAfterMs: Redis is not expected back sooner. */
export const CLOSED_RETRY_MS = 1000;

export function checkOnError(value: unknown): OnError {
  if (value === 'open' || value === 'closed') return value;
  if (typeof value === 'object' && value !== null && 'insurance' in value) {
    const unknown = Object.keys(value).filter((k) => k !== 'insurance' && k !== 'rememberKeys');
    if (unknown.length > 0)
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `RedisStore 'onError' has unknown field '${unknown[0]}'; known fields are insurance, rememberKeys`,
      );
    const { insurance: share, rememberKeys = REMEMBER_KEYS } = value as { insurance: unknown; rememberKeys?: unknown };
    if (typeof share !== 'number' || !(share > 0 && share <= 1)) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `RedisStore 'onError.insurance' must be this node's share of each limit, a number in (0, 1] such as 1 / servers, got ${show(share)}`,
      );
    }
    if (typeof rememberKeys !== 'number' || !Number.isSafeInteger(rememberKeys) || rememberKeys < 0) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `RedisStore 'onError.rememberKeys' must be how many keys' last Redis answers to keep, an integer 0 or more, got ${show(rememberKeys)}`,
      );
    }
    return { insurance: share, rememberKeys };
  }
  throw new SluiceError(
    'ERR_SLUICE_INVALID_OPTION',
    `RedisStore 'onError' must be 'open', 'closed' or { insurance: <share in (0, 1]> }, got ${show(value)}`,
  );
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
  /** Redis's last answers, under insurance with rememberKeys > 0: the table notes them, an outage starts from them. */
  readonly last: LastAnswers | undefined;
  private readonly clock: Clock;
  private readonly insurancePolicies: readonly Policy[] | undefined;
  private readonly insuranceAlgorithms: readonly Algorithm[] | undefined;

  constructor(
    readonly mode: OnError,
    spec: TableSpec,
  ) {
    this.policies = spec.policies;
    this.clock = spec.clock;
    if (typeof mode === 'object') {
      const policies = spec.policies.map((p) => sharedPolicy(p, mode.insurance));
      this.insurancePolicies = policies;
      this.insuranceAlgorithms = policies.map(createAlgorithm);
      this.insurance = new MemoryStore().bind({ policies, algorithms: this.insuranceAlgorithms, clock: spec.clock });
      const keys = mode.rememberKeys ?? REMEMBER_KEYS;
      if (keys > 0) this.last = new LastAnswers(keys);
    }
  }

  /** Redis's answer to a decision or adjustment on `key` (only called when `last` is defined). */
  note(key: string, d: Decision): void {
    this.last!.note(key, d, this.clock());
  }

  decide(key: string, cost: number, leaseId: string | undefined): Decision {
    const insurance = this.insurance;
    if (insurance !== undefined) {
      const denied = this.last === undefined ? undefined : this.recall(insurance, key);
      if (denied !== undefined) return denied;
      return mark(insurance.decide(key, cost, leaseId));
    }
    const p = this.policies[0]!;
    return this.mode === 'open'
      ? makeDecision({
          allowed: true,
          limit: p.limit,
          remaining: 0,
          resetAfterMs: 0,
          retryAfterMs: 0,
          delayMs: 0,
          policy: p.name,
          leaseId,
          reason: STORE_ERROR,
        })
      : makeDecision({
          allowed: false,
          limit: p.limit,
          remaining: 0,
          resetAfterMs: 0,
          retryAfterMs: CLOSED_RETRY_MS,
          delayMs: 0,
          policy: p.name,
          reason: STORE_ERROR,
        });
  }

  /**
   * Starts the key's local state from Redis's last answer, the first time the outage meets the key after
   * that answer: a fresh share, less what Redis said was used (so at most `remaining` is left). Returns
   * the denial while Redis's own denial lasts, else undefined.
   */
  private recall(insurance: MemoryTable, key: string): Decision | undefined {
    const a = this.last!.get(key);
    if (a === undefined) return undefined;
    const now = this.clock();
    if (!a.seeded) {
      a.seeded = true;
      insurance.reset(key); // what it held is from an earlier outage, older than this answer
      if (now < a.idleAt) {
        const share = insurance.decide(key, 0, undefined).remaining;
        const used = share - Math.min(Math.max(0, a.remaining), share);
        if (used > 0) insurance.adjust(key, used);
      }
    }
    if (now >= a.deniedUntil) return undefined;
    const d = insurance.decide(key, 0, undefined);
    return makeDecision({
      allowed: false,
      limit: d.limit,
      remaining: 0,
      resetAfterMs: Math.max(d.resetAfterMs, a.deniedUntil - now),
      retryAfterMs: a.deniedUntil - now,
      delayMs: 0,
      policy: d.policy,
      reason: STORE_ERROR,
    });
  }

  /** decide() for a call with per-call limits: insurance holds `share` of the call's limits too. */
  decideWith(key: string, cost: number, leaseId: string | undefined, policies: readonly Policy[]): Decision {
    if (this.insurance === undefined) {
      const p = policies[0]!;
      return this.mode === 'open'
        ? makeDecision({
            allowed: true,
            limit: p.limit,
            remaining: 0,
            resetAfterMs: 0,
            retryAfterMs: 0,
            delayMs: 0,
            policy: p.name,
            leaseId,
            reason: STORE_ERROR,
          })
        : makeDecision({
            allowed: false,
            limit: p.limit,
            remaining: 0,
            resetAfterMs: 0,
            retryAfterMs: CLOSED_RETRY_MS,
            delayMs: 0,
            policy: p.name,
            reason: STORE_ERROR,
          });
    }
    const share = (this.mode as { insurance: number }).insurance;
    const algorithms = policies.map((p, i) =>
      p === this.policies[i]
        ? this.insuranceAlgorithms![i]!
        : createOverride(this.insurancePolicies![i]!, sharedPolicy(p, share)),
    );
    const denied = this.last === undefined ? undefined : this.recall(this.insurance, key);
    if (denied !== undefined) return denied;
    return mark(this.insurance.decideWith(key, cost, leaseId, algorithms));
  }

  adjust(key: string, delta: number): Decision {
    const insurance = this.insurance;
    if (insurance !== undefined) {
      if (this.last !== undefined) this.recall(insurance, key);
      return mark(insurance.adjust(key, delta));
    }
    return this.decide(key, 0, undefined);
  }

  release(key: string, leaseId: string): boolean {
    return this.insurance?.release(key, leaseId) ?? false;
  }

  reset(key: string): void {
    this.insurance?.reset(key);
    this.last?.forget(key);
  }
}

function mark(d: Decision): Decision {
  return makeDecision({
    allowed: d.allowed,
    limit: d.limit,
    remaining: d.remaining,
    resetAfterMs: d.resetAfterMs,
    retryAfterMs: d.retryAfterMs,
    delayMs: d.delayMs,
    policy: d.policy,
    leaseId: d.leaseId,
    reason: STORE_ERROR,
  });
}
