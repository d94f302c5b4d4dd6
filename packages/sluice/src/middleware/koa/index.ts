/**
 * sluice for Koa 2 and 3: `app.use(rateLimit(options))`, or per route with @koa/router. The decision is on
 * `ctx.state.rateLimit`, Koa's place for what middleware hands on.
 *
 * @example
 * import { rateLimit } from 'sluice/koa';
 * app.use(rateLimit({ policy: { algorithm: 'gcra', limit: 10, window: '1m' } }));
 */
import type { Context, Middleware, Next, Response } from 'koa';
import { HttpRateLimiter, type LimitedResponse } from '../../http/engine.js';
import { NodeHeaders, NodeRequestInfo, passedNode, watchNode } from '../../http/node.js';
import type { RateLimitInfo, RateLimitOptions } from '../../http/options.js';
import { PROBLEM_CONTENT_TYPE } from '../../http/problem.js';

// The presets and key helpers, so that one import serves: `import { rateLimit, github } from 'sluice/koa'`.
export { ipKey } from '../../http/client-ip.js';
export { graphqlCost } from '../../http/graphql-cost.js';
export { github, stripe } from '../../http/presets.js';
export type { LimitedResponse } from '../../http/engine.js';
export type { AccessList, LimitedEvent, RateLimitInfo, RequestInfo, RouteRule } from '../../http/options.js';

declare module 'koa' {
  interface DefaultState {
    /** Set by sluice's rateLimit on every request it decided (not on skipped or allow-listed ones). */
    rateLimit?: RateLimitInfo;
  }
}

/** `requestWasSuccessful` receives the context and Koa's response (`ctx.response`, its `status` the one sent). */
export interface KoaRateLimitOptions extends RateLimitOptions<Context, Response> {
  /** Sends the refusal yourself (set `ctx.body`); the status, rate-limit headers and Retry-After are already set. */
  handler?: (ctx: Context, limited: LimitedResponse) => void | Promise<void>;
}

/** Koa middleware that decides each request. Errors (a throwing key function, a store failure) are thrown to Koa. */
export function rateLimit(options: KoaRateLimitOptions): Middleware {
  const engine = new HttpRateLimiter<Context, Response>(options, 'koa rateLimit', ['handler'], (res) => res.status);
  const custom = options.handler;

  return async (ctx: Context, next: Next) => {
    const o = await engine.check(ctx, new NodeRequestInfo(ctx.req));
    if (o === undefined) return next();
    ctx.state.rateLimit = o;
    engine.writeHeaders(o, new NodeHeaders(ctx.res));
    if (o.limited) {
      ctx.status = o.status;
      if (custom !== undefined) return custom(ctx, engine.limitedResponse(o));
      // A Buffer with the type set after, so that Koa adds no charset parameter (RFC 8259 JSON has none); Koa drops it for HEAD.
      ctx.body = Buffer.from(JSON.stringify(engine.problem(o)));
      ctx.type = PROBLEM_CONTENT_TYPE;
      return;
    }
    if (engine.watchesResponses) watchNode(engine, o, ctx, ctx.response, ctx.res);
    const go = passedNode(engine, o, ctx.res);
    if (go === true || (go !== false && (await go))) return next();
  };
}

export default rateLimit;
