/**
 * sluice for Express 5 (and 4): `app.use(rateLimit(options))`, or per route `app.post('/login', rateLimit(...), h)`.
 *
 * @example
 * import { rateLimit } from 'sluice/express';
 * app.use(rateLimit({ policy: { algorithm: 'gcra', limit: 10, window: '1m' }, headers: 'draft-7' }));
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { HttpRateLimiter, isPromise, type LimitedResponse, type Outcome } from '../../http/engine.js';
import { NodeHeaders, NodeRequestInfo, passNode, refuseNode, callNext, watchNode } from '../../http/node.js';
import type { RateLimitInfo, RateLimitOptions } from '../../http/options.js';

// The presets and key helpers, so that one import serves: `import { rateLimit, github } from 'sluice/express'`.
export { ipKey } from '../../http/client-ip.js';
export { graphqlCost } from '../../http/graphql-cost.js';
export { github, stripe } from '../../http/presets.js';
export type { LimitedResponse } from '../../http/engine.js';
export type { AccessList, LimitedEvent, RateLimitInfo, RequestInfo, RouteRule } from '../../http/options.js';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** Set by sluice's rateLimit on every request it decided (not on skipped or allow-listed ones). */
      rateLimit?: RateLimitInfo;
    }
  }
}

export interface ExpressRateLimitOptions extends RateLimitOptions<Request, Response> {
  /** Sends the refusal yourself; rate-limit headers and Retry-After are already set. Default: problem+json. */
  handler?: (req: Request, res: Response, next: NextFunction, limited: LimitedResponse) => void;
}

/** Express middleware that decides each request. Errors (a throwing key function, a store failure) go to `next(err)`. */
export function rateLimit(options: ExpressRateLimitOptions): RequestHandler {
  const engine = new HttpRateLimiter<Request, Response>(options, 'rateLimit', ['handler'], (res) => res.statusCode);
  const custom = options.handler;

  const apply = (o: Outcome<Request> | undefined, req: Request, res: Response, next: NextFunction) => {
    if (o === undefined) return next();
    req.rateLimit = o;
    engine.writeHeaders(o, new NodeHeaders(res));
    if (!o.limited) {
      if (engine.watchesResponses) watchNode(engine, o, req, res, res);
      return passNode(engine, o, res, callNext, next, undefined);
    }
    if (custom !== undefined) return custom(req, res, next, engine.limitedResponse(o));
    refuseNode(engine, o, req, res);
  };

  return (req, res, next) => {
    let r;
    try {
      r = engine.check(req, new NodeRequestInfo(req));
    } catch (e) {
      return next(e);
    }
    if (isPromise(r)) r.then((o) => apply(o, req, res, next), next);
    else apply(r, req, res, next);
  };
}
