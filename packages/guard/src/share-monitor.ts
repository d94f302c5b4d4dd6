/**
 * A share monitor: of the login attempts in a bucket, how many had some property (a failure on an account
 * that does not exist, an attempt from a path the account does not know), tested against the share's
 * baseline. A slow stuffer spread over a residential proxy network fires no per-address threshold, but it
 * cannot hide the mix of what it tries: a leaked list is full of accounts that do not exist here, and every
 * attempt it makes is a stranger's.
 *
 * - The test is a one-sided binomial z-test of the bucket's hits against its attempts at the baseline
 *   share, so it needs no scale: the same settings fit a site with ten logins an hour and one with ten
 *   thousand, and the current, unfinished bucket is tested as it fills.
 * - The baseline is an exponentially weighted mean of the share of past buckets, weighted by attempts.
 *   A bucket found anomalous is not learnt, and the anomaly holds through the next bucket, as in
 *   FailureRateMonitor.
 * - Cold start: before `warmup` buckets have been learnt, the share tested against is `prior`, a share that
 *   a site's legitimate traffic stays below (documented per monitor in docs/guard.md), so a fresh deploy is
 *   protected from its first bucket. A persisted baseline (see `snapshot`) replaces the prior.
 * - The share tested against is never below `floor`, so a baseline of almost nothing does not make a
 *   handful of hits an anomaly; and at least `minHits` hits must be seen in the bucket.
 */

export interface ShareSettings {
  readonly bucketMs: number;
  /** Buckets the baseline's weighted mean spans. */
  readonly span: number;
  /** Buckets learnt before the baseline replaces the prior. */
  readonly warmup: number;
  /** The share assumed before the baseline is learnt. */
  readonly prior: number;
  /** The least share tested against, whatever the baseline says. */
  readonly floor: number;
  /** Standard deviations (binomial) above the expected hits that count as an anomaly. */
  readonly sigma: number;
  /** Fewest hits in a bucket that can be an anomaly. */
  readonly minHits: number;
}

/** What a monitor has learnt, to persist and restore across restarts and share with a fleet. */
export interface ShareBaseline {
  readonly share: number;
  readonly learnt: number;
}

/** A bucket gap longer than this many spans forgets the baseline. */
const MAX_FOLD_SPANS = 10;

export class ShareMonitor {
  private readonly s: ShareSettings;
  /** The length of its buckets. */
  get bucketMs(): number {
    return this.s.bucketMs;
  }
  private readonly alpha: number;
  private bucket = -1;
  private attempts = 0;
  private hits = 0;
  private share: number;
  private learnt = 0;
  private previousAnomalous = false;
  /** Attempts and hits noted and not yet added to the fleet's counts, by bucket (shared mode only). */
  private readonly unshared = new Map<number, [attempts: number, hits: number]>();

  constructor(
    settings: ShareSettings,
    private readonly shared = false,
  ) {
    this.s = settings;
    this.alpha = 2 / (settings.span + 1);
    this.share = settings.prior;
  }

  /** Counts one attempt at `now`, a hit if it had the property. */
  note(now: number, hit: boolean): void {
    this.advance(now);
    this.attempts++;
    if (hit) this.hits++;
    if (this.shared) {
      const u = this.unshared.get(this.bucket);
      if (u === undefined) this.unshared.set(this.bucket, [1, hit ? 1 : 0]);
      else {
        u[0]++;
        if (hit) u[1]++;
      }
    }
  }

  /**
   * Shared mode: what to add to the fleet's counts, by bucket, as two series for GuardState.shareFailures
   * (attempts, hits), with the current bucket always present so that its totals are read back. Taken out:
   * give it back with `unshare` if the adding fails.
   */
  takeUnshared(now: number): { attempts: [number, number][]; hits: [number, number][] } {
    this.advance(now);
    const entries = [...this.unshared].filter(([b]) => b >= this.bucket - 1);
    this.unshared.clear();
    if (!entries.some(([b]) => b === this.bucket)) entries.push([this.bucket, [0, 0]]);
    return { attempts: entries.map(([b, [n]]) => [b, n]), hits: entries.map(([b, [, h]]) => [b, h]) };
  }

