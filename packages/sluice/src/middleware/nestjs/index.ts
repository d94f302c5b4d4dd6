/**
 * `sluice/nestjs`: rate limiting for NestJS on @nestjs/platform-express and @nestjs/platform-fastify (a
 * module, a guard and decorators over the shared HTTP engine), and a ThrottlerStorage for teams that keep
 * @nestjs/throttler's guard and decorators.
 * Import `RateLimitModule.forRoot({ policy: { algorithm: 'gcra', limit: 100, window: '1m' } })` in the
 * application's module (docs/nestjs.md).
 */
export { RateLimit, RateLimitDecision, SkipRateLimit } from './decorators.js';
export { RateLimitException, RateLimitExceptionFilter } from './exception.js';
export { RateLimitGuard } from './guard.js';
export { RateLimitModule, type RateLimitModuleAsyncOptions } from './module.js';
export type { NestRateLimitOptions, NestRequest, NestResponse } from './options.js';
export {
  SluiceThrottlerStorage,
  type SluiceThrottlerStorageOptions,
  type ThrottlerAlgorithm,
  type ThrottlerStorageRecord,
} from '../../compat/nestjs-throttler.js';
export { ipKey } from '../../http/client-ip.js';
export { graphqlCost } from '../../http/graphql-cost.js';
export { github, stripe } from '../../http/presets.js';
export type { LimitedResponse } from '../../http/engine.js';
export type { AccessList, LimitedEvent, LimitRule, RateLimitInfo, RequestInfo, RouteRule } from '../../http/options.js';
