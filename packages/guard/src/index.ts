/**
 * @sluice/guard: login abuse defence against brute force, credential stuffing and password spraying.
 *
 * @example
 * import { Guard } from '@sluice/guard';
 * const guard = new Guard({ secret: process.env.GUARD_SECRET });
 * const v = await guard.check({ account: 'alice@example.com', ip: '203.0.113.7' });
 */
export { Guard } from './node.js';
export type { RecordResult } from './guard.js';
export type { LoginAttempt, LoginOutcome } from './attempt.js';
export type { GuardAction, GuardVerdict } from './ladder.js';
export type { GuardOptions, SignalWeights } from './options.js';
export { DEFAULT_WEIGHTS } from './options.js';
export type {
  AccountView,
  FailOutcome,
  GuardState,
  GuardStateSource,
  JudgedFailure,
  JudgedSuccess,
  LoginConfig,
  LoginPort,
  LoginReads,
  Path,
  SourceSpec,
  SourceView,
} from './state.js';
// The guard's state on Redis. It imports no Redis client: the app passes its own, or a RedisStore.
export {
  RedisGuardState,
  type GuardStateOnError,
  type RedisGuardStateOptions,
  type RedisGuardStateStats,
} from './redis/state.js';
export { MemoryGuardState, type MemoryGuardStateOptions } from './memory-state.js';
export { backoffMs, type BackoffSchedule } from './backoff.js';
export {
  hcaptcha,
  recaptcha,
  SiteverifyCaptcha,
  SITEVERIFY_URLS,
  turnstile,
  type CaptchaProvider,
  type CaptchaResult,
  type SiteverifyOptions,
} from './captcha.js';