  /** Shared mode: gives back counts that could not be added. */
  unshare(taken: {
    attempts: readonly (readonly [number, number])[];
    hits: readonly (readonly [number, number])[];
  }): void {
    taken.attempts.forEach(([b, n], i) => {
      const h = taken.hits[i]![1];
      if (n === 0 && h === 0) return;
      const u = this.unshared.get(b) ?? [0, 0];
      u[0] += n;
      u[1] += h;
      this.unshared.set(b, u);
    });
  }

  /** Shared mode: the fleet's totals for `bucket`; if it is the current one, they become the counts tested. */
  applyShared(bucket: number, attempts: number, hits: number): void {
    if (bucket !== this.bucket) return;
    const u = this.unshared.get(bucket);
    this.attempts = attempts + (u?.[0] ?? 0);
    this.hits = hits + (u?.[1] ?? 0);
  }

  /** Whether the share is anomalous at `now`. */
  anomalous(now: number): boolean {
    this.advance(now);
    return this.previousAnomalous || this.exceeds(this.attempts, this.hits);
  }

  /** The share the current bucket is tested against: the prior while warming up, never below the floor. */
  expectedShare(): number {
    return Math.max(this.s.floor, this.learnt >= this.s.warmup ? this.share : this.s.prior);
  }

  /** The current bucket's attempts and hits as this monitor knows them (for reports and tests). */
  current(now: number): { attempts: number; hits: number } {
    this.advance(now);
    return { attempts: this.attempts, hits: this.hits };
  }

  /** The baseline learnt so far, to persist; undefined until a bucket has been learnt. */
  snapshot(): ShareBaseline | undefined {
    return this.learnt === 0 ? undefined : { share: this.share, learnt: this.learnt };
  }

  /** Adopts a persisted baseline, unless this monitor has learnt more of its own. */
  restore(b: ShareBaseline): void {
    if (!(Number.isFinite(b.share) && b.share >= 0 && b.share <= 1 && Number.isInteger(b.learnt) && b.learnt > 0))
      return;
    if (b.learnt <= this.learnt) return;
    this.share = b.share;
    this.learnt = b.learnt;
  }

  get baselineBuckets(): number {
    return this.learnt;
  }

  private exceeds(n: number, hits: number): boolean {
    if (hits < this.s.minHits) return false;
    const p = this.expectedShare();
    if (p >= 1) return false;
    const expected = n * p;
    return hits - expected > this.s.sigma * Math.sqrt(expected * (1 - p));
  }

  private advance(now: number): void {
    const b = Math.floor(now / this.s.bucketMs);
    if (this.bucket < 0) {
      this.bucket = b;
      return;
    }
    if (b <= this.bucket) return; // a clock that steps back stays in the current bucket
    if (b - this.bucket > MAX_FOLD_SPANS * this.s.span) {
      this.share = this.s.prior;
      this.learnt = 0;
      this.previousAnomalous = false;
    } else {
      this.previousAnomalous = this.exceeds(this.attempts, this.hits);
      if (!this.previousAnomalous && this.attempts > 0) this.learn(this.hits / this.attempts, this.attempts);
      if (b - this.bucket > 1) this.previousAnomalous = false; // empty buckets between: nothing to hold
    }
    this.bucket = b;
    this.attempts = 0;
    this.hits = 0;
  }

  /**
   * Folds a bucket's share in: a plain mean of the buckets learnt while there are fewer than the span, so
   * the prior is forgotten at once, then the weighted mean. A bucket's weight grows with its attempts up to
   * that of a full one (100), so a quiet night's three attempts move the baseline less than a busy hour.
   */
  private learn(x: number, attempts: number): void {
    const rate = Math.max(this.alpha, 1 / (this.learnt + 1));
    this.share += rate * Math.min(1, attempts / 100) * (x - this.share);
    this.learnt++;
  }
}
