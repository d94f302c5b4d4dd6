/**
 * sluice for Fastify 5: a plugin whose hook decides each request of the scope it is registered in.
 *
 * @example
 * import { rateLimit } from 'sluice/fastify';
 * await app.register(rateLimit, { policy: { algorithm: 'gcra', limit: 10, window: '1m' } });
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { SluiceError, show } from '../../core/errors.js';
import { HttpRateLimiter, isPromise, type LimitedResponse, type Outcome } from '../../http/engine.js';
import { callNext, NodeRequestInfo, passNode, watchNode } from '../../http/node.js';
import type { RateLimitInfo, RateLimitOptions } from '../../http/options.js';
import { PROBLEM_CONTENT_TYPE } from '../../http/problem.js';

// The presets and key helpers, so that one import serves: `import { rateLimit, github } from 'sluice/fastify'`.
export { ipKey } from '../../http/client-ip.js';
export { graphqlCost } from '../../http/graphql-cost.js';
export { github, stripe } from '../../http/presets.js';
export type { LimitedResponse } from '../../http/engine.js';
export type { AccessList, LimitedEvent, RateLimitInfo, RequestInfo, RouteRule } from '../../http/options.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** A request decoration set by sluice's plugin on every request it decided (null on skipped or allow-listed ones). */
    rateLimit: RateLimitInfo | null;
  }
}

export interface FastifyRateLimitOptions extends RateLimitOptions<FastifyRequest, FastifyReply> {
  /** The hook to decide in: 'onRequest' (default, before the body is read) or 'preHandler' (a cost may read `request.body`). */
  hook?: 'onRequest' | 'preHandler';
  /** Sends the refusal yourself (`return reply.send(...)`); rate-limit headers and Retry-After are already set. */
  handler?: (request: FastifyRequest, reply: FastifyReply, limited: LimitedResponse) => unknown;
}

/** The plugin. It skips Fastify's encapsulation, so its hook covers the scope it is registered in. */
export function rateLimit(
  instance: FastifyInstance,
  options: FastifyRateLimitOptions,
  done: (err?: Error) => void,
): void {
  const { hook = 'onRequest', ...rest } = options;
  if (hook !== 'onRequest' && hook !== 'preHandler') {
    return done(
      new SluiceError('ERR_SLUICE_INVALID_OPTION', `'hook' must be 'onRequest' or 'preHandler', got ${show(hook)}`),
    );
  }
  let engine: HttpRateLimiter<FastifyRequest, FastifyReply>;
  try {
    engine = new HttpRateLimiter<FastifyRequest, FastifyReply>(
      rest,
      'fastify rateLimit',
      ['handler'],
      (reply) => reply.statusCode,
    );
  } catch (e) {
    return done(e as Error);
  }
  if (!instance.hasRequestDecorator('rateLimit')) instance.decorateRequest('rateLimit', null);
  const custom = options.handler;

  const apply = (
    o: Outcome<FastifyRequest> | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
    next: HookHandlerDoneFunction,
  ) => {
    if (o === undefined) return next();
    request.rateLimit = o;
    engine.writeHeaders(o, { setHeader: (name: string, value: string) => reply.header(name, value) });
    if (!o.limited) {
      if (engine.watchesResponses) watchNode(engine, o, request, reply, reply.raw);
      return passNode(engine, o, reply.raw, callNext, next, undefined);
    }
    reply.code(o.status);
    if (custom !== undefined) return void custom(request, reply, engine.limitedResponse(o));
    // A Buffer, so that Fastify adds no charset parameter (RFC 8259 JSON has none).
    reply
      .type(PROBLEM_CONTENT_TYPE)
      .send(request.method === 'HEAD' ? undefined : Buffer.from(JSON.stringify(engine.problem(o))));
  };

  instance.addHook(hook, (request: FastifyRequest, reply: FastifyReply, next: HookHandlerDoneFunction) => {
    let r;
    try {
      r = engine.check(request, new NodeRequestInfo(request.raw));
    } catch (e) {
      return next(e as Error);
    }
    if (isPromise(r))
      r.then(
        (o) => apply(o, request, reply, next),
        (e: Error) => next(e),
      );
    else apply(r, request, reply, next);
  });
  done();
}

const meta = rateLimit as unknown as Record<symbol, unknown>;
meta[Symbol.for('skip-override')] = true;
meta[Symbol.for('fastify.display-name')] = 'sluice-rate-limit';
meta[Symbol.for('plugin-meta')] = { name: 'sluice-rate-limit', fastify: '5.x' };

export default rateLimit;
