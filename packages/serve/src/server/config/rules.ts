/**
 * The live rule set: each configured rule with its Limiter and stats, and descriptor matching as Envoy's
 * ratelimit does it. A reload builds a new RuleSet but hands over the Limiter (and so the counter state) and
 * stats of every rule whose id and policy are unchanged.
 */
import {
  checkRegionsPolicies,
  type Clock,
  Limiter,
  type Policy,
  type PolicyOptions,
  type Store,
  type Telemetry,
} from 'sluice/kit';
import type { DescriptorNode, DomainConfig, Level, RuleSpec, ServiceConfig } from './config.js';
import { wildcardMatches } from './config.js';
import { DEFAULT_MAX_DETAILED_SERIES, DetailedStats, RuleStats } from '../operator/rule-stats.js';
import type { Entry } from '../codecs/rls-types.js';

/**
 * A rule's limiter, built on its first decision: a reload of 50,000 rules then allocates no store table
 * for the many that never decide, and a rule carried over a reload shares its cell, so its state goes on.
 * It holds what it builds from, not a closure over it: a closure and its context are two more objects per
 * rule for every reload to place and every GC to trace.
 */
export class LimiterCell {
  private made: Limiter | undefined = undefined;
  private built = false;

  /** `policy` undefined: no limiter (`unlimited`, a limit of 0). */
  constructor(
    private readonly policy: Policy | undefined,
    private readonly name: string,
    private readonly options: RuleSetOptions,
  ) {}

  get limiter(): Limiter | undefined {
    if (!this.built) {
      const { policy, options } = this;
      this.made =
        policy === undefined
          ? undefined
          : new Limiter({
              policy: toOptions(policy, this.name, options.countRejected === true),
              store: options.store,
              ...(options.clock ? { clock: options.clock } : {}),
              ...(options.telemetry ? { telemetry: options.telemetry } : {}),
            });
      this.built = true;
    }
    return this.made;
  }

  /** Whether the limiter exists (has decided, or been asked for). */
  get isBuilt(): boolean {
    return this.built;
  }

  /** Frees the limiter's store table, if it was ever built (a rule a reload dropped or changed). */
  close(): void {
    if (this.made !== undefined) void this.made.close().catch(() => {});
  }
}

/** A configured rule, ready to decide. */
export class Rule {
  constructor(
    readonly spec: RuleSpec,
    /** Its limiter, built on first use; undefined for `unlimited` and for a limit of 0. */
    readonly cell: LimiterCell,
    readonly stats: RuleStats,
    /** Set for a `detailed_metric` rule: its stats per descriptor value, which replace `stats` in metrics. */
    readonly detailed: DetailedStats | undefined = undefined,
  ) {}

  get limiter(): Limiter | undefined {
    return this.cell.limiter;
  }
}

/** What state and stats a rule carries over a reload: same id, same policy. */
function signature(spec: RuleSpec): string {
  const p = spec.policy;
  const shared = spec.sharedValues === undefined ? '' : `|${spec.sharedValues.join('\u0000')}`;
  return (p === undefined ? '-' : `${p.algorithm}/${p.limit}/${p.windowMs}/${p.burst}/${p.buckets}`) + shared;
}

/** Whether a rule's metrics are kept per descriptor value (`detailed_metric` or `value_to_metric`). */
function perValue(spec: RuleSpec): boolean {
  return spec.detailedMetric || spec.metricPath !== undefined;
}

/** Back from a compiled policy to the options that compile to it, named `name` (its rule's id). */
function toOptions(p: Policy, name: string, countRejected: boolean): PolicyOptions {
  const o: PolicyOptions = { name, algorithm: p.algorithm, limit: p.limit, window: p.windowMs };
  if (p.algorithm === 'token-bucket' || p.algorithm === 'gcra' || p.algorithm === 'leaky-bucket') o.burst = p.burst;
  // Envoy's counting is a fixed window's (its only algorithm); a rule of another algorithm keeps sluice's.
  if (countRejected && p.algorithm === 'fixed-window' && p.calendar === undefined) o.countRejected = true;
  return o;
}

export interface RuleSetOptions {
  readonly store: Store;
  readonly clock?: Clock;
  /** Per `detailed_metric` rule, the most descriptor values given a series of their own (default 100). */
  readonly maxDetailedSeries?: number;
  /** OpenTelemetry for the rules' limiters (their decisions by rule id, their store calls). */
  readonly telemetry?: Telemetry | undefined;
  /**
   * Fixed-window rules count over-limit hits as envoyproxy/ratelimit does (PolicyOptions.countRejected);
   * `sluice serve` sets it unless STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT. Default false (the library's).
   */
  readonly countRejected?: boolean;
}

/**
 * The rules of a RuleSet, one at a time: a reload adds them in slices between decisions (config-reload.ts)
 * and swaps the finished set in.
 */
export class RuleBuilder {
  readonly rules = new Map<string, Rule>();
  kept = 0;
  private readonly cap: number;

  constructor(
    private readonly options: RuleSetOptions,
    private readonly previous?: RuleSet,
  ) {
    this.cap = options.maxDetailedSeries ?? DEFAULT_MAX_DETAILED_SERIES;
  }

