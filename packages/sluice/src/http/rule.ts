/** A compiled rule (the top level, or one route): its limiter, key, cost, route test and header texts. */
import { brandOf, foreignVersion, SLUICE_VERSION } from '../core/brand.js';
import { SluiceError, show } from '../core/errors.js';
import { check } from '../core/option-checks.js';
import { sha256 } from '../crypto/sha256.js';
import { encodeBase64url } from '../crypto/base64url.js';
import { utf8 } from '../runtime.js';
import { Limiter } from '../limiter.js';
import type { Store } from '../stores/store.js';
import { ipKey } from './client-ip.js';
import { HeaderRenderer, type HeaderStyle } from './headers.js';
import { then, type MaybePromise } from '../core/maybe-promise.js';
import type { LimitOverride } from '../core/override.js';
import type {
  CostOption,
  KeyOption,
  LimitOption,
  LimitRule,
  RateLimitOptions,
  RequestInfo,
  RouteRule,
} from './options.js';

export function fail(message: string): never {
  throw new SluiceError('ERR_SLUICE_INVALID_OPTION', message);
}

/** A compiled rule: one limiter with its key, cost and headers. */
export class Rule<Req> {
  readonly limiter: Limiter;
  /** True when the limiter's store answers synchronously. */
  readonly sync: boolean;
  readonly headers: HeaderRenderer;
  private readonly prefix: string;
  private readonly keyFn:
    | ((req: Req, info: RequestInfo) => string | undefined | Promise<string | undefined>)
    | undefined;
  private readonly keyHeader: string | undefined;
  private readonly costOf: CostOption<Req>;
  /** Whether the rule has a `limit` option (requests are decided with per-call limits). */
  readonly hasLimit: boolean;
  private readonly limitOf: LimitOption<Req> | undefined;
  private readonly methods: ReadonlySet<string> | undefined;
  private readonly pathTest: ((path: string) => boolean) | undefined;
  private readonly match: ((req: Req, info: RequestInfo) => boolean) | undefined;

  constructor(
    readonly route: string | undefined,
    rule: RouteRule<Req>,
    where: string,
    style: HeaderStyle,
    store: () => Store,
    clock: RateLimitOptions<Req>['clock'],
    private readonly subnet: number | false,
  ) {
    this.limiter = buildLimiter(rule, where, store, clock);
    this.sync = probeSync(this.limiter);
    this.headers = new HeaderRenderer(style, this.limiter.policies);
    this.prefix = route === undefined ? '' : `${route}:`;
    const key: KeyOption<Req> | undefined = rule.key;
    if (typeof key === 'function') this.keyFn = key;
    else if (key !== undefined && key !== 'ip') {
      if (typeof key !== 'object' || key === null || typeof key.header !== 'string' || key.header.length === 0) {
        fail(
          `${where}'key' must be 'ip', { header: 'x-api-key' } or a function (req, info) => string, got ${show(key)}`,
        );
      }
      this.keyHeader = key.header.toLowerCase();
    }
    const cost = rule.cost ?? 1;
    if (typeof cost !== 'function')
      check.nonNegativeInteger(cost, `${where}'cost'`, { note: 'or a function returning one' });
    this.costOf = cost;
    const limit = rule.limit;
    // A fixed limit is checked now: a peek with it fails as its first request would.
    if (limit !== undefined && typeof limit !== 'function')
      probeLimits(this.limiter, this.checkedLimits(limit, where)!, where);
    this.hasLimit = limit !== undefined;
    this.limitOf = limit;
    if (rule.method !== undefined) {
      const list = typeof rule.method === 'string' ? [rule.method] : rule.method;
      if (!Array.isArray(list) || list.length === 0 || list.some((m) => typeof m !== 'string' || m.length === 0)) {
        fail(`${where}'method' must be a method name or a non-empty array of them, got ${show(rule.method)}`);
      }
      this.methods = new Set(list.map((m) => m.toUpperCase()));
    }
    const path = rule.path;
    if (path instanceof RegExp) this.pathTest = (p) => path.test(p);
    else if (typeof path === 'string' && path.startsWith('/')) {
      this.pathTest = path.endsWith('*') ? (p) => p.startsWith(path.slice(0, -1)) : (p) => p === path;
    } else if (path !== undefined) fail(`${where}'path' must start with '/' or be a RegExp, got ${show(path)}`);
    if (rule.match !== undefined) check.function(rule.match, `${where}'match'`);
    this.match = rule.match;
  }

  /** The decision attached to a request holds its Rule: `JSON.stringify(req.rateLimit)` leaves it out. */
  toJSON(): undefined {
    return undefined;
  }

  matches(req: Req, info: RequestInfo): boolean {
    return (
      (this.methods === undefined || this.methods.has(info.method)) &&
      (this.pathTest === undefined || this.pathTest(info.path)) &&
      (this.match === undefined || this.match(req, info))
    );
  }

  keyOf(req: Req, info: RequestInfo): MaybePromise<string> {
    if (this.keyFn !== undefined) return then(this.identity(req, info), (id) => this.keyFrom(id, info));
    return this.keyFrom(this.identity(req, info) as string | undefined, info);
  }

