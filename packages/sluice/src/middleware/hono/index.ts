/**
 * sluice for Hono 4: `app.use(rateLimit(options))`. The client address comes from `getConnInfo` (pass your
 * runtime's, e.g. `getConnInfo` from '@hono/node-server/conninfo'); on @hono/node-server it is found without.
 *
 * @example
 * import { rateLimit } from 'sluice/hono';
 * app.use(rateLimit({ policy: { algorithm: 'gcra', limit: 10, window: '1m' } }));
 */
import type { Context, MiddlewareHandler } from 'hono';
import { HttpRateLimiter, type LimitedResponse, type Outcome } from '../../http/engine.js';
import type { RateLimitInfo, RateLimitOptions, RequestInfo } from '../../http/options.js';
import { hold } from '../../http/hold.js';
import { PROBLEM_CONTENT_TYPE } from '../../http/problem.js';

// The presets and key helpers, so that one import serves: `import { rateLimit, github } from 'sluice/hono'`.
export { ipKey } from '../../http/client-ip.js';
export { graphqlCost } from '../../http/graphql-cost.js';
export { github, stripe } from '../../http/presets.js';
export type { LimitedResponse } from '../../http/engine.js';
export type { AccessList, LimitedEvent, RateLimitInfo, RequestInfo, RouteRule } from '../../http/options.js';

declare module 'hono' {
  interface ContextVariableMap {
    /** Set by sluice's rateLimit on every request it decided (not on skipped or allow-listed ones). */
    rateLimit: RateLimitInfo;
  }
}

/** Hono's GetConnInfo shape: what each runtime adapter's `getConnInfo` returns. */
export type GetConnInfo = (c: Context) => { remote: { address?: string | undefined } };

/** `requestWasSuccessful` receives the context and the response the handlers made (`c.res`). */
export interface HonoRateLimitOptions extends RateLimitOptions<Context, Response> {
  /** The runtime's connection info helper. Default: the socket of @hono/node-server. */
  getConnInfo?: GetConnInfo;
  /** Builds the refusal yourself; rate-limit headers and Retry-After are already set on `c`. */
  handler?: (c: Context, limited: LimitedResponse) => Response | Promise<Response>;
}

interface Closable {
  once(event: 'finish' | 'close', f: () => void): unknown;
}

interface NodeBindings {
  incoming?: { socket?: { remoteAddress?: string } };
  outgoing?: Closable;
  server?: { incoming?: { socket?: { remoteAddress?: string } } };
}

/** @hono/node-server puts the IncomingMessage in `c.env` (or `c.env.server` behind other bindings). */
const nodeConnInfo: GetConnInfo = (c) => {
  const env = c.env as NodeBindings | undefined;
  return { remote: { address: env?.incoming?.socket?.remoteAddress ?? env?.server?.incoming?.socket?.remoteAddress } };
};

class HonoRequestInfo implements RequestInfo {
  ip = '';
  constructor(
    private readonly c: Context,
    private readonly conn: GetConnInfo,
  ) {}
  get method(): string {
    return this.c.req.method;
  }
  get path(): string {
    return this.c.req.path;
  }
  header(name: string): string | undefined {
    return this.c.req.header(name);
  }
  get remoteAddress(): string | undefined {
    return this.conn(this.c).remote.address;
  }
}

/** Hono middleware that decides each request. Errors (a throwing key function, a store failure) go to `app.onError`. */
export function rateLimit(options: HonoRateLimitOptions): MiddlewareHandler {
  const engine = new HttpRateLimiter<Context, Response>(
    options,
    'rateLimit',
    ['getConnInfo', 'handler'],
    (res) => res.status,
  );
  const conn = options.getConnInfo ?? nodeConnInfo;
  const custom = options.handler;

  const refuse = async (c: Context, o: Outcome<Context>, headers: [string, string][]): Promise<Response> => {
    for (const [name, value] of headers) c.header(name, value);
    if (custom !== undefined) {
      c.status(o.status as never);
      return custom(c, engine.limitedResponse(o));
    }
    const type = { 'Content-Type': PROBLEM_CONTENT_TYPE };
    if (c.req.method === 'HEAD') return c.body(null, o.status as never, type);
    return c.body(JSON.stringify(engine.problem(o)), o.status as never, type);
  };

  /**
   * Runs the handlers; with skip options, judges their response. A thrown error, or a client that leaves
   * before the handlers are done (judged then, not when they finally return), is a failure.
   */
  const run = async (c: Context, o: Outcome<Context>, next: () => Promise<void>): Promise<void> => {
    if (!engine.watchesResponses) return next();
    const signal = c.req.raw.signal;
    let judged = false;
    const judge = (completed: boolean) => {
      if (judged) return;
      judged = true;
      signal.removeEventListener('abort', aborted);
      engine.responded(o, c, c.res, completed);
    };
    const aborted = () => judge(false);
    signal.addEventListener('abort', aborted, { once: true });
    try {
      await next();
    } catch (e) {
      judge(false);
      throw e;
    }
    judge(c.error === undefined && !signal.aborted);
  };

  return async (c, next) => {
    const o = await engine.check(c, new HonoRequestInfo(c, conn));
    if (o === undefined) return next();
    c.set('rateLimit', o);
    const headers: [string, string][] = [];
    engine.writeHeaders(o, { setHeader: (name: string, value: string) => headers.push([name, value]) });
    if (o.limited) return refuse(c, o, headers);
    if (o.delayMs <= 0 && o.decision.leaseId === undefined) {
      await run(c, o, next);
      for (const [name, value] of headers) c.header(name, value);
      return;
    }

    const signal = c.req.raw.signal;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      engine.release(o);
    };
    const leased = o.decision.leaseId !== undefined;
    // On @hono/node-server the lease ends when the response is sent (streams included); elsewhere when the handler returns.
    const outgoing = leased ? (c.env as NodeBindings | undefined)?.outgoing : undefined;
    if (leased) {
      signal.addEventListener('abort', release, { once: true });
      outgoing?.once('finish', release);
      outgoing?.once('close', release);
    }
    try {
      if (o.delayMs > 0 && !(await hold(o.delayMs, signal))) {
        engine.refund(o); // the client left while held: free its place, never pass it on
        return new Response(null, { status: 499 });
      }
      await run(c, o, next);
      for (const [name, value] of headers) c.header(name, value);
    } finally {
      if (leased && (outgoing === undefined || released)) {
        signal.removeEventListener('abort', release);
        release();
      }
    }
  };
}
