/**
 * The global failure-rate monitor: login failures per bucket (default 1 min) against a moving baseline, an
 * exponentially weighted mean and variance over about `span` buckets. OWASP's authentication cheat sheet
 * suggests alerting on a shift beyond 3 sigma; here the shift raises the ladder for unfamiliar sources.
 *
 * - The current, unfinished bucket is tested as it fills, so a flood is seen within seconds, not a minute.
 * - A bucket found anomalous is not learnt, and the anomaly holds through the next bucket: a long attack
 *   does not become the new normal, and the start of each bucket (few failures yet) is not a gap.
 * - The deviation is at least sqrt(mean), the Poisson floor, so a near-zero variance on a quiet site
 *   does not make a couple of typos an anomaly; and at least `minFailures` must fail within the bucket.
 * - "Beyond 3 sigma" is read as what it means for a normal variable, a chance of 0.13 % that a bucket of
 *   ordinary failures goes beyond it: counts of a few a bucket are Poisson, whose tail is far heavier than
 *   mean + 3·sqrt(mean) says (at 4 a minute, 0.28 % of minutes reach 11, about thirty false alarms a
 *   week), so the threshold is never below the Poisson count with that chance.
 * - By default it is per process: each node sees its share of traffic, and the share moves with it, so the
 *   test holds. Shared (the guard's `anomalyScope: 'fleet'`), it counts the fleet's failures instead: what it
 *   notes waits in `unshared` until the guard adds it to the shared count, and the count it tests is the
 *   shared total as last read plus what it has not shared yet. A bucket is folded into the baseline with the
 *   count known when it ends, so the fleet's last sync interval of a bucket may be missing from it.
 */

export interface AnomalySettings {
  readonly bucketMs: number;
  readonly span: number;
  readonly warmup: number;
  readonly sigma: number;
  readonly minFailures: number;
  /** Counts the fleet's failures (the guard's `anomalyScope: 'fleet'`): what it notes is kept to be shared. */
  readonly shared?: boolean;
}

/** What a monitor has learnt, to persist and restore (GuardState.writeBaselines). */
export interface RateBaseline {
  readonly mean: number;
  readonly variance: number;
  readonly learnt: number;
}

/** A bucket gap longer than this many spans resets the baseline rather than folding in zeros one by one. */
const MAX_FOLD_SPANS = 10;

export class FailureRateMonitor {
  private readonly s: AnomalySettings;
  private readonly alpha: number;
  private bucket = -1;
  private count = 0;
  private mean = 0;
  private variance = 0;
  private learnt = 0;
  private previousAnomalous = false;
  /** The Poisson floor of the threshold, for the mean it was computed for (it changes once a bucket). */
  private poisson = 0;
  private poissonFor = Number.NaN;
  /** Failures noted and not yet added to the shared count, by bucket (shared mode only). */
  private readonly unshared = new Map<number, number>();

  constructor(settings: AnomalySettings) {
    this.s = settings;
    this.alpha = 2 / (settings.span + 1);
  }

  /** Counts one failure at `now` (and, shared, keeps it to be added to the shared count). */
  note(now: number): void {
    this.advance(now);
    this.count++;
    if (this.s.shared === true) this.unshared.set(this.bucket, (this.unshared.get(this.bucket) ?? 0) + 1);
  }

  /**
   * Shared mode: what to add to the shared counts, by bucket, and the current bucket (with 0 if nothing
   * is to be added) so that its total is read back. Taken out: give it back with `unshare` if the adding fails.
   */
  takeUnshared(now: number): [bucket: number, count: number][] {
    this.advance(now);
    // A bucket older than the one before is folded everywhere by now: adding to it would change nothing.
    const adds: [number, number][] = [...this.unshared].filter(([b]) => b >= this.bucket - 1);
    this.unshared.clear();
    if (!adds.some(([b]) => b === this.bucket)) adds.push([this.bucket, 0]);
    return adds;
  }

  /** Shared mode: gives back counts that could not be added, to be added by the next sync. */
  unshare(adds: readonly (readonly [bucket: number, count: number])[]): void {
    for (const [b, n] of adds) if (n > 0) this.unshared.set(b, (this.unshared.get(b) ?? 0) + n);
  }

  /** Shared mode: the fleet's total for `bucket`; if it is the current one, it becomes the count tested. */
  applyShared(bucket: number, total: number): void {
    if (bucket === this.bucket) this.count = total + (this.unshared.get(bucket) ?? 0);
  }

  /** Whether failures are anomalous at `now`. */
  anomalous(now: number): boolean {
    this.advance(now);
    if (this.learnt < this.s.warmup) return false;
    return this.previousAnomalous || this.exceeds(this.count);
  }

  /** Failures in the current bucket at `now`, as this monitor knows them (the fleet's, when shared). */
  currentCount(now: number): number {
    this.advance(now);
    return this.count;
  }

