/**
 * Per-rule counters, as Envoy's ratelimit names them per rule (total, over limit, near limit, within limit,
 * shadow mode, local-cache hits) plus store errors and a decision-latency histogram. They are plain numbers
 * on the hot path; prom-client reads them only when /metrics is scraped, so a decision pays a few additions,
 * not a label-hash lookup per metric.
 */

/** Seconds; a memory-store decision lands in the first buckets, a Redis round trip in the middle ones. */
export const LATENCY_BUCKETS = [0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25];

/** Envoy's NEAR_LIMIT_RATIO: a hit within the limit counts as near once 80% of the limit is used. */
export const NEAR_LIMIT_RATIO = 0.8;

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
  /** Decisions (not hits) timed, per bucket in LATENCY_BUCKETS, plus +Inf as the last slot. */
  readonly latencyBuckets = new Float64Array(LATENCY_BUCKETS.length + 1);
  latencySum = 0;
  latencyCount = 0;

  constructor(
    readonly domain: string,
    readonly rule: string,
  ) {}

  observe(seconds: number): void {
    let i = 0;
    while (i < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[i]!) i++;
    this.latencyBuckets[i]!++;
    this.latencySum += seconds;
    this.latencyCount++;
  }
}
