/**
 * ShouldRateLimit, independent of transport: gRPC, /json, /v1/check and the nginx endpoint all decode into
 * an RlsRequest and render the RlsResponse. Semantics follow Envoy's ratelimit service: every descriptor is
 * decided on its own rule, the overall code is OVER_LIMIT if any descriptor is, `replaces` drops the rules
 * it names, shadow mode answers OK but counts, `unlimited` answers OK with remaining 2^32-1.
 */
import {
  type AlgorithmName,
  type Clock,
  coarseClock,
  type Decision,
  DeniedKeys,
  Limiter,
  MemoryStore,
  monotonicClock,
  SluiceError,
  type Store,
  type Telemetry,
} from 'sluice/kit';
import { UNITS } from './codecs/rls-types.js';
import type { UnitName } from './codecs/rls-types.js';
import { detailedKey, NEAR_LIMIT_RATIO, RuleStats } from './operator/rule-stats.js';
import { checkRequest } from './codecs/rls-request.js';
import { Answer, BadRequest, MAX_UINT32, StoreUnavailable } from './codecs/rls-types.js';
import type {
  CurrentLimit,
  DescriptorStatus,
  RlsRequest,
  RlsResponse,
  StatusReason,
  StoreReason,
} from './codecs/rls-types.js';
import { match, stateKey, valueMetricKey } from './config/rules.js';
import type { Rule, RuleSet } from './config/rules.js';
import type { Entry } from './codecs/rls-types.js';

function currentLimit(name: string, requestsPerUnit: number, unit: UnitName | 'UNKNOWN', burst?: number): CurrentLimit {
  // A burst above the rate is what a client can send now from idle, so RateLimit-Limit is the burst (never
  // below RateLimit-Remaining), and the policy states the rate with the burst as a parameter.
  const bursty = burst !== undefined && burst > requestsPerUnit;
  const window =
    unit === 'UNKNOWN' ? '' : `, ${requestsPerUnit};w=${UNITS[unit] / 1000}${bursty ? `;burst=${burst}` : ''}`;
  return { name, requestsPerUnit, unit, header: `${bursty ? burst : requestsPerUnit}${window}` };
}

/** Distinct request-level overrides kept; beyond it the oldest is forgotten (a client cannot grow memory). */
const MAX_OVERRIDES = 1024;

interface Target {
  readonly rule: Rule | undefined;
  readonly limiter: Limiter | undefined;
  readonly stats: RuleStats | undefined;
  readonly current: DescriptorStatus['currentLimit'];
  readonly id: string | undefined;
}

const NO_RULE: Target = { rule: undefined, limiter: undefined, stats: undefined, current: undefined, id: undefined };

export interface ServiceOptions {
  readonly store: Store;
  /** Answer repeat over-limit keys locally until their retry time (for remote stores). */
  readonly localCache: boolean;
  /**
   * The service's time, in epoch ms: the clock of limit-override limiters (the rules' own come with the
   * RuleSet), of the local cache, of the reset a rule of requests_per_unit 0 answers with, and of Envoy's
   * wire answer (`now()`). Default coarseClock. Decision latency is timed on the monotonic clock regardless.
   */
  readonly clock?: Clock;
  /**
   * Global shadow mode, as envoyproxy/ratelimit's `SHADOW_MODE=true`: every rule decides and counts as
   * usual, and a request some rule would limit is answered OK anyway (its statuses still say OVER_LIMIT).
   * For trying a whole config on live traffic.
   */
  readonly globalShadowMode?: boolean;
  /** A hit within the limit counts as near once this share of the limit is used (Envoy's NEAR_LIMIT_RATIO); default 0.8. */
  readonly nearLimitRatio?: number;
  /**
   * Answer a domain no config names with BadRequest (400, INVALID_ARGUMENT). By default it is answered
   * OK, every descriptor unlimited, as envoyproxy/ratelimit does (a rule set rolled out before its
   * config then fails open, not shut).
   */
  readonly strictDomains?: boolean;
  /** OpenTelemetry for the limit-override limiters (the rules' own get theirs from the RuleSet). */
  readonly telemetry?: Telemetry | undefined;
  /** Fixed-window limit overrides count over-limit hits, as the rules do with RuleSetOptions.countRejected. */
  readonly countRejected?: boolean;
}