  /** The failure count above which a bucket is anomalous (for reports and tests). */
  threshold(): number {
    const deviation = Math.max(Math.sqrt(this.variance), Math.sqrt(this.mean));
    if (this.poissonFor !== this.mean) {
      this.poissonFor = this.mean;
      this.poisson = poissonUpper(this.mean, normalTail(this.s.sigma));
    }
    return Math.max(this.s.minFailures - 1, this.mean + this.s.sigma * deviation, this.poisson);
  }

  /** The baseline learnt so far, to persist; undefined until a bucket has been learnt. */
  snapshot(): RateBaseline | undefined {
    return this.learnt === 0 ? undefined : { mean: this.mean, variance: this.variance, learnt: this.learnt };
  }

  /**
   * Adopts a persisted baseline (a fleet's, or this service's before a restart), unless this monitor has
   * learnt more of its own: a fresh deploy then tests its first bucket against it instead of waiting out
   * its warm-up. Ill-formed values are ignored, as a missing baseline is.
   */
  restore(b: RateBaseline): void {
    const ok =
      Number.isFinite(b.mean) &&
      b.mean >= 0 &&
      Number.isFinite(b.variance) &&
      b.variance >= 0 &&
      Number.isInteger(b.learnt) &&
      b.learnt > 0;
    if (!ok || b.learnt <= this.learnt) return;
    this.mean = b.mean;
    this.variance = b.variance;
    this.learnt = Math.min(b.learnt, Number.MAX_SAFE_INTEGER);
  }

  /** Whether the baseline has learnt its warm-up's buckets (or adopted a persisted baseline that has). */
  get warmedUp(): boolean {
    return this.learnt >= this.s.warmup;
  }

  /** Buckets folded into the baseline so far. */
  get baselineBuckets(): number {
    return this.learnt;
  }

  get baselineMean(): number {
    return this.mean;
  }

  private exceeds(count: number): boolean {
    return count > this.threshold();
  }

  private advance(now: number): void {
    const b = Math.floor(now / this.s.bucketMs);
    if (this.bucket < 0) {
      this.bucket = b;
      return;
    }
    if (b <= this.bucket) return; // a clock that steps back stays in the current bucket
    const gap = b - this.bucket;
    if (gap > MAX_FOLD_SPANS * this.s.span) {
      // Silence for ten spans: what came before no longer describes now.
      this.mean = 0;
      this.variance = 0;
      this.learnt = 0;
      this.previousAnomalous = false;
    } else {
      this.previousAnomalous = this.learnt >= this.s.warmup && this.exceeds(this.count);
      if (!this.previousAnomalous) this.learn(this.count);
      for (let i = 1; i < gap; i++) {
        this.previousAnomalous = false;
        this.learn(0);
      }
    }
    this.bucket = b;
    this.count = 0;
  }

  private learn(x: number): void {
    if (this.learnt === 0) {
      this.mean = x;
      this.variance = 0;
    } else {
      const d = x - this.mean;
      this.mean += this.alpha * d;
      this.variance = (1 - this.alpha) * (this.variance + this.alpha * d * d);
    }
    this.learnt++;
  }
}

/** The chance that a standard normal variable exceeds `sigma` (Abramowitz and Stegun 26.2.17, error < 7.5e-8). */
export function normalTail(sigma: number): number {
  const z = Math.abs(sigma);
  const t = 1 / (1 + 0.2316419 * z);
  const poly = t * (0.31938153 + t * (-0.356563782 + t * (1.781477937 + t * (-1.821255978 + t * 1.330274429))));
  const tail = (Math.exp((-z * z) / 2) / Math.sqrt(2 * Math.PI)) * poly;
  return sigma >= 0 ? tail : 1 - tail;
}

/** The least k with P(X > k) at most `chance` for X Poisson with mean `mean` (0 for a mean of 0). */
export function poissonUpper(mean: number, chance: number): number {
  if (!(mean > 0)) return 0;
  if (mean > 1000) {
    // Summing would take thousands of terms; here the Cornish-Fisher quantile (the normal's, corrected for
    // the Poisson's skew, 1/sqrt(mean)) is within two counts of the exact one.
    const z = normalQuantile(chance);
    return Math.ceil(mean + z * Math.sqrt(mean) + (z * z - 1) / 6);
  }
  // Summed from k = 0 in log space: exp(-mean) underflows for a mean of some hundreds.
  let logPmf = -mean;
  let cdf = Math.exp(logPmf);
  let k = 0;
  const limit = mean + 40 * Math.sqrt(mean) + 40;
  while (1 - cdf > chance && k < limit) {
    k++;
    logPmf += Math.log(mean / k);
    cdf += Math.exp(logPmf);
  }
  return k;
}

/** The z with normalTail(z) = `chance`, by bisection (called once a bucket, for a large mean only). */
function normalQuantile(chance: number): number {
  let lo = -10;
  let hi = 10;
  for (let i = 0; i < 60; i++) {
    const mid = (lo + hi) / 2;
    if (normalTail(mid) > chance) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}
