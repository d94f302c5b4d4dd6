/** The options every HTTP adapter takes, and the request view adapters hand to the shared engine. */
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

export interface RateLimitOptions<Req> extends LimitRule<Req> {
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
  /** Shadow mode: decide and report (`onLimited`) but never block, delay or send rate-limit headers. */
  dryRun?: boolean;
  /** Return true to let a request through unlimited and uncounted. */
  skip?: (req: Req, info: RequestInfo) => boolean | Promise<boolean>;
  /** Client addresses or CIDRs never limited (an allow list). */
  allow?: readonly string[];
  /** Called for every request over the limit, before the response; in dry run too. */
  onLimited?: (req: Req, event: LimitedEvent) => void;
  /** Emit one-time configuration warnings (process 'warning' events). Default true. */
  warnings?: boolean;
}
