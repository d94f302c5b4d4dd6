/** The options every HTTP adapter takes, and the request view adapters hand to the shared engine. */
import type { LimitOverride } from '../core/override.js';
import type { Clock, Decision, PolicyOptions } from '../core/types.js';
import type { Limiter } from '../limiter.js';
import type { Store } from '../stores/store.js';
import type { HeaderStyle } from './headers.js';

/** What sluice reads from a request, whatever the framework. Adapters implement it; callbacks receive it. */
export interface RequestInfo {
  /** Upper-case method, e.g. 'GET'. */
  readonly method: string;
  /** The path without the query string, as the framework presents it at the middleware. */
  readonly path: string;
  /** A request header by lower-case name; repeated headers joined with ', '. */
  header(name: string): string | undefined;
  /** Optional: whether a header is present, when the adapter can tell more cheaply than `header`. */
  has?(name: string): boolean;
  /** The socket peer, exactly as the runtime reports it. */
  readonly remoteAddress: string | undefined;
  /** The client address: the peer, or a forwarded hop vouched for by `trustProxy`; IPv4-mapped unwrapped; '' if there is no peer address. */
  ip: string;
}

/** A request's key: `'ip'`, a header (an API key; hashed before it is stored), or a function. */
export type KeyOption<Req> =
  | 'ip'
  | { readonly header: string }
  | ((req: Req, info: RequestInfo) => string | undefined | Promise<string | undefined>);

/** How much a request costs: a number, or a function of the request (GraphQL points, bytes, ...). */
export type CostOption<Req> = number | ((req: Req, info: RequestInfo) => number | Promise<number>);

/**
 * A request's limit, decided per request (a tenant's plan, say): a number for the rule's one policy, or
 * limits by policy name (`{ hourly: 5000 }`, `{ burst: { limit: 10, burst: 20 } }`), or a function of the
 * request returning either, or undefined for the policies' own limits. Decided on the same state as
 * requests with other limits (`limiter.limit(key, { limits })`).
 */
export type LimitOption<Req> =
  | number
  | Readonly<Record<string, LimitOverride>>
  | ((
      req: Req,
      info: RequestInfo,
    ) =>
      | number
      | Readonly<Record<string, LimitOverride>>
      | undefined
      | Promise<number | Readonly<Record<string, LimitOverride>> | undefined>);

/** What is limited and how: the part of the options a route can override. */
export interface LimitRule<Req> {
  /** One policy, as for `new Limiter`. */
  policy?: PolicyOptions;
  /** Several policies on each key, decided atomically. */
  policies?: PolicyOptions[];
  /** A ready Limiter instead of `policy`/`policies` (share one across servers or adapters). */
  limiter?: Limiter;
  /** The key. Default: the client IP, IPv6 grouped by `ipv6Subnet`. A function returning undefined falls back to it. */
  key?: KeyOption<Req>;
  /** Default 1. */
  cost?: CostOption<Req>;
  /** Per-request limits; default the policies' own. */
  limit?: LimitOption<Req>;
}

/** A per-route rule. The first route that matches decides; requests matching none use the top-level rule. */
export interface RouteRule<Req> extends LimitRule<Req> {
  /** Names the route; keys are prefixed with it. Default `route-<index>`. */
  name?: string;
  /** Methods this route covers, e.g. ['GET', 'HEAD']. Default: all. */
  method?: string | readonly string[];
  /** An exact path, a prefix ending in `*` ('/api/*'), or a RegExp. Default: all. */
  path?: string | RegExp;
  /** Any other test. */
  match?: (req: Req, info: RequestInfo) => boolean;
}

/** What `onLimited` receives for each request over the limit (also in dry run, where it is not blocked). */
export interface LimitedEvent {
  readonly key: string;
  readonly decision: Decision;
  /** The route that decided, or undefined for the top-level rule. */
  readonly route: string | undefined;
  readonly dryRun: boolean;
  /** The Retry-After value sent (or that would have been sent). */
  readonly retryAfterSeconds: number;
}

