/**
 * sluice for Next.js (App Router, 15 and 16): `rateLimit(options)` is a whole middleware (`middleware.ts`
 * on the edge or Node runtime, `proxy.ts` on Next 16), and `withRateLimit(handler, options)` wraps a route
 * handler. Both answer with the headers, 429 and problem+json body of every other sluice adapter.
 *
 * Next gives a route no socket address, and `next start` passes a client's own X-Forwarded-For through
 * unchanged, so the client address is read only from the header named by `ipHeader`: one your platform or
 * proxy sets (Vercel's `x-real-ip`, say).
 *
 * @example
 * // middleware.ts
 * import { rateLimit } from 'sluice/next';
 * export const middleware = rateLimit({ policy: { algorithm: 'gcra', limit: 10, window: '1m' }, ipHeader: 'x-real-ip' });
 * export const config = { matcher: '/api/:path*' };
 */
import { SluiceError, show } from '../../core/errors.js';
import { check } from '../../core/option-checks.js';
import { HttpRateLimiter, type LimitedResponse, type Outcome } from '../../http/engine.js';
import { xForwardedForHops } from '../../http/client-ip.js';
import type { RateLimitInfo, RateLimitOptions, RequestInfo } from '../../http/options.js';
import { hold } from '../../http/hold.js';
import { PROBLEM_CONTENT_TYPE } from '../../http/problem.js';
import { fail } from '../../http/rule.js';

// The presets and key helpers, so that one import serves: `import { rateLimit, github } from 'sluice/next'`.
export { ipKey } from '../../http/client-ip.js';
export { graphqlCost } from '../../http/graphql-cost.js';
export { github, stripe } from '../../http/presets.js';
export type { LimitedResponse } from '../../http/engine.js';
export type { AccessList, LimitedEvent, RateLimitInfo, RequestInfo, RouteRule } from '../../http/options.js';

export interface NextRateLimitOptions extends RateLimitOptions<Request, Response> {
  /**
   * The request header that carries the client address, set by your platform or proxy and never passed
   * on from a client unchanged: `'x-real-ip'` on Vercel, `'cf-connecting-ip'` behind Cloudflare, the header
   * your nginx sets to `$remote_addr`. `'x-forwarded-for'` takes its last entry (what the nearest proxy
   * appended); with `trustProxy`, earlier entries appended by trusted proxies are walked past, as in the
   * other adapters. Default: none, and a request keyed by address then fails (ERR_SLUICE_NO_CLIENT_ADDRESS):
   * key by something else, or name the header.
   */
  ipHeader?: string;
  /** Builds the refusal yourself; `headers` holds the rate-limit headers and Retry-After to send with it. */
  handler?: (request: Request, limited: LimitedResponse, headers: Headers) => Response | Promise<Response>;
}

/** The route handler `withRateLimit` returns: Next calls it with the request and `{ params }`. */
export type RouteHandler<C> = (request: Request, context: C) => Promise<Response>;
/** The handler `withRateLimit` wraps: also given the decision (undefined when the request was not limited at all). */
export type LimitedRouteHandler<C> = (
  request: Request,
  context: C,
  rateLimit: RateLimitInfo | undefined,
) => Response | Promise<Response>;

class NextRequestInfo implements RequestInfo {
  ip = '';
  private pathname: string | undefined;
  constructor(
    private readonly request: Request,
    private readonly ipHeader: string | undefined,
  ) {}
  get method(): string {
    return this.request.method;
  }
  get path(): string {
    return (this.pathname ??=
      (this.request as { nextUrl?: URL }).nextUrl?.pathname ?? new URL(this.request.url).pathname);
  }
  header(name: string): string | undefined {
    return this.request.headers.get(name) ?? undefined;
  }
  /**
   * Whether a header is there. `next start` sets X-Forwarded-For itself on every request that has none, so
   * its presence says nothing of a proxy: the engine's warning about one left untrusted would fire always.
   */
  has(name: string): boolean {
    if ((name === 'x-forwarded-for' || name === 'forwarded') && this.ipHeader !== name) return false;
    return this.request.headers.has(name);
  }
  /** What the engine takes for the socket peer: the address the platform's header says. */
  get remoteAddress(): string | undefined {
    if (this.ipHeader === undefined) return undefined;
    const value = this.request.headers.get(this.ipHeader);
    if (value === null) return undefined;
    if (this.ipHeader !== 'x-forwarded-for') return value.trim();
    const hops = xForwardedForHops(value);
    return hops[hops.length - 1];
  }
}