export class RateLimitService {
  private overrides = new Map<string, { limiter: Limiter; stats: RuleStats }>();
  /**
   * Envoy's local cache (LOCAL_CACHE_SIZE_IN_BYTES): a rule's key the store said is over its limit stays
   * over until its retry time, for requests at least as heavy, answered without a round trip.
   */
  private readonly deny: DeniedKeys | undefined;
  /** The memory store decides synchronously: skipping the Promise keeps /json near the bare-HTTP ceiling. */
  private readonly sync: boolean;
  private readonly nearLimitRatio: number;
  /** The service's time (ServiceOptions.clock). */
  readonly now: Clock;
  /** Whether every answer is OK whatever the rules decide (--shadow-mode). */
  get globalShadowMode(): boolean {
    return this.options.globalShadowMode === true;
  }

  /** Requests that global shadow mode answered OK although a rule was over its limit (Envoy's global_shadow_mode stat). */
  globalShadowOverrides = 0;

  constructor(
    public rules: RuleSet,
    private readonly options: ServiceOptions,
  ) {
    this.deny = options.localCache ? new DeniedKeys(100_000, 'start-again') : undefined;
    this.sync = options.store instanceof MemoryStore;
    this.nearLimitRatio = options.nearLimitRatio ?? NEAR_LIMIT_RATIO;
    this.now = options.clock ?? coarseClock;
  }

  /** The store every rule decides on (the memory store's tables and keys, for metrics and tests). */
  get store(): Store {
    return this.options.store;
  }

  /** Whether a domain no config names is an error (--strict-domains) rather than OK. */
  get strictDomains(): boolean {
    return this.options.strictDomains === true;
  }

  /** Requests for a domain no config names, answered OK (not strict) or refused (strict). */
  unknownDomainRequests = 0;

  /**
   * The stats objects that have counted since they were made, of the rules (and overrides) in force: what
   * the dashboard samples each second. A config of 300,000 rules of which a few hundred decide is a few
   * hundred to read, not 300,000 (a pass over every rule's stats stopped decisions for about 60 ms a second).
   */
  private counted: RuleStats[] = [];

  countedStats(): readonly RuleStats[] {
    return this.counted;
  }

  /** Every stats object currently reported: the rules' (per descriptor value under detailed_metric) and the overrides'. */
  allStats(): RuleStats[] {
    const out: RuleStats[] = [];
    for (const r of this.rules.rules.values()) {
      if (r.detailed === undefined) out.push(r.stats);
      else out.push(...r.detailed.all());
    }
    for (const o of this.overrides.values()) out.push(o.stats);
    return out;
  }

  /**
   * Swaps in a reloaded rule set. The store tables of the rules it drops or changes, and of every limit
   * override, are freed now; overrides are rebuilt lazily (their base rule may have changed).
   */
  replaceRules(next: RuleSet): void {
    const previous = this.rules;
    const overrides = this.overrides;
    this.rules = next;
    this.overrides = new Map();
    this.lastRule = undefined; // not to keep a dropped rule alive
    this.lastTarget = NO_RULE;
    this.deny?.clear();
    if (previous !== next) previous.releaseDropped(next);
    // Only the stats the new set still reports stay listed: a dropped rule's, and the overrides', go.
    this.counted = this.counted.filter((st) => next.reports(st));
    for (const o of overrides.values()) void o.limiter?.close().catch(() => {});
  }

