/**
 * The one HTTP rate-limiting core every adapter drives: it validates the options once, derives the client
 * key, picks the route, decides, and says what to do (pass, hold, or refuse). Adapters only translate their
 * framework's request and response to it. Decisions on a synchronous store (the memory store) and with
 * synchronous callbacks never touch a Promise.
 */
import { show } from '../core/errors.js';
import { isPromise, then, type MaybePromise } from '../core/maybe-promise.js';
import type { Decision } from '../core/types.js';
import { MemoryStore } from '../stores/memory.js';
import type { Store } from '../stores/store.js';
import { CidrSet, forwardedHops, resolveClient, xForwardedForHops } from './client-ip.js';
import { HEADER_STYLES, retryAfterSeconds, type HeaderStyle, type HeaderTarget } from './headers.js';
import type { LimitedEvent, RateLimitOptions, RequestInfo, RouteRule } from './options.js';
import { fail, Rule } from './rule.js';
import { problemDetails, type ProblemDetails } from './problem.js';
import { warned, warnOnce } from './warnings.js';

export { isPromise } from '../core/maybe-promise.js';

const COMMON_OPTIONS = [
  'policy', 'policies', 'limiter', 'key', 'cost', 'routes', 'store', 'clock', 'trustProxy', 'proxyHeader',
  'ipv6Subnet', 'headers', 'status', 'dryRun', 'skip', 'allow', 'onLimited', 'warnings',
];
const ROUTE_OPTIONS = new Set(['name', 'method', 'path', 'match', 'policy', 'policies', 'limiter', 'key', 'cost']);


/** What a custom `handler` receives: the headers are already set; it only sends the response. */
export interface LimitedResponse {
  readonly key: string;
  readonly decision: Decision;
  readonly route: string | undefined;
  /** The configured status (default 429). */
  readonly status: number;
  readonly retryAfterSeconds: number;
  /** The problem+json body sluice would send. */
  readonly problem: ProblemDetails;
}

/**
 * What to do with a request that was decided. A plain object, not a class instance: on node:http V8 did not
 * inline the class's constructor into the decision (its inlining budget was spent on the store's code), and
 * the call cost ~300 instructions a request, where a literal is allocated inline (bench/cg-profile.mjs).
 */
export interface Outcome<Req> {
  readonly rule: Rule<Req>;
  readonly key: string;
  readonly cost: number;
  readonly decision: Decision;
  /** Refuse it (false in dry run). */
  readonly limited: boolean;
  /** Hold it this long before passing it on (0 in dry run). */
  readonly delayMs: number;
}

/** The engine behind every adapter. `extra` lists the adapter's own option names. */
export class HttpRateLimiter<Req> {
  readonly status: number;
  readonly dryRun: boolean;
  readonly style: HeaderStyle;
  private readonly rules: Rule<Req>[] = [];
  private readonly fallback: Rule<Req> | undefined;
  private readonly trusted: CidrSet;
  private readonly proxyHeader: 'x-forwarded-for' | 'forwarded';
  private readonly allow: CidrSet | undefined;
  private readonly skip: RateLimitOptions<Req>['skip'];
  private readonly onLimited: RateLimitOptions<Req>['onLimited'];
  private readonly warnings: boolean;

