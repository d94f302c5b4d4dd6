/**
 * The one HTTP rate-limiting core every adapter drives: it validates the options once, derives the client
 * key, picks the route, decides, and says what to do (pass, hold, or refuse). Adapters only translate their
 * framework's request and response to it. Decisions on a synchronous store (the memory store) and with
 * synchronous callbacks never touch a Promise.
 */
import { show } from '../core/errors.js';
import { isPromise, then, type MaybePromise } from '../core/maybe-promise.js';
import { type CheckOptions, check } from '../core/option-checks.js';
import type { LimitOverride } from '../core/override.js';
import type { Decision } from '../core/types.js';
import { MemoryStore } from '../stores/memory.js';
import type { Store } from '../stores/store.js';
import { CidrSet, forwardedHops, resolveClient, xForwardedForHops } from './client-ip.js';
import { HEADER_STYLES, retryAfterSeconds, type HeaderStyle, type HeaderTarget } from './headers.js';
import type {
  AccessList,
  LimitedEvent,
  RateLimitInfo,
  RateLimitOptions,
  Refusal,
  RequestInfo,
  RouteRule,
  SuccessTest,
} from './options.js';
import { fail, Rule } from './rule.js';
import { forbiddenProblem, problemDetails, type ProblemDetails } from './problem.js';
import { warned, warnOnce } from './warnings.js';

/** A response status the middleware sends when it refuses: 400 to 599. */
const HTTP_ERROR: CheckOptions = { note: '(an HTTP error status)' };

export { isPromise } from '../core/maybe-promise.js';

const COMMON_OPTIONS = [
  'policy',
  'policies',
  'limiter',
  'key',
  'cost',
  'limit',
  'routes',
  'store',
  'clock',
  'trustProxy',
  'proxyHeader',
  'ipv6Subnet',
  'headers',
  'status',
  'banStatus',
  'dryRun',
  'skip',
  'allow',
  'onLimited',
  'warnings',
  'deny',
  'denyStatus',
  'skipFailedRequests',
  'skipSuccessfulRequests',
  'requestWasSuccessful',
];
const ROUTE_OPTIONS = new Set([
  'name',
  'method',
  'path',
  'match',
  'policy',
  'policies',
  'limiter',
  'key',
  'cost',
  'limit',
]);

/** What a custom `handler` receives: the headers are already set; it only sends the response. */
export interface LimitedResponse {
  readonly key: string;
  readonly decision: Decision;
  readonly route: string | undefined;
  /** The status to answer with: `status` (default 429), `banStatus` for a ban, or `denyStatus` (default 403) for a deny-listed request. */
  readonly status: number;
  /** 'limited' (over a limit), 'banned' (a `blockFor` ban) or 'denied' (on the deny list). */
  readonly refusal: Refusal;
  readonly retryAfterSeconds: number;
  /** The problem+json body sluice would send. */
  readonly problem: ProblemDetails;
}

/**
 * What to do with a request that was decided. A plain object, not a class instance: on node:http V8 did not
 * inline the class's constructor into the decision (its inlining budget was spent on the store's code),
 * while a literal is allocated inline.
 */
export interface Outcome<Req> extends RateLimitInfo {
  readonly rule: Rule<Req>;
  /** Hold it this long before passing it on (0 in dry run). */
  readonly delayMs: number;
  /** The status to refuse it with. */
  readonly status: number;
  /** Its charge was given back (a held client left, or its response is skipped): never twice. */
  refunded: boolean;
  /** The per-request limits it was decided with (the `limit` option), by policy name. */
  readonly limits: Readonly<Record<string, LimitOverride>> | undefined;
}

/** A deny-listed request's decision: no policy decided it, and no retry will pass. */
const DENIED: Decision = Object.freeze({
  allowed: false,
  limit: 0,
  remaining: 0,
  resetAfterMs: 0,
  retryAfterMs: 0,
  delayMs: 0,
  policy: '',
  leaseId: undefined,
  reason: 'deny-list',
  blocked: false,
});