  shouldRateLimit(req: RlsRequest): RlsResponse | Promise<RlsResponse> {
    const domain = this.rules.domain(req.domain);
    if (req.domain === '') throw new BadRequest(`'domain' must not be empty`);
    if (domain === undefined) {
      this.unknownDomainRequests++;
      if (this.strictDomains)
        throw new BadRequest(
          `unknown domain '${req.domain}'; configured domains: ${[...this.rules.config.domains.keys()].join(', ')}`,
        );
    }
    checkRequest(req);
    // Envoy: no limit applies to any descriptor of a domain it does not know.
    if (domain === undefined) return this.overall(finish(req.descriptors.map(() => UNMATCHED)));
    const n = req.descriptors.length;
    const targets: Target[] = new Array(n);
    let replaced: Set<string> | undefined;
    for (let i = 0; i < n; i++) {
      const d = req.descriptors[i]!;
      const node = match(domain.root, d.entries);
      const rule = node === undefined ? undefined : this.rules.rule(node.rule!);
      if (d.limit !== undefined) {
        targets[i] = this.overrideTarget(req.domain, rule, d.limit);
        continue;
      }
      if (rule !== undefined && rule.spec.replaces.length > 0)
        for (const r of rule.spec.replaces) (replaced ??= new Set()).add(r);
      targets[i] = rule === undefined ? NO_RULE : this.targetOf(rule);
    }
    if (replaced !== undefined) {
      for (let i = 0; i < n; i++) {
        const name = targets[i]!.rule?.spec.name;
        if (name !== undefined && replaced.has(name) && req.descriptors[i]!.limit === undefined) {
          targets[i] = NO_RULE;
        }
      }
    }
    const statuses: (DescriptorStatus | Promise<DescriptorStatus>)[] = new Array(n);
    let pending = false;
    for (let i = 0; i < n; i++) {
      const d = req.descriptors[i]!;
      const hits = d.hitsAddend ?? (req.hitsAddend === 0 ? 1 : req.hitsAddend);
      const s = this.decideOne(targets[i]!, d.entries, hits);
      if (s instanceof Promise) pending = true;
      statuses[i] = s;
    }
    // One descriptor (most Envoy calls): its own Promise, without Promise.all's around it.
    if (pending)
      return n === 1
        ? (statuses[0] as Promise<DescriptorStatus>).then(this.finishOne)
        : Promise.all(statuses).then(this.finishAll);
    return this.overall(finish(statuses as DescriptorStatus[]));
  }

  /** finish() then overall(), bound once: an asynchronous (Redis) request allocates no closure for it. */
  private readonly finishAll = (statuses: DescriptorStatus[]): RlsResponse => this.overall(finish(statuses));
  private readonly finishOne = (status: DescriptorStatus): RlsResponse => this.overall(finish([status]));

  /** The answer as sent: global shadow mode turns an OVER_LIMIT into OK, and drops its Retry-After. */
  private overall(r: Answer): Answer {
    if (r.overallCode === 'OK' || !this.globalShadowMode) return r;
    this.globalShadowOverrides++;
    return new Answer('OK', r.statuses, r.tightest, 0, false, undefined, r.storeReason);
  }

  /** A rule's target never changes while the rule lives, so it is built once, not per request. */
  private readonly targets = new WeakMap<Rule, Target>();

  /** The last rule looked up and its target: most requests in a row decide on the same rule. */
  private lastRule: Rule | undefined = undefined;
  private lastTarget: Target = NO_RULE;

  private targetOf(rule: Rule): Target {
    if (rule === this.lastRule) return this.lastTarget;
    let t = this.targets.get(rule);
    if (t === undefined) {
      const spec = rule.spec;
      t = {
        rule,
        limiter: rule.limiter,
        stats: rule.stats,
        current: spec.unlimited
          ? undefined
          : currentLimit(spec.name ?? '', spec.requestsPerUnit, spec.unit, spec.policy?.burst),
        id: spec.id,
      };
      this.targets.set(rule, t);
    }
    this.lastRule = rule;
    this.lastTarget = t;
    return t;
  }