  constructor(options: RateLimitOptions<Req>, adapter: string, extra: readonly string[] = []) {
    if (typeof options !== 'object' || options === null) fail(`${adapter} options must be an object, got ${show(options)}`);
    const known = new Set([...COMMON_OPTIONS, ...extra]);
    for (const field of Object.keys(options)) {
      if (!known.has(field)) fail(`unknown ${adapter} option '${field}'; known options are ${[...known].join(', ')}`);
    }
    const style = options.headers ?? 'draft-8';
    if (!HEADER_STYLES.includes(style)) fail(`'headers' must be one of ${HEADER_STYLES.map((s) => `'${s}'`).join(', ')}, got ${show(style)}`);
    this.style = style;
    const status = options.status ?? 429;
    if (!Number.isInteger(status) || status < 400 || status > 599) fail(`'status' must be an HTTP error status (400-599), got ${show(status)}`);
    this.status = status;
    if (options.dryRun !== undefined && typeof options.dryRun !== 'boolean') fail(`'dryRun' must be true or false, got ${show(options.dryRun)}`);
    this.dryRun = options.dryRun ?? false;
    const subnet = options.ipv6Subnet ?? 64;
    if (subnet !== false && (!Number.isInteger(subnet) || subnet < 1 || subnet > 128)) {
      fail(`'ipv6Subnet' must be an integer prefix length from 1 to 128, or false, got ${show(subnet)}`);
    }
    const trust = options.trustProxy ?? [];
    this.trusted = new CidrSet(typeof trust === 'string' ? [trust] : trust, 'trustProxy');
    this.proxyHeader = options.proxyHeader ?? 'x-forwarded-for';
    if (this.proxyHeader !== 'x-forwarded-for' && this.proxyHeader !== 'forwarded') {
      fail(`'proxyHeader' must be 'x-forwarded-for' or 'forwarded', got ${show(options.proxyHeader)}`);
    }
    this.allow = options.allow === undefined ? undefined : new CidrSet(options.allow, 'allow');
    for (const name of ['skip', 'onLimited'] as const) {
      if (options[name] !== undefined && typeof options[name] !== 'function') fail(`'${name}' must be a function, got ${show(options[name])}`);
    }
    this.skip = options.skip;
    this.onLimited = options.onLimited;
    if (options.warnings !== undefined && typeof options.warnings !== 'boolean') fail(`'warnings' must be true or false, got ${show(options.warnings)}`);
    this.warnings = options.warnings ?? true;

    let shared: Store | undefined = options.store;
    const store = () => (shared ??= new MemoryStore());
    const routes = options.routes ?? [];
    if (!Array.isArray(routes)) fail(`'routes' must be an array of route rules, got ${show(routes)}`);
    const names = new Set<string>();
    routes.forEach((r, i) => {
      if (typeof r !== 'object' || r === null) fail(`'routes'[${i}] must be an object, got ${show(r)}`);
      for (const field of Object.keys(r)) {
        if (!ROUTE_OPTIONS.has(field)) fail(`'routes'[${i}]: unknown field '${field}'; known fields are ${[...ROUTE_OPTIONS].join(', ')}`);
      }
      const name = r.name ?? `route-${i}`;
      if (typeof name !== 'string' || name.length === 0 || names.has(name)) {
        fail(`'routes'[${i}].name must be a unique non-empty string, got ${show(r.name)}`);
      }
      names.add(name);
      this.rules.push(new Rule(name, r, `route ${show(name)}: `, style, store, options.clock, subnet));
    });
    const hasTop = options.policy !== undefined || options.policies !== undefined || options.limiter !== undefined;
    if (hasTop || routes.length === 0) {
      this.fallback = new Rule(undefined, pick(options), '', style, store, options.clock, subnet);
    } else {
      for (const f of ['key', 'cost'] as const) {
        if (options[f] !== undefined) fail(`'${f}' at the top level needs a top-level 'policy', 'policies' or 'limiter'; put it in each route instead`);
      }
    }
  }

  /**
   * The client address of a request: the peer, or the forwarded hop the trusted proxies vouch for; '' when
   * the request has no peer address (a closed socket, a Unix socket), which is an error only if the key needs it.
   */
  clientIp(info: RequestInfo): string {
    const remote = info.remoteAddress;
    if (remote === undefined || remote === '') return '';
    if (this.trusted.size === 0) {
      if (this.warnings && !warned('WRN_SLUICE_FORWARDED_HEADER_IGNORED') && hasForwarding(info)) {
        warnOnce(
          'WRN_SLUICE_FORWARDED_HEADER_IGNORED',
          `a request carried X-Forwarded-For or Forwarded, but 'trustProxy' is empty, so the header was ignored and clients are keyed by the socket address (${remote}). If a proxy sits in front of this server, list its addresses in 'trustProxy'.`,
        );
      }
      return remote;
    }
    const value = info.header(this.proxyHeader);
    if (value === undefined) return resolveClient(remote, [], this.trusted);
    return resolveClient(remote, this.proxyHeader === 'forwarded' ? forwardedHops(value) : xForwardedForHops(value), this.trusted);
  }

  /**
   * Decides a request. Returns undefined when it is not limited at all (skipped, allow-listed, or matching
   * no rule), else the Outcome. Synchronous unless a store or callback is asynchronous.
   */
  check(req: Req, info: RequestInfo): MaybePromise<Outcome<Req> | undefined> {
    info.ip = this.clientIp(info);
    if (this.allow !== undefined && info.ip !== '' && this.allow.has(info.ip)) return undefined;
    if (this.skip !== undefined) {
      return then(this.skip(req, info), (skipped) => (skipped ? undefined : this.decide(req, info)));
    }
    return this.decide(req, info);
  }

