/**
 * The guard's global monitors, which see what no per-address threshold can: the failure rate, strangers'
 * failures, the share of failures on accounts that do not exist, the share of attempts from unfamiliar
 * paths, and the share of strangers' attempts that come without a proof (of work, or a CAPTCHA). One
 * place keeps them, shares their counts with a fleet (`anomalyScope: 'fleet'`), and persists their
 * baselines in the guard state so that a fresh guard starts from what the fleet learnt.
 */
import { FailureRateMonitor, type RateBaseline } from './anomaly.js';
import type { GuardConfig } from './options.js';
import { ShareMonitor, type ShareBaseline } from './share-monitor.js';
import type { GuardState } from './state.js';

/** Buckets of the share monitors' baselines and warm-ups (each bucket is an hour by default). */
const SHARE_SPAN = 24;
const UNKNOWN_WARMUP = 6;
const MIX_WARMUP = 24;
const PROOFLESS_WARMUP = 24;
/** The least share tested against: a baseline of almost nothing does not make a handful of hits an anomaly. */
const SHARE_FLOOR = 0.002;
/** Fewest hits in a bucket that can be an anomaly. */
const SHARE_MIN_HITS = 10;
/** Persisted baselines outlive a quiet weekend, not a month-old traffic pattern. */
const BASELINE_TTL_MS = 7 * 86_400_000;
/**
 * The failure-rate monitor's cold start: until its baseline is learnt, the share of failures among
 * recorded attempts is tested against this share instead. Legitimate traffic fails far less often (typos:
 * a few in a hundred logins); a stuffing or spraying wave fails almost always.
 */
const COLD_FAILURE_SHARE = 0.5;
/** ...and at least this many must fail within one bucket: a wave, not a fresh deploy's first few typos. */
const COLD_MIN_FAILURES = 200;
/** The version of the persisted text; another is ignored. */
const BASELINE_VERSION = 1;

interface PersistedBaselines {
  readonly v: number;
  readonly failures?: RateBaseline;
  readonly strangerFailures?: RateBaseline;
  readonly unknownAccounts?: ShareBaseline;
  readonly strangerMix?: ShareBaseline;
  readonly proofless?: ShareBaseline;
}