  private overrideTarget(
    domain: string,
    rule: Rule | undefined,
    limit: { requestsPerUnit: number; unit: UnitName },
  ): Target {
    // Envoy applies the override to whatever the descriptor is, matched or not; sluice keeps the matched
    // rule's algorithm, or Envoy's fixed window when nothing matched.
    const algorithm: AlgorithmName = rule?.spec.policy?.algorithm ?? 'fixed-window';
    const base = rule?.spec.id ?? `${domain}.(unmatched)`;
    const id = `${base}|override:${limit.requestsPerUnit}/${limit.unit}`;
    const current = currentLimit(rule?.spec.name ?? '', limit.requestsPerUnit, limit.unit);
    if (limit.requestsPerUnit === 0)
      return { rule, limiter: undefined, stats: this.overrideStats(domain, id, undefined).stats, current, id };
    const o = this.overrideStats(domain, id, { algorithm, limit: limit.requestsPerUnit, window: UNITS[limit.unit] });
    return { rule, limiter: o.limiter, stats: o.stats, current, id };
  }

  private overrideStats(
    domain: string,
    id: string,
    policy: { algorithm: AlgorithmName; limit: number; window: number } | undefined,
  ): { limiter: Limiter | undefined; stats: RuleStats } {
    let o = this.overrides.get(id);
    if (o === undefined) {
      if (this.overrides.size >= MAX_OVERRIDES) {
        const [oldest, dropped] = this.overrides.entries().next().value!;
        this.overrides.delete(oldest);
        void dropped.limiter?.close().catch(() => {});
      }
      const counts =
        this.options.countRejected === true && policy?.algorithm === 'fixed-window' ? { countRejected: true } : {};
      const limiter =
        policy === undefined
          ? undefined
          : new Limiter({
              policy: { name: id, ...policy, ...counts },
              store: this.options.store,
              ...(this.options.clock ? { clock: this.options.clock } : {}),
              ...(this.options.telemetry ? { telemetry: this.options.telemetry } : {}),
            });
      o = { limiter: limiter!, stats: new RuleStats(domain, id) };
      this.overrides.set(id, o);
    }
    return o;
  }

  private decideOne(t: Target, entries: readonly Entry[], hits: number): DescriptorStatus | Promise<DescriptorStatus> {
    // Envoy's detailed_metric: the rule's stats key carries the request's values. A limit override counts
    // on its own stats, as before.
    const detailed = t.rule?.detailed;
    const stats =
      detailed === undefined || t.stats !== t.rule!.stats ? t.stats : detailed.of(metricKey(t.rule!.spec, entries));
    if (stats === undefined) return UNMATCHED;
    stats.count(hits);
    if (!stats.listed) {
      stats.listed = true;
      this.counted.push(stats);
    }
    const shadow = t.rule?.spec.shadowMode === true;
    if (t.rule?.spec.unlimited === true) {
      stats.withinLimit += hits;
      return {
        code: 'OK',
        currentLimit: undefined,
        limitRemaining: MAX_UINT32,
        durationUntilResetMs: 0,
        rule: t.id,
        shadow: false,
      };
    }
    const limiter = t.limiter;
    if (limiter === undefined) {
      // requests_per_unit: 0 rejects everything, until the end of the current unit window (Envoy's reset).
      const unitMs = t.current!.unit === 'UNKNOWN' ? 1000 : UNITS[t.current!.unit];
      return this.over(stats, t, hits, shadow, 0, unitMs - (this.now() % unitMs));
    }
    const key = stateKey(entries, t.rule?.spec.sharedValues);
    // src/clock.ts reads the Performance object once; the global `performance` is a lazy accessor, costly
    // per read, and this reads the time twice per decision for the latency histogram.
    const t0 = monotonicClock();
    // The local cache keeps the service's time (its clock), not the latency timer's: a denial it answers
    // says how long is left by the same clock the store's decision was made on.
    const now = this.deny === undefined ? 0 : this.now();
    if (this.deny !== undefined) {
      const denied = this.deny.covering(`${t.id!}\u0000${key}`, hits, now);
      if (denied !== undefined) {
        stats.overLimitWithLocalCache += hits;
        stats.observe((monotonicClock() - t0) / 1000);
        return this.over(stats, t, hits, shadow, 0, denied.until - now);
      }
    }
    const impossible = hits > limiter.policies[0]!.capacity;
    if (impossible && !limiter.policies[0]!.countRejected) {
      // More hits than the rule can ever admit: over the limit, as Envoy would answer, said plainly, and
      // with no retry time (the library throws ERR_SLUICE_COST_EXCEEDS_CAPACITY for the same thing).
      stats.observe((monotonicClock() - t0) / 1000);
      return this.over(stats, t, hits, shadow, 0, 0, 'cost-exceeds-capacity');
    }
    let decided: Decision | Promise<Decision>;
    try {
      decided = this.sync ? limiter.limitSync(key, { cost: hits }) : limiter.limit(key, { cost: hits });
    } catch (e) {
      throw this.storeFailure(stats, e);
    }
    if (impossible) {
      // Envoy's counting (countRejected): the store counted the hits, so later checks see them; the
      // answer is the one above.
      const said = () => {
        stats.observe((monotonicClock() - t0) / 1000);
        return this.over(stats, t, hits, shadow, 0, 0, 'cost-exceeds-capacity');
      };
      if (!(decided instanceof Promise)) return said();
      return decided.then(said, (e) => {
        throw this.storeFailure(stats, e);
      });
    }
    if (decided instanceof Promise) {
      return decided.then(
        (d) => this.status(stats, t, key, hits, shadow, d, t0, now),
        (e) => {
          throw this.storeFailure(stats, e);
        },
      );
    }
    return this.status(stats, t, key, hits, shadow, decided, t0, now);
  }