  // decide -> withKey -> withCost: each step continues synchronously unless its input is a Promise, so a
  // memory-store decision with plain callbacks allocates no closure and no Promise.
  private decide(req: Req, info: RequestInfo): MaybePromise<Outcome<Req> | undefined> {
    let rule = this.fallback;
    for (const r of this.rules) {
      if (r.matches(req, info)) {
        rule = r;
        break;
      }
    }
    if (rule === undefined) return undefined;
    const key = rule.keyOf(req, info);
    if (isPromise(key)) return key.then((k) => this.withKey(req, info, rule, k));
    return this.withKey(req, info, rule, key);
  }

  private withKey(req: Req, info: RequestInfo, rule: Rule<Req>, key: string): MaybePromise<Outcome<Req>> {
    const cost = rule.costFor(req, info);
    if (isPromise(cost)) return cost.then((c) => this.withCost(req, rule, key, c));
    return this.withCost(req, rule, key, cost);
  }

  private withCost(req: Req, rule: Rule<Req>, key: string, cost: number): MaybePromise<Outcome<Req>> {
    if (rule.sync) return this.outcome(req, rule, key, cost, cost === 1 ? rule.limiter.limitSync(key) : rule.limiter.limitSync(key, { cost }));
    return rule.limiter.limit(key, { cost }).then((d) => this.outcome(req, rule, key, cost, d));
  }

  private outcome(req: Req, rule: Rule<Req>, key: string, cost: number, d: Decision): Outcome<Req> {
    if (!d.allowed && this.onLimited !== undefined) {
      const event: LimitedEvent = { key, decision: d, route: rule.route, dryRun: this.dryRun, retryAfterSeconds: retryAfterSeconds(d) };
      this.onLimited(req, event);
    }
    const limited = !this.dryRun && !d.allowed;
    const delayMs = this.dryRun || !d.allowed ? 0 : d.delayMs;
    return { rule, key, cost, decision: d, limited, delayMs };
  }

  /** Writes the rate-limit headers (none in dry run), plus Retry-After when the request is refused. */
  writeHeaders(o: Outcome<Req>, to: HeaderTarget): void {
    if (this.dryRun) return;
    o.rule.headers.write(o.decision, to);
    if (o.limited) {
      const value = `${retryAfterSeconds(o.decision)}`;
      if (to.setTrustedHeader !== undefined) to.setTrustedHeader('retry-after', value);
      else to.setHeader('retry-after', value);
    }
  }

  /** The problem+json body of a refused request. */
  problem(o: Outcome<Req>): ProblemDetails {
    return problemDetails(o.decision, this.status);
  }

  /**
   * A held request whose client went away: give back its charge, so that it frees its place in the queue.
   * A failed refund is swallowed: the charge then simply ages out. (Its lease is ended by `release`.)
   */
  refund(o: Outcome<Req>): void {
    if (o.cost > 0) o.rule.limiter.reward(o.key, o.cost).catch(() => {});
  }

  /** What a custom `handler` for a refused request receives. */
  limitedResponse(o: Outcome<Req>): LimitedResponse {
    return {
      key: o.key,
      decision: o.decision,
      route: o.rule.route,
      status: this.status,
      retryAfterSeconds: retryAfterSeconds(o.decision),
      problem: this.problem(o),
    };
  }

  /** Ends a concurrency lease (no-op without one). A failed release is left to the lease timeout. */
  release(o: Outcome<Req>): void {
    const lease = o.decision.leaseId;
    if (lease !== undefined) o.rule.limiter.release(o.key, lease).catch(() => {});
  }
}

function hasForwarding(info: RequestInfo): boolean {
  if (info.has !== undefined) return info.has('x-forwarded-for') || info.has('forwarded');
  return info.header('x-forwarded-for') !== undefined || info.header('forwarded') !== undefined;
}

function pick<Req>(o: RateLimitOptions<Req>): RouteRule<Req> {
  const r: RouteRule<Req> = {};
  if (o.policy !== undefined) r.policy = o.policy;
  if (o.policies !== undefined) r.policies = o.policies;
  if (o.limiter !== undefined) r.limiter = o.limiter;
  if (o.key !== undefined) r.key = o.key;
  if (o.cost !== undefined) r.cost = o.cost;
  return r;
}
