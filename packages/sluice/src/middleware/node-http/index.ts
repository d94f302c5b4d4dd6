/**
 * `sluice/http`: rate limiting for plain `node:http` (a wrapped request listener decides every request
 * first), and the pieces every adapter shares, re-exported from http/.
 *
 * @example
 * import { createServer } from 'node:http';
 * import { withRateLimit } from 'sluice/http';
 * createServer(withRateLimit((req, res) => res.end('ok'), { policy: { algorithm: 'gcra', limit: 10, window: '1m' } }));
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { HttpRateLimiter, isPromise, type LimitedResponse, type Outcome } from '../../http/engine.js';
import { NodeHeaders, NodeRequestInfo, passNode, refuseNode, watchNode } from '../../http/node.js';
import type { RateLimitInfo, RateLimitOptions } from '../../http/options.js';

export * from '../../http/index.js';

declare module 'http' {
  interface IncomingMessage {
    /** Set by sluice's withRateLimit on every request it decided (not on skipped or allow-listed ones). */
    rateLimit?: RateLimitInfo;
  }
}

export interface NodeRateLimitOptions extends RateLimitOptions<IncomingMessage, ServerResponse> {
  /** Sends the refusal yourself; rate-limit headers and Retry-After are already set. Default: problem+json. */
  handler?: (req: IncomingMessage, res: ServerResponse, limited: LimitedResponse) => void;
  /** Called when deciding fails (a key function throws, the store is down). Default: log it, answer a bare 500. */
  onError?: (error: unknown, req: IncomingMessage, res: ServerResponse) => void;
}

/** Returns a listener that decides each request, then calls `handler` (or refuses, or holds, as decided). */
export function withRateLimit(handler: RequestListener, options: NodeRateLimitOptions): RequestListener {
  const engine = new HttpRateLimiter<IncomingMessage, ServerResponse>(
    options,
    'withRateLimit',
    ['handler', 'onError'],
    (res) => res.statusCode,
  );
  const custom = options.handler;
  const onError =
    options.onError ??
    ((e: unknown, _req: IncomingMessage, res: ServerResponse) => {
      console.error('[sluice] deciding a request failed:', e);
      if (!res.headersSent) res.statusCode = 500;
      res.end();
    });

  const apply = (o: Outcome<IncomingMessage> | undefined, req: IncomingMessage, res: ServerResponse) => {
    if (o === undefined) return handler(req, res);
    req.rateLimit = o;
    engine.writeHeaders(o, new NodeHeaders(res));
    if (!o.limited) {
      if (engine.watchesResponses) watchNode(engine, o, req, res, res);
      return passNode(engine, o, res, handler, req, res);
    }
    if (custom !== undefined) return custom(req, res, engine.limitedResponse(o));
    refuseNode(engine, o, req, res);
  };

  return (req, res) => {
    let r;
    try {
      r = engine.check(req, new NodeRequestInfo(req));
    } catch (e) {
      return onError(e, req, res);
    }
    if (isPromise(r)) r.then((o) => apply(o, req, res)).catch((e: unknown) => onError(e, req, res));
    else apply(r, req, res);
  };
}

/** The same as a decorator: `createServer(rateLimit(options)(handler))`. */
export function rateLimit(options: NodeRateLimitOptions): (handler: RequestListener) => RequestListener {
  return (handler) => withRateLimit(handler, options);
}