  private storeFailure(stats: RuleStats, e: unknown): Error {
    if (e instanceof SluiceError) return e;
    stats.storeErrors++;
    return new StoreUnavailable(`the store could not decide: ${e instanceof Error ? e.message : String(e)}`);
  }

  private status(
    stats: RuleStats,
    t: Target,
    key: string,
    hits: number,
    shadow: boolean,
    d: Decision,
    t0: number,
    /** The service's time when the decision began (read only with a local cache). */
    now: number,
  ): DescriptorStatus {
    stats.observe((monotonicClock() - t0) / 1000);
    // Decided by the store, not by the rule: a full memory store (onFull), or its failure policy.
    if (d.reason === 'store-full') stats.storeFull++;
    else if (d.reason !== undefined) stats.storeErrors++;
    if (!d.allowed) {
      if (this.deny !== undefined && d.reason === undefined && d.retryAfterMs > 0)
        this.deny.remember(`${t.id!}\u0000${key}`, { until: now + d.retryAfterMs, cost: hits });
      const status = this.over(stats, t, hits, shadow, d.remaining, d.retryAfterMs);
      return d.reason === undefined ? status : { ...status, reason: d.reason };
    }
    stats.withinLimit += hits;
    if (d.limit - d.remaining > this.nearLimitRatio * d.limit) stats.nearLimit += hits;
    if (d.reason !== undefined) {
      return {
        code: 'OK',
        currentLimit: t.current,
        limitRemaining: d.remaining,
        durationUntilResetMs: d.resetAfterMs,
        rule: t.id,
        shadow: false,
        reason: d.reason,
        ...(t.rule?.spec.quotaMode === true ? { quota: 'within' as const } : {}),
      };
    }
    if (t.rule?.spec.quotaMode === true) {
      return {
        code: 'OK',
        currentLimit: t.current,
        limitRemaining: d.remaining,
        durationUntilResetMs: d.resetAfterMs,
        rule: t.id,
        shadow: false,
        quota: 'within',
      };
    }
    return {
      code: 'OK',
      currentLimit: t.current,
      limitRemaining: d.remaining,
      durationUntilResetMs: d.resetAfterMs,
      rule: t.id,
      shadow: false,
    };
  }

