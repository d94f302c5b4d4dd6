/** The pure core: policies, algorithms and decisions. No I/O, no clock, no timers. */
export { createAlgorithm, createOverride } from './algorithms.js';
export { overridePolicy, scaledBurst, type LimitOverride } from './override.js';
export { combine, fromVerdict, makeDecision } from './decision.js';
export { parseDuration } from './duration.js';
export { SluiceError, show, type SluiceErrorCode } from './errors.js';
export { ALGORITHMS, compilePolicies, compilePolicy, numberHint } from './policy.js';
export { CalendarPeriods, CalendarWindow } from './calendar.js';
export { Concurrency, LeaseSet } from './concurrency.js';
export { FixedWindow } from './fixed-window.js';
export { Gcra } from './gcra.js';
export { LeakyBucketMeter, LeakyBucketShaper } from './leaky-bucket.js';
export { LogState, SlidingLog } from './sliding-log.js';
export { SlidingWindow } from './sliding-window.js';
export { RescaledTokenBucket, TokenBucket } from './token-bucket.js';
export { Verdict } from './types.js';
export type {
  Algorithm,
  AlgorithmName,
  Block,
  BlockForOptions,
  Calendar,
  Clock,
  Decision,
  ObjectAlgorithm,
  Policy,
  PolicyOptions,
  SlabAlgorithm,
} from './types.js';
export { isPromise, then, type MaybePromise } from './maybe-promise.js';