export class GuardMonitors {
  readonly failures: FailureRateMonitor;
  /** Failures from unfamiliar sources only, on a long time scale: what low-and-slow stuffing moves. */
  readonly strangerFailures: FailureRateMonitor;
  /** Recorded attempts that failed on an account that does not exist. */
  readonly unknownAccounts: ShareMonitor;
  /** Checked attempts on unfamiliar paths. */
  readonly strangerMix: ShareMonitor;
  /** Failures among recorded attempts, per failure bucket: the failure-rate monitor's cold start. */
  readonly coldFailures: ShareMonitor;
  /** Strangers' checked attempts that came without a proof; nothing is noted until one came with a proof. */
  readonly proofless: ShareMonitor;
  private proofsSeen = false;
  private loaded: boolean;
  private loading: Promise<void> | undefined;
  private savedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly c: GuardConfig,
    private readonly state: GuardState,
  ) {
    const shared = c.anomalyScope === 'fleet';
    this.failures = new FailureRateMonitor({
      bucketMs: c.anomalyBucketMs,
      span: c.anomalyBaselineBuckets,
      warmup: c.anomalyWarmupBuckets,
      sigma: c.anomalySigma,
      minFailures: c.anomalyMinFailures,
      shared,
    });
    this.strangerFailures = new FailureRateMonitor({
      bucketMs: c.strangerAnomalyBucketMs,
      span: c.strangerAnomalyBaselineBuckets,
      warmup: c.strangerAnomalyWarmupBuckets,
      sigma: c.strangerAnomalySigma,
      minFailures: c.strangerAnomalyMinFailures,
      shared,
    });
    const share = { span: SHARE_SPAN, floor: SHARE_FLOOR, minHits: SHARE_MIN_HITS };
    this.unknownAccounts = new ShareMonitor(
      {
        ...share,
        bucketMs: c.unknownAccountBucketMs,
        warmup: UNKNOWN_WARMUP,
        prior: c.unknownAccountPrior,
        sigma: c.unknownAccountSigma,
      },
      shared,
    );
    // A fresh deploy knows no one, so every attempt is a stranger's: the mix has no useful prior and waits for its baseline.
    this.strangerMix = new ShareMonitor(
      { ...share, bucketMs: c.strangerMixBucketMs, warmup: MIX_WARMUP, prior: 1, sigma: c.strangerMixSigma },
      shared,
    );
    this.proofless = new ShareMonitor(
      {
        ...share,
        bucketMs: c.prooflessBucketMs,
        warmup: PROOFLESS_WARMUP,
        prior: c.prooflessPrior,
        sigma: c.prooflessSigma,
      },
      shared,
    );
    this.coldFailures = new ShareMonitor(
      {
        ...share,
        bucketMs: c.anomalyBucketMs,
        warmup: Number.POSITIVE_INFINITY,
        prior: COLD_FAILURE_SHARE,
        floor: COLD_FAILURE_SHARE,
        minHits: Math.max(c.anomalyMinFailures, COLD_MIN_FAILURES),
        sigma: c.anomalySigma,
      },
      shared,
    );
    this.loaded = typeof state.readBaselines !== 'function';
  }

  /**
   * The global evidence of stuffing at `now`, as reasons (empty when there is none). The two shares and the
   * strangers' failures are one kind of evidence (stuffing spread thin), so together they add the largest
   * of their weights, not the sum: a week of slow stuffing must not challenge every legitimate stranger.
   */
  evidence(now: number): { reasons: string[]; risk: number } {
    const w = this.c.weights;
    const reasons: string[] = [];
    let risk = 0;
    // Before its baseline is learnt, the failure rate is judged by the share of attempts that fail.
    if (this.failures.warmedUp ? this.failures.anomalous(now) : this.coldFailures.anomalous(now)) {
      reasons.push('global-failure-anomaly');
      risk += w.globalAnomaly;
    }
    let spread = 0;
    if (this.strangerFailures.anomalous(now)) {
      reasons.push('stranger-failure-anomaly');
      spread = Math.max(spread, w.strangerAnomaly);
    }
    if (this.unknownAccounts.anomalous(now)) {
      reasons.push('unknown-account-anomaly');
      spread = Math.max(spread, w.unknownAccountAnomaly);
    }
    if (this.strangerMix.anomalous(now)) {
      reasons.push('stranger-mix-anomaly');
      spread = Math.max(spread, w.strangerMixAnomaly);
    }
    if (this.prooflessAnomalous(now)) {
      reasons.push('proofless-anomaly');
      spread = Math.max(spread, w.prooflessAnomaly);
    }
    return { reasons, risk: risk + spread };
  }

  /**
   * Notes a stranger's checked attempt, with or without a proof. A site that passes no proof at all would
   * see every attempt without one, which is no evidence of anything: nothing is noted until one comes.
   */
  noteProof(now: number, proof: boolean): void {
    if (proof) this.proofsSeen = true;
    if (this.proofsSeen) this.proofless.note(now, !proof);
  }

  /** Whether strangers' attempts without a proof are anomalously many now. */
  prooflessAnomalous(now: number): boolean {
    return this.proofsSeen && this.proofless.anomalous(now);
  }

  /** Notes a failure (and whether it was a stranger's) in the failure-rate monitors. */
  noteFailure(now: number, stranger: boolean): void {
    this.failures.note(now);
    this.coldFailures.note(now, true);
    if (stranger) this.strangerFailures.note(now);
  }

  /** Notes a success, for the failure share of the cold start. */
  noteSuccess(now: number): void {
    this.coldFailures.note(now, false);
  }

  /**
   * Reads the persisted baselines once (the first call starts it; later calls wait for the same read) and
   * saves the monitors' baselines every `baselineSaveEvery`. Errors leave the monitors as they are: a
   * state that cannot answer costs the guard its head start, never a login.
   */
  maintain(now: number): Promise<void> | undefined {
    if (!this.loaded) return (this.loading ??= this.load(now));
    const every = this.c.baselineSaveEveryMs;
    if (every > 0 && now - this.savedAt >= every && typeof this.state.writeBaselines === 'function') {
      this.savedAt = now;
      const text = this.persisted();
      if (text !== undefined) {
        try {
          const w = this.state.writeBaselines(text, BASELINE_TTL_MS, now);
          if (w instanceof Promise) w.catch(() => undefined);
        } catch {
          // see above: the next save tries again
        }
      }
    }
    return undefined;
  }

  /** With `anomalyScope: 'fleet'`: adds this guard's counts to the shared ones and reads the totals back. */
  async sync(now: number): Promise<void> {
    if (this.c.anomalyScope !== 'fleet') return;
    await Promise.all([
      this.shareRate('global', this.failures, now),
      this.shareRate('stranger', this.strangerFailures, now),
      this.shareShare('unknown-account', this.unknownAccounts, now),
      this.shareShare('stranger-mix', this.strangerMix, now),
      this.proofsSeen ? this.shareShare('proofless', this.proofless, now) : undefined,
      this.failures.warmedUp ? undefined : this.shareShare('cold-failures', this.coldFailures, now),
    ]);
  }

  private async load(now: number): Promise<void> {
    try {
      const text = await this.state.readBaselines!(now);
      if (text !== undefined) this.adopt(text);
    } catch {
      // no head start; the monitors learn on their own
    } finally {
      this.loaded = true;
    }
  }

  private adopt(text: string): void {
    let p: Partial<PersistedBaselines>;
    try {
      p = JSON.parse(text) as Partial<PersistedBaselines>;
    } catch {
      return;
    }
    if (typeof p !== 'object' || p === null || p.v !== BASELINE_VERSION) return;
    if (isObject(p.failures)) this.failures.restore(p.failures);
    if (isObject(p.strangerFailures)) this.strangerFailures.restore(p.strangerFailures);
    if (isObject(p.unknownAccounts)) this.unknownAccounts.restore(p.unknownAccounts);
    if (isObject(p.strangerMix)) this.strangerMix.restore(p.strangerMix);
    if (isObject(p.proofless)) this.proofless.restore(p.proofless);
  }

  private persisted(): string | undefined {
    const b: PersistedBaselines = {
      v: BASELINE_VERSION,
      failures: this.failures.snapshot(),
      strangerFailures: this.strangerFailures.snapshot(),
      unknownAccounts: this.unknownAccounts.snapshot(),
      strangerMix: this.strangerMix.snapshot(),
      proofless: this.proofless.snapshot(),
    };
    if (
      b.failures === undefined &&
      b.strangerFailures === undefined &&
      b.unknownAccounts === undefined &&
      b.strangerMix === undefined &&
      b.proofless === undefined
    )
      return undefined;
    return JSON.stringify(b);
  }

  private async shareRate(name: string, monitor: FailureRateMonitor, now: number): Promise<void> {
    const adds = monitor.takeUnshared(now);
    let totals: number[];
    try {
      // Kept for three buckets: the current one, the one before (still being added to by slow syncs), and one spare.
      totals = await this.state.shareFailures!(name, adds, 3 * this.bucketMsOf(monitor), now);
    } catch {
      monitor.unshare(adds);
      return;
    }
    adds.forEach(([bucket], i) => {
      monitor.applyShared(bucket, totals[i]!);
    });
  }

  private async shareShare(name: string, monitor: ShareMonitor, now: number): Promise<void> {
    const taken = monitor.takeUnshared(now);
    const ttl = 3 * monitor.bucketMs;
    // Both series in one call, so they are added together or not at all: a bucket's attempts at 2b, its hits at 2b + 1.
    const adds = [
      ...taken.attempts.map(([b, n]) => [2 * b, n] as const),
      ...taken.hits.map(([b, h]) => [2 * b + 1, h] as const),
    ];
    let totals: number[];
    try {
      totals = await this.state.shareFailures!(name, adds, ttl, now);
    } catch {
      monitor.unshare(taken);
      return;
    }
    const n = taken.attempts.length;
    taken.attempts.forEach(([bucket], i) => {
      monitor.applyShared(bucket, totals[i]!, totals[n + i]!);
    });
  }

  private bucketMsOf(monitor: FailureRateMonitor): number {
    return monitor === this.failures ? this.c.anomalyBucketMs : this.c.strangerAnomalyBucketMs;
  }
}

function isObject<T>(v: T | undefined): v is T {
  return typeof v === 'object' && v !== null;
}