  private over(
    stats: RuleStats,
    t: Target,
    hits: number,
    shadow: boolean,
    remaining: number,
    waitMs: number,
    reason?: StatusReason,
  ): DescriptorStatus {
    stats.overLimit += hits;
    if (shadow) stats.shadowMode += hits;
    // quota_mode: over answers OK here; finish() denies when every quota of the request is over.
    if (!shadow && t.rule?.spec.quotaMode === true) {
      return {
        code: 'OK',
        currentLimit: t.current,
        limitRemaining: remaining,
        durationUntilResetMs: Math.ceil(waitMs),
        rule: t.id,
        shadow: false,
        quota: 'over',
      };
    }
    if (reason !== undefined)
      return {
        code: shadow ? 'OK' : 'OVER_LIMIT',
        currentLimit: t.current,
        limitRemaining: remaining,
        durationUntilResetMs: 0,
        rule: t.id,
        shadow,
        reason,
      };
    return {
      code: shadow ? 'OK' : 'OVER_LIMIT',
      currentLimit: t.current,
      limitRemaining: remaining,
      durationUntilResetMs: Math.ceil(waitMs),
      rule: t.id,
      shadow,
    };
  }
}

/** A descriptor no rule limits (or of a domain no config names): OK, with no limit to report. */
const UNMATCHED: DescriptorStatus = Object.freeze({
  code: 'OK',
  currentLimit: undefined,
  limitRemaining: 0,
  durationUntilResetMs: 0,
  rule: undefined,
  shadow: false,
});

/** The stats key of a per-value rule: Envoy's detailed key, or value_to_metric's. */
function metricKey(spec: Rule['spec'], entries: readonly Entry[]): string {
  return spec.detailedMetric || spec.metricPath === undefined
    ? detailedKey(spec.domain, entries)
    : valueMetricKey(spec.domain, spec.metricPath, entries);
}

/**
 * quota_mode (envoyproxy/ratelimit#1045, #1059): a quota over its limit does not deny the request, unless
 * every quota-mode descriptor of the request is over; then those statuses are OVER_LIMIT too.
 */
function settleQuotas(statuses: DescriptorStatus[]): DescriptorStatus[] {
  let quotas = 0;
  let over = 0;
  for (const s of statuses) {
    if (s.quota !== undefined) {
      quotas++;
      if (s.quota === 'over') over++;
    }
  }
  if (quotas === 0 || over < quotas) return statuses;
  return statuses.map((s) => (s.quota === 'over' ? { ...s, code: 'OVER_LIMIT' as const } : s));
}

function finish(all: DescriptorStatus[]): Answer {
  let over = false;
  let retryAfterMs = 0;
  let tightest: DescriptorStatus | undefined;
  let reason: StatusReason | undefined;
  let storeReason: StoreReason | undefined;
  let statuses = all;
  for (const s of all) {
    if (s.quota === 'over') {
      statuses = settleQuotas(all);
      break;
    }
  }
  for (const s of statuses) {
    if (s.code === 'OVER_LIMIT') {
      over = true;
      if (s.durationUntilResetMs > retryAfterMs) retryAfterMs = s.durationUntilResetMs;
      if (s.reason === 'cost-exceeds-capacity') reason = s.reason;
    }
    if (s.reason !== undefined && s.reason !== 'cost-exceeds-capacity') storeReason = s.reason;
    if (s.currentLimit !== undefined && (tightest === undefined || s.limitRemaining < tightest.limitRemaining))
      tightest = s;
  }
  // A request that can never pass has no retry time to give, whatever its other descriptors say.
  if (reason !== undefined) return new Answer('OVER_LIMIT', statuses, tightest, 0, false, reason, storeReason);
  return new Answer(over ? 'OVER_LIMIT' : 'OK', statuses, tightest, retryAfterMs, over, undefined, storeReason);
}
