/**
 * Per-rule counters, as Envoy's ratelimit names them per rule (total, over limit, near limit, within limit,
 * shadow mode, local-cache hits) plus store errors and a decision-latency histogram. They are plain numbers
 * on the hot path; prom-client reads them only when /metrics is scraped, so a decision pays a few additions,
 * not a label-hash lookup per metric.
 */

/** Seconds; a memory-store decision lands in the first buckets, a Redis round trip in the middle ones. */
export const LATENCY_BUCKETS = [
  0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
];

/** Envoy's default NEAR_LIMIT_RATIO: a hit within the limit counts as near once 80% of the limit is used. */
export const NEAR_LIMIT_RATIO = 0.8;

/** The largest count a double holds exactly (2^53 - 1). */
export const MAX_EXACT_COUNT = Number.MAX_SAFE_INTEGER;

/** The buckets of a rule that has timed no decision: all 0, shared, never written. */
const NO_LATENCIES = new Float64Array(LATENCY_BUCKETS.length + 1);

export class RuleStats {
  /** Hits (each request counts its hits_addend), as Envoy's total_hits. */
  totalHits = 0;
  overLimit = 0;
  nearLimit = 0;
  withinLimit = 0;
  /** Hits that were over the limit but answered OK because the rule is in shadow mode. */
  shadowMode = 0;
  /** Over-limit answers given from the local deny cache without asking the store. */
  overLimitWithLocalCache = 0;
  /** Decisions the store could not make (timeout, connection loss): answered by the failure policy or failed. */
  storeErrors = 0;
  /** New keys the memory store had no room for (every key it could evict was denying): decided by its onFull. */
  storeFull = 0;
  /**
   * Made at the first decision timed: a typed array is two heap objects and a malloc'd block (about 300
   * bytes), and a reload of 50,000 rules that mostly never decide would otherwise make 50,000 of them.
   */
  private buckets: Float64Array | undefined = undefined;
  latencySum = 0;
  latencyCount = 0;
  /** In the service's list of stats that have counted (RateLimitService.countedStats): set once, at the first count. */
  listed = false;

  constructor(
    readonly domain: string,
    readonly rule: string,
    /** Under `detailed_metric`: Envoy's detailed stats key of the requests counted here, or OVERFLOW. */
    readonly descriptor?: string,
  ) {}

  /** Decisions (not hits) timed, per bucket in LATENCY_BUCKETS, plus +Inf as the last slot. Read only. */
  get latencyBuckets(): Float64Array {
    return this.buckets ?? NO_LATENCIES;
  }

  /**
   * Counts `hits` more, first starting every counter again from 0 should the hits counter otherwise pass
   * 2^53 - 1, past which a double no longer counts ones: Prometheus reads the drop as a counter reset, as
   * after a restart. Every other counter counts some of the hits, or decisions, so stays below it.
   */
  count(hits: number): void {
    if (this.totalHits > MAX_EXACT_COUNT - hits) this.restart();
    this.totalHits += hits;
  }

  /** Every counter back to 0 (see count()). */
  restart(): void {
    this.totalHits =
      this.overLimit =
      this.nearLimit =
      this.withinLimit =
      this.shadowMode =
      this.overLimitWithLocalCache =
      this.storeErrors =
      this.storeFull =
        0;
    this.buckets?.fill(0);
    this.latencySum = this.latencyCount = 0;
  }

  observe(seconds: number): void {
    let i = 0;
    while (i < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[i]!) i++;
    (this.buckets ??= new Float64Array(LATENCY_BUCKETS.length + 1))[i]!++;
    this.latencySum += seconds;
    this.latencyCount++;
  }
}

/** The `descriptor` label of the series that counts the values beyond a rule's cap. */
export const OVERFLOW = '(other)';

/** Detailed series kept per rule unless `--max-detailed-series` says otherwise. */
export const DEFAULT_MAX_DETAILED_SERIES = 100;

/**
 * A `detailed_metric` rule's stats, one RuleStats per descriptor value as Envoy's ratelimit keys its stats
 * (`domain.key_value.key_value`, the request's values). Values come from clients, so at most `cap` series
 * are made, first come first kept; hits of any further value count in one OVERFLOW series, which bounds the
 * memory and the scrape an attacker can cause with unique values.
 */
export class DetailedStats {
  private readonly series = new Map<string, RuleStats>();
  private readonly overflow: RuleStats;

  constructor(
    readonly domain: string,
    readonly rule: string,
    readonly cap: number,
  ) {
    this.overflow = new RuleStats(domain, rule, OVERFLOW);
  }

  /** The stats of one detailed stats key, or the overflow series once the cap is reached. */
  of(descriptor: string): RuleStats {
    let s = this.series.get(descriptor);
    if (s === undefined) {
      if (this.series.size >= this.cap) return this.overflow;
      s = new RuleStats(this.domain, this.rule, descriptor);
      this.series.set(descriptor, s);
    }
    return s;
  }

  /** Whether `s` is one of this rule's series. */
  has(s: RuleStats): boolean {
    return s === this.overflow || (s.descriptor !== undefined && this.series.get(s.descriptor) === s);
  }

  /** Every series, the overflow one only once something has counted in it. */
  all(): RuleStats[] {
    const out = [...this.series.values()];
    if (this.overflow.totalHits > 0 || this.overflow.storeErrors > 0) out.push(this.overflow);
    return out;
  }
}

/** Envoy's detailed stats key: the domain, then `key_value` for every entry of the request's descriptor. */
export function detailedKey(
  domain: string,
  entries: readonly { readonly key: string; readonly value: string }[],
): string {
  let k = domain;
  for (const e of entries) k += `.${e.key}_${e.value}`;
  return k;
}
