/** The options of sluice/nestjs: the common HTTP options, given once to RateLimitModule. */
import type { RateLimitOptions } from '../../http/options.js';

/**
 * The request a Nest handler sees: Express's `Request` on @nestjs/platform-express, Fastify's
 * `FastifyRequest` on @nestjs/platform-fastify. Key, cost and skip callbacks receive it as it is.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type NestRequest = any;
/** The response: Express's `Response`, or Fastify's `FastifyReply`; both have `statusCode`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type NestResponse = any;

export interface NestRateLimitOptions extends RateLimitOptions<NestRequest, NestResponse> {
  /** Guard every route of the application (APP_GUARD). Default true; false to use `@UseGuards(RateLimitGuard)` where wanted. */
  global?: boolean;
}