  add(spec: RuleSpec): void {
    const { cap, options } = this;
    const old = this.previous?.rules.get(spec.id);
    if (old !== undefined && signature(old.spec) === signature(spec)) {
      const detailed = perValue(spec)
        ? old.detailed?.cap === cap
          ? old.detailed
          : new DetailedStats(spec.domain, spec.id, cap)
        : undefined;
      this.rules.set(spec.id, new Rule(spec, old.cell, old.stats, detailed));
      this.kept++;
      return;
    }
    const policy = spec.policy;
    // The limiter is built at the rule's first decision: what binding would refuse is refused here, at the reload.
    if (policy !== undefined && options.store.regions !== undefined) checkRegionsPolicies([policy]);
    const cell = new LimiterCell(policy, spec.id, options);
    const detailed = perValue(spec) ? new DetailedStats(spec.domain, spec.id, cap) : undefined;
    this.rules.set(spec.id, new Rule(spec, cell, new RuleStats(spec.domain, spec.id), detailed));
  }
}

export class RuleSet {
  /** Rules by id, across domains. */
  readonly rules: Map<string, Rule>;
  /** Carried over from the previous set (for the reload log and tests). */
  readonly kept: number;

  /** `built`: the config's rules already added (a reload's); otherwise they are built here, at once. */
  constructor(
    readonly config: ServiceConfig,
    options: RuleSetOptions,
    previous?: RuleSet,
    built?: RuleBuilder,
  ) {
    if (built === undefined) {
      built = new RuleBuilder(options, previous);
      for (const d of config.domains.values()) for (const spec of d.rules) built.add(spec);
    }
    this.rules = built.rules;
    this.kept = built.kept;
  }

  domain(name: string): DomainConfig | undefined {
    return this.config.domains.get(name);
  }

  rule(spec: RuleSpec): Rule {
    return this.rules.get(spec.id)!;
  }

  /** Whether `stats` is one this set's rules report (a rule's own, or one of its detailed series). */
  reports(stats: RuleStats): boolean {
    const rule = this.rules.get(stats.rule);
    return rule !== undefined && (rule.stats === stats || rule.detailed?.has(stats) === true);
  }

  /**
   * Frees the store tables of this set's rules that `next` does not carry over (gone, or changed and so
   * started fresh): called at the swap, so a reload never leaves a dropped rule's keys behind.
   */
  releaseDropped(next: RuleSet): number {
    let released = 0;
    for (const [id, rule] of this.rules) {
      if (next.rules.get(id)?.cell === rule.cell || !rule.cell.isBuilt) continue;
      rule.cell.close();
      released++;
    }
    return released;
  }
}

/**
 * Envoy's matching: at each level try key+value, then the wildcard values in file order, then key alone. A rule
 * applies only if it sits at the request descriptor's last entry; a rule at a shallower level with
 * deeper request entries does not match (Envoy README, "Example 4").
 */
export function match(root: Level, entries: readonly Entry[]): DescriptorNode | undefined {
  let level = root;
  let found: DescriptorNode | undefined;
  const last = entries.length - 1;
  for (let i = 0; i <= last; i++) {
    const e = entries[i]!;
    // A level without key+value descriptors (many Envoy configs' first level) skips building and hashing
    // the joined string, a noticeable share of a decision.
    let node = level.exact.size === 0 ? undefined : level.exact.get(`${e.key}\u0000${e.value}`);
    if (node === undefined && level.wildcards.length > 0) {
      for (const w of level.wildcards) {
        if (w.key === e.key && wildcardMatches(w, e.value)) {
          node = w.node;
          break;
        }
      }
    }
    node ??= level.byKey.get(e.key);
    if (node === undefined) return undefined;
    if (i === last) found = node;
    else if (node.children.exact.size + node.children.byKey.size === 0) return undefined;
    level = node.children;
  }
  return found?.rule === undefined ? undefined : found;
}

/**
 * The state key within a rule: the entry values (the keys are fixed by the rule's place in the tree).
 * Length-prefixed when there are several, so no value can forge another descriptor's key. `shared` (the
 * rule's `share_threshold` patterns, per level) puts the pattern in place of each value it matched, so
 * every value under `files/*` counts against one limit.
 */
export function stateKey(entries: readonly Entry[], shared?: readonly (string | undefined)[]): string {
  if (shared === undefined) {
    if (entries.length === 1) return entries[0]!.value;
    let k = '';
    for (const e of entries) k += `${e.value.length}:${e.value}`;
    return k;
  }
  const value = (i: number) => shared[i] ?? entries[i]!.value;
  if (entries.length === 1) return value(0);
  let k = '';
  for (let i = 0; i < entries.length; i++) {
    const v = value(i);
    k += `${v.length}:${v}`;
  }
  return k;
}

/**
 * `value_to_metric`'s stats key: the domain, then each level's configured composite key, with the
 * request's value (`key_value`) at the levels that set it.
 */
export function valueMetricKey(
  domain: string,
  path: readonly (string | undefined)[],
  entries: readonly Entry[],
): string {
  let k = domain;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    k += `.${path[i] ?? `${e.key}_${e.value}`}`;
  }
  return k;
}