/** Checks the options both helpers share; returns the engine. */
function engineFor(options: NextRateLimitOptions, adapter: string): HttpRateLimiter<Request, Response> {
  const engine = new HttpRateLimiter<Request, Response>(options, adapter, ['ipHeader', 'handler'], (res) => res.status);
  const header = options.ipHeader;
  if (header !== undefined && (typeof header !== 'string' || !/^[a-z0-9!#$%&'*+.^_`|~-]+$/i.test(header))) {
    fail(`${adapter}: 'ipHeader' must be a header name, got ${show(header)}`);
  }
  if (options.handler !== undefined)
    check.function(options.handler, `${adapter}: 'handler'`, { note: '(request, limited, headers) => Response' });
  return engine;
}

/** Decides, with the hint to name `ipHeader` when a request could not be keyed by address. */
async function decide(
  engine: HttpRateLimiter<Request, Response>,
  request: Request,
  ipHeader: string | undefined,
): Promise<Outcome<Request> | undefined> {
  try {
    return await engine.check(request, new NextRequestInfo(request, ipHeader?.toLowerCase()));
  } catch (e) {
    if (e instanceof SluiceError && e.code === 'ERR_SLUICE_NO_CLIENT_ADDRESS') {
      throw new SluiceError(
        'ERR_SLUICE_NO_CLIENT_ADDRESS',
        ipHeader === undefined
          ? `a Next.js request carries no socket address, so it is keyed by IP only through 'ipHeader': name the header your platform or proxy sets to the client address ('x-real-ip' on Vercel), or give a 'key' function`
          : `the request has no '${ipHeader}' header, so it cannot be keyed by IP; check that your platform or proxy sets it, or give a 'key' function`,
      );
    }
    throw e;
  }
}

/** The refusal: the custom handler's, or problem+json (no body for HEAD). */
function refusal(
  engine: HttpRateLimiter<Request, Response>,
  options: NextRateLimitOptions,
  request: Request,
  o: Outcome<Request>,
  pairs: [string, string][],
): Response | Promise<Response> {
  const headers = new Headers(pairs);
  if (options.handler !== undefined) return options.handler(request, engine.limitedResponse(o), headers);
  headers.set('content-type', PROBLEM_CONTENT_TYPE);
  return new Response(request.method === 'HEAD' ? null : JSON.stringify(engine.problem(o)), {
    status: o.status,
    headers,
  });
}

/** The rate-limit headers of a decision, as pairs: a Headers object is made only for a refusal. */
function headersOf(engine: HttpRateLimiter<Request, Response>, o: Outcome<Request>): [string, string][] {
  const headers: [string, string][] = [];
  engine.writeHeaders(o, { setHeader: (name: string, value: string) => headers.push([name, value]) });
  return headers;
}

/** `response` with `headers` added; a copy when its headers are immutable (a fetch or redirect response). */
function withHeaders(response: Response, headers: [string, string][]): Response {
  try {
    for (const [name, value] of headers) response.headers.set(name, value);
    return response;
  } catch {
    const copy = new Response(response.body, response);
    for (const [name, value] of headers) copy.headers.set(name, value);
    return copy;
  }
}

/** A client that left while held: nothing is sent (Next drops the response), and its place is freed. */
const GONE = () => new Response(null, { status: 499 });
/** What `requestWasSuccessful` is given for a handler that threw or a client that left. */
const FAILED = new Response(null, { status: 500 });
/** Marks a request that never reached its handler (it was refunded instead). */
const GONE_RESPONSE = new Response(null, { status: 499 });

/**
 * A Next.js middleware (export it as `middleware` from middleware.ts, or as `proxy` from proxy.ts) that
 * decides each request it matches: a refused request gets the 429 here; a passed one goes on to its route
 * (NextResponse.next()) with the rate-limit headers on its response. A shaper's delay holds it first.
 * Options that need the route's response (`skipFailedRequests`, `skipSuccessfulRequests`) and concurrency
 * policies, whose slot lasts until the response ends, belong in `withRateLimit`: a middleware never sees
 * the response, so it refuses the first and releases a concurrency slot as soon as the request passes.
 */
export function rateLimit(options: NextRateLimitOptions): (request: Request) => Promise<Response> {
  const engine = engineFor(options, 'rateLimit');
  if (engine.watchesResponses) {
    fail(
      `rateLimit: 'skipFailedRequests' and 'skipSuccessfulRequests' need the route's response, which a Next.js middleware never sees; use withRateLimit in the route handler`,
    );
  }
  let next: Promise<() => Response> | undefined;
  // next/server is loaded on the first pass, so that sluice/next loads (and withRateLimit runs) without it.
  const passOn = () =>
    (next ??= import('next/server.js').then(
      (m: { NextResponse?: { next(): Response }; default?: { NextResponse: { next(): Response } } }) => {
        const NextResponse = m.NextResponse ?? m.default!.NextResponse;
        return () => NextResponse.next();
      },
    ));

  return async (request) => {
    const o = await decide(engine, request, options.ipHeader);
    const pass = await passOn();
    if (o === undefined) return pass();
    const headers = headersOf(engine, o);
    if (o.limited) return refusal(engine, options, request, o, headers);
    engine.release(o);
    if (o.delayMs > 0 && !(await hold(o.delayMs, request.signal))) {
      engine.refund(o);
      return GONE();
    }
    return withHeaders(pass(), headers);
  };
}

/**
 * Wraps a route handler (`export const GET = withRateLimit(handler, options)`): a refused request gets the
 * 429 and never reaches `handler`; a passed one gets the rate-limit headers on the handler's response. The
 * handler is also given the decision. A concurrency slot is held until the handler returns (or throws, or
 * the client leaves); with `skipFailedRequests` a thrown error or an aborted request counts as failed.
 */
export function withRateLimit<C = unknown>(
  handler: LimitedRouteHandler<C>,
  options: NextRateLimitOptions,
): RouteHandler<C> {
  if (typeof handler !== 'function')
    fail(`withRateLimit: the first argument must be a route handler function, got ${show(handler)}`);
  const engine = engineFor(options, 'withRateLimit');
  return async (request, context) => {
    const o = await decide(engine, request, options.ipHeader);
    if (o === undefined) return handler(request, context, undefined);
    const headers = headersOf(engine, o);
    if (o.limited) return refusal(engine, options, request, o, headers);
    const signal = request.signal;
    const leased = o.decision.leaseId !== undefined;
    const watched = engine.watchesResponses;
    // The slot is freed, and an aborted request judged failed, when the client leaves, not when the
    // handler finally returns.
    let ended = false;
    const end = (response: Response | undefined) => {
      if (ended) return;
      ended = true;
      signal.removeEventListener('abort', aborted);
      if (leased) engine.release(o);
      if (watched && response !== GONE_RESPONSE)
        engine.responded(o, request, response ?? FAILED, response !== undefined && !signal.aborted);
    };
    const aborted = () => end(undefined);
    if (leased || watched) signal.addEventListener('abort', aborted, { once: true });
    let response: Response = GONE_RESPONSE;
    try {
      if (o.delayMs > 0 && !(await hold(o.delayMs, signal))) {
        engine.refund(o); // the client left while held: free its place, never pass it on
        return GONE();
      }
      response = await handler(request, context, o);
      return withHeaders(response, headers);
    } catch (e) {
      response = FAILED;
      end(undefined);
      throw e;
    } finally {
      end(response);
    }
  };
}