/** The engine behind every adapter. `extra` lists the adapter's own option names. */
export class HttpRateLimiter<Req, Res = unknown> {
  readonly status: number;
  readonly banStatus: number;
  readonly denyStatus: number;
  /** Some response is to be judged after it is sent (`skipFailedRequests`/`skipSuccessfulRequests`). */
  readonly watchesResponses: boolean;
  readonly dryRun: boolean;
  readonly style: HeaderStyle;
  private readonly rules: Rule<Req>[] = [];
  private readonly fallback: Rule<Req> | undefined;
  private readonly trusted: CidrSet;
  private readonly proxyHeader: 'x-forwarded-for' | 'forwarded';
  private readonly allow: CidrSet | undefined;
  private readonly deny: CidrSet | undefined;
  private readonly allowKeys: ReadonlySet<string> | undefined;
  private readonly denyKeys: ReadonlySet<string> | undefined;
  private readonly skipFailed: boolean;
  private readonly skipSuccessful: boolean;
  private readonly success: SuccessTest<Req, Res>;
  private readonly skip: RateLimitOptions<Req>['skip'];
  private readonly onLimited: RateLimitOptions<Req>['onLimited'];
  private readonly warnings: boolean;

  /** `statusOf` reads the status of the adapter's response, for the default `requestWasSuccessful`. */
  constructor(
    options: RateLimitOptions<Req, Res>,
    adapter: string,
    extra: readonly string[] = [],
    statusOf?: (res: Res) => number,
  ) {
    if (typeof options !== 'object' || options === null)
      fail(`${adapter} options must be an object, got ${show(options)}`);
    const known = new Set([...COMMON_OPTIONS, ...extra]);
    for (const field of Object.keys(options)) {
      if (!known.has(field)) fail(`unknown ${adapter} option '${field}'; known options are ${[...known].join(', ')}`);
    }
    const style = options.headers ?? 'draft-8';
    this.style = check.oneOf(style, HEADER_STYLES, "'headers'");
    this.status = check.integerInRange(options.status ?? 429, 400, 599, "'status'", HTTP_ERROR);
    this.banStatus = check.integerInRange(options.banStatus ?? this.status, 400, 599, "'banStatus'", HTTP_ERROR);
    if (options.dryRun !== undefined) check.boolean(options.dryRun, "'dryRun'");
    this.dryRun = options.dryRun ?? false;
    const subnet = options.ipv6Subnet ?? 64;
    if (subnet !== false) check.integerInRange(subnet, 1, 128, "'ipv6Subnet'", { note: '(a prefix length) or false' });
    const trust = options.trustProxy ?? [];
    this.trusted = new CidrSet(typeof trust === 'string' ? [trust] : trust, 'trustProxy');
    this.proxyHeader = options.proxyHeader ?? 'x-forwarded-for';
    check.oneOf(this.proxyHeader, ['x-forwarded-for', 'forwarded'], "'proxyHeader'");
    const allow = accessList(options.allow, 'allow');
    const deny = accessList(options.deny, 'deny');
    this.allow = allow.addresses;
    this.allowKeys = allow.keys;
    this.deny = deny.addresses;
    this.denyKeys = deny.keys;
    this.denyStatus = check.integerInRange(options.denyStatus ?? 403, 400, 599, "'denyStatus'", HTTP_ERROR);
    for (const name of ['skipFailedRequests', 'skipSuccessfulRequests'] as const) {
      if (options[name] !== undefined) check.boolean(options[name], `'${name}'`);
    }
    this.skipFailed = options.skipFailedRequests === true;
    this.skipSuccessful = options.skipSuccessfulRequests === true;
    this.watchesResponses = this.skipFailed || this.skipSuccessful;
    const judge = options.requestWasSuccessful;
    if (judge !== undefined) check.function(judge, "'requestWasSuccessful'", { note: '(req, res) => boolean' });
    if (judge !== undefined && !this.watchesResponses)
      fail(`'requestWasSuccessful' has no effect without 'skipFailedRequests' or 'skipSuccessfulRequests'`);
    this.success = judge ?? ((_req, res) => (statusOf === undefined ? 200 : statusOf(res)) < 400);
    for (const name of ['skip', 'onLimited'] as const) {
      if (options[name] !== undefined) check.function(options[name], `'${name}'`);
    }
    this.skip = options.skip;
    this.onLimited = options.onLimited;
    if (options.warnings !== undefined) check.boolean(options.warnings, "'warnings'");
    this.warnings = options.warnings ?? true;

    let shared: Store | undefined = options.store;
    const store = () => (shared ??= new MemoryStore());
    const routes = options.routes ?? [];
    if (!Array.isArray(routes)) fail(`'routes' must be an array of route rules, got ${show(routes)}`);
    const names = new Set<string>();
    routes.forEach((r, i) => {
      if (typeof r !== 'object' || r === null) fail(`'routes'[${i}] must be an object, got ${show(r)}`);
      for (const field of Object.keys(r)) {
        if (!ROUTE_OPTIONS.has(field))
          fail(`'routes'[${i}]: unknown field '${field}'; known fields are ${[...ROUTE_OPTIONS].join(', ')}`);
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
      for (const f of ['key', 'cost', 'limit'] as const) {
        if (options[f] !== undefined)
          fail(
            `'${f}' at the top level needs a top-level 'policy', 'policies' or 'limiter'; put it in each route instead`,
          );
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
    return resolveClient(
      remote,
      this.proxyHeader === 'forwarded' ? forwardedHops(value) : xForwardedForHops(value),
      this.trusted,
    );
  }

  /**
   * Decides a request. Returns undefined when it is not limited at all (skipped, allow-listed, or matching
   * no rule), else the Outcome. Synchronous unless a store or callback is asynchronous.
   */
  check(req: Req, info: RequestInfo): MaybePromise<Outcome<Req> | undefined> {
    info.ip = this.clientIp(info);
    if (info.ip !== '') {
      if (this.deny?.has(info.ip)) return this.denied(this.fallback ?? this.rules[0]!, undefined);
      if (this.allow?.has(info.ip)) return undefined;
    }
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
    if (this.allowKeys !== undefined || this.denyKeys !== undefined) {
      return then(rule.identity(req, info), (id) => {
        if (id !== undefined) {
          if (this.denyKeys?.has(id) === true) return this.denied(rule, rule.route);
          if (this.allowKeys?.has(id) === true) return undefined;
        }
        return this.withKey(req, info, rule, rule.keyFrom(id, info));
      });
    }
    const key = rule.keyOf(req, info);
    if (isPromise(key)) return key.then((k) => this.withKey(req, info, rule, k));
    return this.withKey(req, info, rule, key);
  }

  private withKey(req: Req, info: RequestInfo, rule: Rule<Req>, key: string): MaybePromise<Outcome<Req>> {
    const cost = rule.costFor(req, info);
    if (isPromise(cost)) return cost.then((c) => this.withCost(req, info, rule, key, c));
    return this.withCost(req, info, rule, key, cost);
  }

  private withCost(
    req: Req,
    info: RequestInfo,
    rule: Rule<Req>,
    key: string,
    cost: number,
  ): MaybePromise<Outcome<Req>> {
    if (rule.hasLimit) {
      const limits = rule.limitsFor(req, info);
      if (isPromise(limits)) return limits.then((l) => this.withLimits(req, rule, key, cost, l));
      return this.withLimits(req, rule, key, cost, limits);
    }
    if (rule.sync)
      return this.outcome(
        req,
        rule,
        key,
        cost,
        cost === 1 ? rule.limiter.limitSync(key) : rule.limiter.limitSync(key, { cost }),
        undefined,
      );
    return rule.limiter.limit(key, { cost }).then((d) => this.outcome(req, rule, key, cost, d, undefined));
  }

  private withLimits(
    req: Req,
    rule: Rule<Req>,
    key: string,
    cost: number,
    limits: Readonly<Record<string, LimitOverride>> | undefined,
  ): MaybePromise<Outcome<Req>> {
    const options = limits === undefined ? { cost } : { cost, limits };
    if (rule.sync) return this.outcome(req, rule, key, cost, rule.limiter.limitSync(key, options), limits);
    return rule.limiter.limit(key, options).then((d) => this.outcome(req, rule, key, cost, d, limits));
  }

  private outcome(
    req: Req,
    rule: Rule<Req>,
    key: string,
    cost: number,
    d: Decision,
    limits: Readonly<Record<string, LimitOverride>> | undefined,
  ): Outcome<Req> {
    if (!d.allowed && this.onLimited !== undefined) {
      const event: LimitedEvent = {
        key,
        decision: d,
        route: rule.route,
        dryRun: this.dryRun,
        retryAfterSeconds: retryAfterSeconds(d),
      };
      this.onLimited(req, event);
    }
    const limited = !this.dryRun && !d.allowed;
    const delayMs = this.dryRun || !d.allowed ? 0 : d.delayMs;
    const banned = limited && d.blocked;
    return {
      rule,
      key,
      route: rule.route,
      cost,
      decision: d,
      limited,
      refusal: limited ? (banned ? 'banned' : 'limited') : undefined,
      delayMs,
      status: banned ? this.banStatus : this.status,
      refunded: false,
      limits,
    };
  }

  /** A deny-listed request: refused before anything is counted (passed, uncounted, in dry run). */
  private denied(rule: Rule<Req>, route: string | undefined): Outcome<Req> | undefined {
    if (this.dryRun) return undefined;
    return {
      rule,
      key: '',
      route,
      cost: 0,
      decision: DENIED,
      limited: true,
      refusal: 'denied',
      delayMs: 0,
      status: this.denyStatus,
      refunded: true,
      limits: undefined,
    };
  }

  /** Writes the rate-limit headers (none in dry run), plus Retry-After when the request is refused. */
  writeHeaders(o: Outcome<Req>, to: HeaderTarget): void {
    if (this.dryRun || o.refusal === 'denied') return;
    o.rule.headers.write(o.decision, to, undefined, o.limits);
    if (o.limited) {
      const value = `${retryAfterSeconds(o.decision)}`;
      if (to.setTrustedHeader !== undefined) to.setTrustedHeader('retry-after', value);
      else to.setHeader('retry-after', value);
    }
  }

  /** The problem+json body of a refused request. */
  problem(o: Outcome<Req>): ProblemDetails {
    return o.refusal === 'denied' ? forbiddenProblem(o.status) : problemDetails(o.decision, o.status);
  }

  /**
   * A held request whose client went away: give back its charge, so that it frees its place in the queue.
   * A failed refund is swallowed: the charge then simply ages out. (Its lease is ended by `release`.)
   */
  refund(o: Outcome<Req>): void {
    if (o.refunded) return;
    o.refunded = true;
    if (o.cost > 0) o.rule.limiter.reward(o.key, o.cost).catch(() => {});
  }

  /**
   * A passed request's response is over: `completed` false when it was aborted or errored (a failure).
   * Refunds the charge when `skipFailedRequests` or `skipSuccessfulRequests` skips such a response. A
   * `requestWasSuccessful` that throws or rejects leaves the charge as it is.
   */
  responded(o: Outcome<Req>, req: Req, res: Res, completed: boolean): void {
    if (o.refunded) return;
    if (!completed) {
      if (this.skipFailed) this.refund(o);
      return;
    }
    let ok: MaybePromise<boolean>;
    try {
      ok = this.success(req, res);
    } catch {
      return;
    }
    if (isPromise(ok))
      ok.then(
        (s) => this.settle(o, s),
        () => {},
      );
    else this.settle(o, ok);
  }

  private settle(o: Outcome<Req>, success: boolean): void {
    if (success ? this.skipSuccessful : this.skipFailed) this.refund(o);
  }

  /** What a custom `handler` for a refused request receives. */
  limitedResponse(o: Outcome<Req>): LimitedResponse {
    return {
      key: o.key,
      decision: o.decision,
      route: o.route,
      status: o.status,
      refusal: o.refusal ?? 'limited',
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

/** An `allow` or `deny` option, compiled: the address set and the key set, each undefined when empty. */
function accessList(
  v: readonly string[] | AccessList | undefined,
  field: string,
): { addresses: CidrSet | undefined; keys: ReadonlySet<string> | undefined } {
  if (v === undefined) return { addresses: undefined, keys: undefined };
  if (Array.isArray(v)) return { addresses: v.length === 0 ? undefined : new CidrSet(v, field), keys: undefined };
  if (typeof v !== 'object' || v === null)
    fail(`'${field}' must be an array of addresses and CIDRs, or { addresses, keys }, got ${show(v)}`);
  const list = v as AccessList;
  for (const f of Object.keys(list)) {
    if (f !== 'addresses' && f !== 'keys') fail(`'${field}': unknown field '${f}'; known fields are addresses, keys`);
  }
  const keys = list.keys;
  if (keys !== undefined && (!Array.isArray(keys) || keys.some((k) => typeof k !== 'string' || k === ''))) {
    fail(`'${field}.keys' must be an array of non-empty strings, got ${show(keys)}`);
  }
  const addresses =
    list.addresses === undefined || list.addresses.length === 0
      ? undefined
      : new CidrSet(list.addresses, `${field}.addresses`);
  return { addresses, keys: keys === undefined || keys.length === 0 ? undefined : new Set(keys) };
}

function pick<Req, Res>(o: RateLimitOptions<Req, Res>): RouteRule<Req> {
  const r: RouteRule<Req> = {};
  if (o.policy !== undefined) r.policy = o.policy;
  if (o.policies !== undefined) r.policies = o.policies;
  if (o.limiter !== undefined) r.limiter = o.limiter;
  if (o.key !== undefined) r.key = o.key;
  if (o.cost !== undefined) r.cost = o.cost;
  if (o.limit !== undefined) r.limit = o.limit;
  return r;
}
