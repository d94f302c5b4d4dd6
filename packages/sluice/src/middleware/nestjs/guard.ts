/**
 * The guard of sluice/nestjs: it finds the rule of the route (its own, its controller's, or the module's),
 * decides with the shared HTTP engine, writes the headers, and passes, holds, or refuses with a
 * RateLimitException. One RateLimitCore per application holds the engines, so that every guard instance
 * (APP_GUARD, or `@UseGuards(RateLimitGuard)` in any module) decides on the same state.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Inject, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { HttpRateLimiter } from '../../http/engine.js';
import { fail } from '../../http/rule.js';
import type { HeaderTarget } from '../../http/headers.js';
import { NodeHeaders, NodeRequestInfo, passedNode, watchNode } from '../../http/node.js';
import type { LimitRule, RateLimitOptions } from '../../http/options.js';
import { Limiter } from '../../limiter.js';
import { MemoryStore } from '../../stores/memory.js';
import type { Store } from '../../stores/store.js';
import { RATE_LIMIT_RULE, SKIP_RATE_LIMIT } from './decorators.js';
import { RateLimitException } from './exception.js';
import type { NestRateLimitOptions, NestRequest, NestResponse } from './options.js';

export const RATE_LIMIT_CORE = 'sluice:rate-limit-core';

type Engine = HttpRateLimiter<NestRequest, NestResponse>;
// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
type Handler = Function;
const LIMIT_FIELDS = ['policy', 'policies', 'limiter', 'key', 'cost', 'limit'] as const;
const ADAPTER = 'RateLimitModule';
const statusOf = (res: NestResponse) => (res as { statusCode: number }).statusCode;

/** The engines of one application: the module's, and one per route whose rule differs from it. */
export class RateLimitCore {
  readonly root: Engine;
  private readonly common: RateLimitOptions<NestRequest, NestResponse>;
  private readonly store: Store;
  /** By controller, then handler: an inherited handler is one function in two controllers. */
  private readonly engines = new Map<Handler, Map<Handler, Engine>>();
  /** Policies a decorator gave, by the class or handler that gave them: one Limiter each. */
  private readonly limiters = new Map<Handler, Limiter>();
  /** The module's own policy, key, cost and limit: what a rule without them falls back to. */
  private readonly top: LimitRule<NestRequest> = {};
  private topLimiter: Limiter | undefined;

  constructor(options: NestRateLimitOptions) {
    const { global: _global, ...rest } = options;
    this.store = rest.store ?? new MemoryStore();
    const common: Record<string, unknown> = { ...rest, store: this.store };
    for (const f of [...LIMIT_FIELDS, 'routes'] as const) delete common[f];
    this.common = common;
    for (const f of LIMIT_FIELDS) if (rest[f] !== undefined) (this.top as Record<string, unknown>)[f] = rest[f];
    // The module's policies get one Limiter, which routes whose rule only sets a key, cost or limit share.
    const root: NestRateLimitOptions = { ...rest, store: this.store };
    if (rest.limiter === undefined && (rest.policy !== undefined || rest.policies !== undefined)) {
      this.topLimiter = this.makeLimiter(this.top);
      delete root.policy;
      delete root.policies;
      root.limiter = this.topLimiter;
    }
    this.root = new HttpRateLimiter<NestRequest, NestResponse>(root, ADAPTER, [], statusOf);
  }

  /** The engine for a route: the module's unless the route or its controller has a @RateLimit rule. */
  engineFor(cls: Handler, handler: Handler, reflector: Reflector): Engine {
    let byHandler = this.engines.get(cls);
    if (byHandler === undefined) this.engines.set(cls, (byHandler = new Map()));
    let engine = byHandler.get(handler);
    if (engine !== undefined) return engine;
    const own = reflector.get<LimitRule<NestRequest> | undefined>(RATE_LIMIT_RULE, handler);
    const inherited = reflector.get<LimitRule<NestRequest> | undefined>(RATE_LIMIT_RULE, cls);
    if (own === undefined && inherited === undefined) engine = this.root;
    else engine = this.build(cls, handler, own, inherited);
    byHandler.set(handler, engine);
    return engine;
  }

