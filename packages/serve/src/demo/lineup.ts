// The contenders `sluice demo` compares: one policy per algorithm (and variant), all on the same scale.
import type { PolicyOptions } from 'sluice/kit';
import { CONCURRENCY, LIMIT, WINDOW_MS } from './scale.js';

export interface Contender {
  /** How the demo's tables name it. */
  readonly label: string;
  readonly policy: PolicyOptions;
  /** Concurrency only: each admitted request's lease is released this many ms after admission. */
  readonly holdMs?: number;
}

const window = WINDOW_MS;

export const CONTENDERS: readonly Contender[] = [
  { label: 'fixed-window', policy: { algorithm: 'fixed-window', limit: LIMIT, window } },
  { label: 'sliding-log', policy: { algorithm: 'sliding-log', limit: LIMIT, window } },
  { label: 'sliding-window k=1', policy: { algorithm: 'sliding-window', limit: LIMIT, window, buckets: 1 } },
  { label: 'sliding-window k=10', policy: { algorithm: 'sliding-window', limit: LIMIT, window, buckets: 10 } },
  { label: 'token-bucket', policy: { algorithm: 'token-bucket', limit: LIMIT, window } },
  { label: 'gcra', policy: { algorithm: 'gcra', limit: LIMIT, window } },
  { label: 'leaky-bucket meter', policy: { algorithm: 'leaky-bucket', limit: LIMIT, window, mode: 'meter' } },
  { label: 'leaky-bucket shaper', policy: { algorithm: 'leaky-bucket', limit: LIMIT, window, mode: 'shaper' } },
  {
    label: `concurrency ${CONCURRENCY.inFlight}×${CONCURRENCY.holdMs / 1000}s`,
    policy: { algorithm: 'concurrency', limit: CONCURRENCY.inFlight, window: CONCURRENCY.leaseTimeoutMs },
    holdMs: CONCURRENCY.holdMs,
  },
];
