/**
 * Per-call limits: a policy with another `limit` (and `burst`) for one call, decided on the same state as
 * calls that keep the policy's own limit. What the state means under another limit, by algorithm:
 * - windows, the log and concurrency count requests, so every limit sees the same count;
 * - the buckets (token bucket, GCRA, leaky bucket) keep how far the key is from full, in time: a key that
 *   is half-full under one limit is half-full under another whose burst scales with it, and it refills at
 *   the rate of the limit it is asked with. (GCRA's TAT is that time; the token bucket converts its
 *   deficit, kept in the units of the policy's own limit, so the two still decide alike.)
 */
import { SluiceError } from './errors.js';
import { check } from './option-checks.js';
import type { Policy } from './types.js';

const BUCKETS = new Set(['token-bucket', 'gcra', 'leaky-bucket']);
/** As in policy.ts: the smallest emission interval GCRA resolves. */
const MIN_GCRA_STEP_MS = 1 / 64;

/** What a call may give for one policy: its limit, or its limit and burst. */
export type LimitOverride = number | { limit: number; burst?: number };

function fail(field: string, message: string): never {
  throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `'${field}' ${message}`);
}

function positive(field: string, value: unknown): number {
  return check.positiveInteger(value, `'${field}'`);
}

/**
 * The burst a call gets: the one it gives, else the policy's scaled by the new limit (at least 1), so a
 * policy that admits `burst` of `limit` back to back admits the same share of the call's limit.
 */
export function scaledBurst(p: Policy, limit: number): number {
  return limit === p.limit ? p.burst : Math.max(1, Math.round((p.burst * limit) / p.limit));
}

/** Validates one policy's entry of `limits` and returns the policy the call is decided with. */
export function overridePolicy(p: Policy, value: unknown): Policy {
  const field = `limits.${p.name}`;
  let limit: number;
  let burst: number | undefined;
  if (typeof value === 'object' && value !== null) {
    for (const k of Object.keys(value))
      if (k !== 'limit' && k !== 'burst') fail(field, `has unknown field '${k}'; give a limit, or { limit, burst }`);
    limit = positive(`${field}.limit`, (value as { limit?: unknown }).limit);
    const b = (value as { burst?: unknown }).burst;
    if (b !== undefined) {
      if (!BUCKETS.has(p.algorithm))
        fail(`${field}.burst`, `applies to token-bucket, gcra and leaky-bucket, not ${p.algorithm}`);
      burst = positive(`${field}.burst`, b);
    }
  } else {
    limit = positive(field, value);
  }
  if (!BUCKETS.has(p.algorithm)) {
    return limit === p.limit ? p : Object.freeze({ ...p, limit, burst: limit, capacity: limit });
  }
  burst ??= scaledBurst(p, limit);
  if (limit === p.limit && burst === p.burst) return p;
  if (
    (p.algorithm === 'gcra' || (p.algorithm === 'leaky-bucket' && p.mode === 'shaper')) &&
    p.windowMs / limit < MIN_GCRA_STEP_MS
  ) {
    fail(
      field,
      `${limit} per ${p.windowMs} ms is beyond what ${p.algorithm} resolves (${1 / MIN_GCRA_STEP_MS} per ms)`,
    );
  }
  // A shaper's undelayed share cannot exceed its queue: a smaller burst caps it.
  const delay = p.nodelay ? burst : Math.min(p.delay, burst);
  return Object.freeze({ ...p, limit, burst, capacity: burst, delay });
}
