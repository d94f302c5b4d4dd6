/**
 * `sluice/http`: rate limiting for plain node:http, and the pieces every adapter shares (client keys,
 * header rendering, problem details, presets).
 *
 * @example
 * import { createServer } from 'node:http';
 * import { withRateLimit } from 'sluice/http';
 * createServer(withRateLimit((req, res) => res.end('ok'), { policy: { algorithm: 'gcra', limit: 10, window: '1m' } })).listen(3000);
 */
export { rateLimit, withRateLimit, type NodeRateLimitOptions } from '../middleware/node-http/index.js';
export { HttpRateLimiter, type LimitedResponse, type Outcome } from './engine.js';
export type { CostOption, KeyOption, LimitedEvent, LimitRule, RateLimitOptions, RequestInfo, RouteRule } from './options.js';
export { CidrSet, ipKey, normalizeIp, resolveClient, forwardedHops, xForwardedForHops } from './client-ip.js';
export { HeaderRenderer, HEADER_STYLES, retryAfterSeconds, type HeaderStyle, type HeaderTarget } from './headers.js';
export { problemDetails, PROBLEM_CONTENT_TYPE, QUOTA_EXCEEDED, type ProblemDetails } from './problem.js';
export { graphqlCost } from './graphql-cost.js';
export { github, stripe, type GithubPresetOptions, type GraphqlRequestBody, type StripePresetOptions } from './presets.js';
export type { SluiceWarningCode } from './warnings.js';