/**
 * Who an allow or deny list names. A plain array lists addresses and CIDRs; `keys` lists request keys as the
 * `key` option produces them before sluice prefixes or hashes them: what a key function returns, or the
 * value of the `{ header }` (an API key as the client sent it).
 */
export interface AccessList {
  /** Client addresses and CIDRs, e.g. '203.0.113.7', '10.0.0.0/8', '2001:db8::/32'. */
  addresses?: readonly string[];
  /** Request keys, e.g. user ids or API keys. */
  keys?: readonly string[];
}

/** What handlers find on the request (`req.rateLimit`, `request.rateLimit`, `c.get('rateLimit')`). */
export interface RateLimitInfo {
  /** The key the request was counted under (route-prefixed; an API key hashed). */
  readonly key: string;
  /** The route that decided, or undefined for the top-level rule. */
  readonly route: string | undefined;
  readonly cost: number;
  /** The deciding policy's answer: limit, remaining, resetAfterMs, retryAfterMs, ... */
  readonly decision: Decision;
  /** The request is refused (false in dry run). */
  readonly limited: boolean;
  /** Why it is refused: 'limited' (over a limit), 'banned' (`blockFor`), 'denied' (on the deny list); undefined when it passes. */
  readonly refusal: Refusal | undefined;
}

export type Refusal = 'limited' | 'banned' | 'denied';

/**
 * Whether a request's response counts as a success for `skipFailedRequests`/`skipSuccessfulRequests`:
 * `req` is the framework's request, `res` its response (Express/node:http `res`, Fastify `reply`, Hono `c.res`).
 */
export type SuccessTest<Req, Res> = (req: Req, res: Res) => boolean | Promise<boolean>;

export interface RateLimitOptions<Req, Res = unknown> extends LimitRule<Req> {
  /** Per-route rules, tried in order before the top-level rule. */
  routes?: RouteRule<Req>[];
  /** Store for the limiters built from `policy`/`policies`. Default: one new MemoryStore shared by them. */
  store?: Store;
  /** Clock for the limiters built here (tests inject one). */
  clock?: Clock;
  /** Proxies (addresses, CIDRs, 'loopback', 'linklocal', 'uniquelocal') whose forwarding header is believed. */
  trustProxy?: string | readonly string[];
  /** Which header the trusted proxies set. Default 'x-forwarded-for'. Only that one is read. */
  proxyHeader?: 'x-forwarded-for' | 'forwarded';
  /** Prefix length IPv6 clients are grouped by; false for none. Default 64. */
  ipv6Subnet?: number | false;
  /** Header style. Default 'draft-8'. */
  headers?: HeaderStyle;
  /** Status of a limited response. Default 429. */
  status?: number;
  /** Status of a request denied by a ban (a policy's `blockFor`), e.g. 403. Default `status`. */
  banStatus?: number;
  /** Shadow mode: decide and report (`onLimited`) but never block, delay or send rate-limit headers. */
  dryRun?: boolean;
  /** Return true to let a request through unlimited and uncounted. */
  skip?: (req: Req, info: RequestInfo) => boolean | Promise<boolean>;
  /** Never limited nor counted: client addresses or CIDRs (an array), or `{ addresses, keys }`. */
  allow?: readonly string[] | AccessList;
  /** Refused with `denyStatus` before any counting: addresses or CIDRs (an array), or `{ addresses, keys }`. Wins over `allow`. */
  deny?: readonly string[] | AccessList;
  /** Status of a deny-listed request. Default 403. */
  denyStatus?: number;
  /** Give back the charge of a request whose response failed (status >= 400 by default), was aborted or errored. */
  skipFailedRequests?: boolean;
  /** Give back the charge of a request whose response succeeded (status < 400 by default). */
  skipSuccessfulRequests?: boolean;
  /** What counts as a success for the two options above. Default: the response status is below 400. */
  requestWasSuccessful?: SuccessTest<Req, Res>;
  /** Called for every request over the limit, before the response; in dry run too. */
  onLimited?: (req: Req, event: LimitedEvent) => void;
  /** Emit one-time configuration warnings (process 'warning' events). Default true. */
  warnings?: boolean;
}
