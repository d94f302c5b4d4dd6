/**
 * @sluice/guard where the Redis guard state cannot load (Workers, browsers: it reads its Lua script from
 * disk): everything @sluice/guard exports but RedisGuardState. package.json serves it under the default
 * condition and the full entry under "node" (Node, Bun and Deno).
 */
export { Guard, type RecordResult } from './guard.js';
export type { LoginAttempt, LoginOutcome } from './attempt.js';
export type { GuardAction, GuardVerdict } from './ladder.js';
export type { GuardOptions, SignalWeights } from './options.js';
export { DEFAULT_WEIGHTS } from './options.js';
export type { AccountView, FailOutcome, GuardState, GuardStateSource, Path, SourceSpec, SourceView } from './state.js';
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