  private build(
    cls: Handler,
    handler: Handler,
    own: LimitRule<NestRequest> | undefined,
    inherited: LimitRule<NestRequest> | undefined,
  ): Engine {
    const top = this.top;
    const hasPolicy = (r: LimitRule<NestRequest> | undefined) =>
      r !== undefined && (r.policy !== undefined || r.policies !== undefined || r.limiter !== undefined);
    // Whose policy decides: the route's own, else its controller's, else the module's (its state shared).
    const owner = hasPolicy(own) ? handler : hasPolicy(inherited) ? cls : undefined;
    const ownerRule = owner === handler ? own! : owner === cls ? inherited! : top;
    const rule: LimitRule<NestRequest> = {
      key: top.key,
      cost: top.cost,
      limit: top.limit,
      ...strip(inherited),
      ...strip(own),
    };
    for (const f of ['key', 'cost', 'limit'] as const) if (rule[f] === undefined) delete rule[f];
    const limiter = owner === undefined ? this.rootLimiter(top) : this.ownerLimiter(owner, ownerRule);
    if (owner === undefined)
      return new HttpRateLimiter<NestRequest, NestResponse>(
        { ...this.common, ...rule, limiter },
        ADAPTER,
        [],
        statusOf,
      );
    const name = owner === handler ? `${cls.name}.${handler.name}` : cls.name;
    return new HttpRateLimiter<NestRequest, NestResponse>(
      { ...this.common, routes: [{ name, ...rule, limiter }] },
      ADAPTER,
      [],
      statusOf,
    );
  }

  private rootLimiter(top: LimitRule<NestRequest>): Limiter {
    if (top.limiter !== undefined) return top.limiter;
    if (top.policy === undefined && top.policies === undefined) {
      fail(
        `a @RateLimit() rule without a policy decides on the module's, but RateLimitModule has no 'policy', 'policies' or 'limiter'`,
      );
    }
    return this.topLimiter!;
  }

  private ownerLimiter(owner: Handler, rule: LimitRule<NestRequest>): Limiter {
    let l = this.limiters.get(owner);
    if (l === undefined) {
      l = rule.limiter ?? this.makeLimiter(rule);
      this.limiters.set(owner, l);
    }
    return l;
  }

  private makeLimiter(rule: LimitRule<NestRequest>): Limiter {
    const clock = this.common.clock;
    return new Limiter({
      ...(rule.policies !== undefined ? { policies: rule.policies } : { policy: rule.policy! }),
      store: this.store,
      ...(clock === undefined ? {} : { clock }),
    });
  }
}

function strip(r: LimitRule<NestRequest> | undefined): LimitRule<NestRequest> {
  if (r === undefined) return {};
  const { key, cost, limit } = r;
  const out: LimitRule<NestRequest> = {};
  if (key !== undefined) out.key = key;
  if (cost !== undefined) out.cost = cost;
  if (limit !== undefined) out.limit = limit;
  return out;
}

interface FastifyReplyLike {
  raw: ServerResponse;
  header(name: string, value: string): unknown;
}

/** The Node request and response under either platform's objects (Fastify keeps them in `raw`). */
function raw(
  req: NestRequest,
  res: NestResponse,
): { rawReq: IncomingMessage; rawRes: ServerResponse; headers: HeaderTarget } {
  const reply = res as FastifyReplyLike;
  if (reply.raw !== undefined && typeof reply.header === 'function') {
    return {
      rawReq: (req as { raw: IncomingMessage }).raw,
      rawRes: reply.raw,
      headers: { setHeader: (n, v) => void reply.header(n, v) },
    };
  }
  return {
    rawReq: req as IncomingMessage,
    rawRes: res as ServerResponse,
    headers: new NodeHeaders(res as ServerResponse),
  };
}

/** Decides each HTTP request of the routes it guards; other contexts (RPC, WebSockets) pass. */
export class RateLimitGuard implements CanActivate {
  constructor(
    private readonly core: RateLimitCore,
    private readonly reflector: Reflector,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const handler = context.getHandler();
    const cls = context.getClass();
    if (this.reflector.getAllAndOverride<boolean | undefined>(SKIP_RATE_LIMIT, [handler, cls]) === true) return true;
    const engine = this.core.engineFor(cls, handler, this.reflector);
    const http = context.switchToHttp();
    const req = http.getRequest<NestRequest>();
    const res = http.getResponse<NestResponse>();
    const { rawReq, rawRes, headers } = raw(req, res);
    const o = await engine.check(req, new NodeRequestInfo(rawReq));
    if (o === undefined) return true;
    (req as { rateLimit?: unknown }).rateLimit = o;
    engine.writeHeaders(o, headers);
    if (o.limited) throw new RateLimitException(engine.limitedResponse(o));
    if (engine.watchesResponses) watchNode(engine, o, req, res, rawRes);
    const go = passedNode(engine, o, rawRes);
    return go === true || (go !== false && (await go));
  }
}
Injectable()(RateLimitGuard);
Inject(RATE_LIMIT_CORE)(RateLimitGuard, undefined, 0);
Inject(Reflector)(RateLimitGuard, undefined, 1);
