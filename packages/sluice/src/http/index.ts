/**
 * The pieces every HTTP adapter shares: the engine, client keys, header rendering, problem details and
 * presets. `sluice/http` (middleware/node-http/index.ts) exports them beside the node:http adapter.
 */
export { HttpRateLimiter, type LimitedResponse, type Outcome } from './engine.js';
export type {
  CostOption,
  KeyOption,
  LimitedEvent,
  LimitRule,
  RateLimitOptions,
  RequestInfo,
  RouteRule,
} from './options.js';
export { CidrSet, ipKey, normalizeIp, resolveClient, forwardedHops, xForwardedForHops } from './client-ip.js';
export { HeaderRenderer, HEADER_STYLES, retryAfterSeconds, type HeaderStyle, type HeaderTarget } from './headers.js';
export { problemDetails, PROBLEM_CONTENT_TYPE, QUOTA_EXCEEDED, type ProblemDetails } from './problem.js';
export { graphqlCost } from './graphql-cost.js';
export {
  github,
  stripe,
  type GithubPresetOptions,
  type GraphqlRequestBody,
  type StripePresetOptions,
} from './presets.js';
export type { SluiceWarningCode } from './warnings.js';
