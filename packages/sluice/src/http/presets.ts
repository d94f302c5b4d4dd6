/**
 * Presets: the published limits of real APIs, as options for any adapter. Spread one and override what you
 * like: `rateLimit({ ...stripe({ mode: 'test' }), headers: 'draft-7' })`.
 */
import { SluiceError } from '../core/errors.js';
import { check } from '../core/option-checks.js';
import { graphqlCost } from './graphql-cost.js';
import type { KeyOption, RateLimitOptions, RequestInfo } from './options.js';

const READ_METHODS = ['GET', 'HEAD', 'OPTIONS'];

export interface StripePresetOptions<Req> {
  /** 'live' (default): 100 reads and 100 writes per second; 'test': 25 and 25. */
  mode?: 'live' | 'test';
  /** The account a request is charged to. Default: the Authorization header (the API key), hashed; else the client IP. */
  account?: KeyOption<Req>;
}

/**
 * Stripe's basic rate limiter: per account, 100 read and 100 write operations per second in live mode, 25
 * and 25 in test mode, as two token buckets split by HTTP method (GET, HEAD and OPTIONS read; the rest write).
 * Sources: https://docs.stripe.com/rate-limits ("Rate limiter": live mode 100 read and 100 write operations,
 * test mode 25 and 25) and https://stripe.com/blog/rate-limiters (Stripe's limiters are token buckets).
 */
export function stripe<Req>(options: StripePresetOptions<Req> = {}): RateLimitOptions<Req> {
  const mode = check.oneOf(options.mode ?? 'live', ['live', 'test'], "stripe preset: 'mode'");
  const limit = mode === 'live' ? 100 : 25;
  const key = options.account ?? { header: 'authorization' };
  return {
    routes: [
      {
        name: 'stripe-read',
        method: READ_METHODS,
        key,
        policy: { name: 'read', algorithm: 'token-bucket', limit, window: '1s' },
      },
      { name: 'stripe-write', key, policy: { name: 'write', algorithm: 'token-bucket', limit, window: '1s' } },
    ],
  };
}

/** What the GraphQL endpoint received: the usual JSON body. */
export interface GraphqlRequestBody {
  query: string;
  variables?: Record<string, unknown> | null;
  operationName?: string | null;
}

export interface GithubPresetOptions<Req> {
  /** The authenticated user (any stable id), or undefined for an anonymous request, which is keyed by IP. */
  user: (req: Req, info: RequestInfo) => string | undefined;
  /**
   * Charge GraphQL requests by query cost: `body` returns the parsed request body (so the middleware must run
   * after the body parser; on Fastify use `hook: 'preHandler'`). `path` defaults to '/graphql'.
   */
  graphql?: {
    path?: string;
    body: (req: Req, info: RequestInfo) => GraphqlRequestBody | undefined | Promise<GraphqlRequestBody | undefined>;
  };
}

/**
 * GitHub's primary rate limits: REST 5000 requests per hour per authenticated user and 60 per hour per IP
 * for anonymous requests; GraphQL 5000 points per hour per user, a query costing its point value
 * (`graphqlCost`). Headers are GitHub's: X-RateLimit-Limit, -Remaining, -Used, -Reset (epoch seconds) and
 * -Resource ('core' or 'graphql'). Each limit is an hour-long fixed window, aligned to the epoch hour here
 * (GitHub does not publish where its windows start).
 * Sources: https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api and
 * https://docs.github.com/en/graphql/overview/rate-limits-and-query-limits-for-the-graphql-api
 */
export function github<Req>(options: GithubPresetOptions<Req>): RateLimitOptions<Req> {
  check.function(options?.user, "github preset: 'user'", { note: '(req, info) => string | undefined' });
  const user = options.user;
  const routes: NonNullable<RateLimitOptions<Req>['routes']> = [];
  if (options.graphql !== undefined) {
    const body = options.graphql.body;
    routes.push({
      name: 'graphql',
      method: 'POST',
      path: options.graphql.path ?? '/graphql',
      key: user,
      policy: { name: 'graphql', algorithm: 'fixed-window', limit: 5000, window: '1h' },
      cost: async (req, info) => {
        const b = await body(req, info);
        try {
          return graphqlCost(b?.query as string, b?.variables ?? {}, b?.operationName ?? undefined);
        } catch (e) {
          // Not valid GraphQL: the server rejects it without work, so it costs the minimum.
          if (e instanceof SluiceError && e.code === 'ERR_SLUICE_INVALID_GRAPHQL') return 1;
          throw e;
        }
      },
    });
  }
  routes.push(
    {
      name: 'core',
      match: (req, info) => user(req, info) !== undefined,
      key: user,
      policy: { name: 'core', algorithm: 'fixed-window', limit: 5000, window: '1h' },
    },
    { name: 'core-anonymous', policy: { name: 'core', algorithm: 'fixed-window', limit: 60, window: '1h' } },
  );
  return { headers: 'legacy', routes };
}