  /**
   * The request's identity as the `key` option gives it, before any prefix or hash: what the key function
   * returned, or the key header's value; undefined when the request is keyed by its address.
   */
  identity(req: Req, info: RequestInfo): MaybePromise<string | undefined> {
    if (this.keyFn !== undefined) {
      return then(this.keyFn(req, info), (k) => {
        if (k === undefined || k === '') return undefined;
        if (typeof k !== 'string') {
          throw new SluiceError(
            'ERR_SLUICE_INVALID_KEY',
            `the 'key' function must return a string or undefined, got ${show(k)}`,
          );
        }
        return k;
      });
    }
    if (this.keyHeader !== undefined) {
      const value = info.header(this.keyHeader);
      if (value !== undefined && value !== '') return value;
    }
    return undefined;
  }

  /** The stored key of an identity (see `identity`). */
  keyFrom(id: string | undefined, info: RequestInfo): string {
    if (id === undefined) return this.prefix + this.ipKeyOf(info);
    // A secret never lands in the store, only a digest of it.
    if (this.keyFn === undefined) return `${this.prefix}h:${encodeBase64url(sha256(utf8(id))).slice(0, 22)}`;
    return this.prefix + id;
  }

  private ipKeyOf(info: RequestInfo): string {
    if (info.ip === '') {
      throw new SluiceError(
        'ERR_SLUICE_NO_CLIENT_ADDRESS',
        `the request has no remote address (its socket is already closed, the server listens on a Unix socket, or the runtime does not expose one), so it cannot be keyed by IP; give a 'key' function${this.route === undefined ? '' : ` for route ${show(this.route)}`}`,
      );
    }
    return ipKey(info.ip, this.subnet);
  }

  /** The per-request limits of `limit`, by policy name; undefined for the policies' own. */
  limitsFor(req: Req, info: RequestInfo): MaybePromise<Readonly<Record<string, LimitOverride>> | undefined> {
    const l = this.limitOf;
    if (typeof l !== 'function') return this.checkedLimits(l, '');
    return then(l(req, info), (v) => this.checkedLimits(v, ''));
  }

  /** A `limit` value as the limiter takes it: a number names the one policy. */
  private checkedLimits(v: unknown, where: string): Readonly<Record<string, LimitOverride>> | undefined {
    if (v === undefined) return undefined;
    if (typeof v === 'number') {
      if (this.limiter.policies.length !== 1) {
        throw new SluiceError(
          'ERR_SLUICE_INVALID_OPTION',
          `${where}'limit' is a number but the rule has ${this.limiter.policies.length} policies; give limits by policy name, such as { ${show(this.limiter.policies[0]!.name)}: ${v} }`,
        );
      }
      return { [this.limiter.policies[0]!.name]: v };
    }
    if (typeof v !== 'object' || v === null || Array.isArray(v)) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `${where}'limit' must be a number, limits by policy name, or a function returning either, got ${show(v)}`,
      );
    }
    return v as Readonly<Record<string, LimitOverride>>;
  }

  costFor(req: Req, info: RequestInfo): MaybePromise<number> {
    return typeof this.costOf === 'number' ? this.costOf : this.costOf(req, info);
  }
}

function buildLimiter<Req>(
  rule: LimitRule<Req>,
  where: string,
  store: () => Store,
  clock: RateLimitOptions<Req>['clock'],
): Limiter {
  const given = [rule.policy, rule.policies, rule.limiter].filter((x) => x !== undefined).length;
  if (given !== 1) fail(`${where}give exactly one of 'policy', 'policies' or 'limiter'`);
  if (rule.limiter !== undefined) {
    if (!(rule.limiter instanceof Limiter)) {
      const other = foreignVersion(rule.limiter, brandOf('Limiter'));
      // A Limiter of this release from the other module format passes instanceof (core/brand.ts); one of another release cannot.
      if (other !== undefined) {
        fail(
          `${where}'limiter' is a Limiter from another copy of sluice (${other}; this one is ${SLUICE_VERSION}): the app loads two releases of sluice (npm ls sluice shows them); install one, and load it with require() or import, not both`,
        );
      }
      fail(
        `${where}'limiter' must be a sluice Limiter (new Limiter({ policy, store }) from 'sluice'), got ${show(rule.limiter)}`,
      );
    }
    return rule.limiter;
  }
  const base = rule.policy !== undefined ? { policy: rule.policy } : { policies: rule.policies! };
  return new Limiter({ ...base, store: store(), ...(clock === undefined ? {} : { clock }) });
}

/** Validates fixed per-call limits up front: a peek (cost 0) with them, which changes no state. */
function probeLimits(limiter: Limiter, limits: Readonly<Record<string, LimitOverride>>, where: string): void {
  try {
    // An asynchronous store is not called at construction: its limits are checked on each request.
    if (limiter.table.sync) limiter.limitSync('\u0000sluice-probe', { cost: 0, limits });
  } catch (e) {
    if (e instanceof SluiceError)
      throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `${where}${e.message.replace(/^\[sluice\] /, '')}`);
    throw e;
  }
}

/** Whether the limiter decides synchronously: a peek (cost 0, no state change) through limitSync. */
function probeSync(limiter: Limiter): boolean {
  try {
    limiter.limitSync('\u0000sluice-probe', { cost: 0 });
    return true;
  } catch (e) {
    if (e instanceof SluiceError && e.code === 'ERR_SLUICE_SYNC_UNSUPPORTED') return false;
    throw e;
  }
}
