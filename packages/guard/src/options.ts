/**
 * The guard's options: every threshold with its default and where the default comes from, validated once
 * at construction. A bad or unknown field is an error naming it; nothing silently falls back.
 */
import { check, type Clock, parseDuration, randomBytes, show, SluiceError, type Store, utf8 } from 'sluice/kit';
import type { GuardState } from './state.js';

/** Risk points each signal adds; see docs/guard.md, "The ladder". */
export interface SignalWeights {
  /** `accountChallengeFailures` consecutive failures on the attempt's path (familiar or not) of the account. */
  accountFailures: number;
  /** `ipDistinctAccounts` accounts failing from one address within `sourceWindow`. */
  ipDistinctAccounts: number;
  /** `ipDistinctAccountsLong` accounts failing from one address within `longSourceWindow` (when the short count has not fired). */
  ipDistinctAccountsLong: number;
  /** `subnetDistinctAccounts` accounts failing from one subnet within `sourceWindow`. */
  subnetDistinctAccounts: number;
  /** `fingerprintDistinctAccounts` accounts failing from one device fingerprint. */
  fingerprintReuse: number;
  /** A source whose failure ratio is at least `failureRatio` over at least `ratioMinFailures` failures. */
  failureRatio: number;
  /** The address lies in a `hostingRanges` range. */
  hostingProvider: number;
  /** The global failure rate is beyond `anomalySigma` of its baseline (unfamiliar sources only). */
  globalAnomaly: number;
  /** Failures from unfamiliar sources per `strangerAnomalyBucket` are beyond `strangerAnomalySigma` of their baseline. */
  strangerAnomaly: number;
  /** The share of failures on accounts that do not exist is beyond `unknownAccountSigma` of its baseline (or prior). */
  unknownAccountAnomaly: number;
  /** The share of attempts from unfamiliar paths is beyond `strangerMixSigma` of its baseline. */
  strangerMixAnomaly: number;
  /** The share of strangers' attempts without a `proof` is beyond `prooflessSigma` of its baseline (or prior). */
  prooflessAnomaly: number;
  /**
   * While `prooflessAnomaly` holds, this stranger's attempt came without a `proof` (the attempt's own
   * evidence). Default 0: before the password it adds nothing, and at a correct password it steps the
   * stranger up (see `successStepUp`), which is where a stuffer's valid pair is stopped.
   */
  noProof: number;
}

export interface GuardOptions {
  /** HMAC key for every tag in guard state; at least 16 bytes. Required when NODE_ENV=production. */
  secret?: string | Uint8Array;
  /** Where the per-address, per-subnet and per-pair token buckets live. Default: a new MemoryStore. */
  store?: Store;
  /**
   * Where accounts' failure counts, familiar sources and per-source signals live. Default: the store's own
   * when it has one (for a RedisStore, a RedisGuardState on the same client and prefix, one per store),
   * else MemoryGuardState.
   */
  state?: GuardState;
  /** Milliseconds; tests inject one. Default `coarseClock`. */
  clock?: Clock;
  /** Uniform [0, 1) for backoff jitter. Default: crypto-backed. Tests inject a seeded one. */
  random?: () => number;

  /** Prefix that groups IPv4 addresses into a subnet. Default 24. */
  ipv4Subnet?: number;
  /** Prefix that groups IPv6 addresses into a subnet (one customer's /64 by RFC 6177 practice). Default 64. */
  ipv6Subnet?: number;
  /**
   * Prefix at which IPv6 addresses are one address: its records, buckets and account+address pairs. An
   * attacker rotates through the 2^64 addresses of one /64 at will (privacy addresses do the same), so
   * per-address state at /128 is state an attacker mints. Default 64; 128 counts each address apart.
   */
  ipv6AddressPrefix?: number;

  /** Consecutive failures per account before backoff starts (typos are free). Default 3. */
  freeFailures?: number;
  /** First backoff wait; it doubles per further failure (OWASP: "starting near 1 s"). Default '1s'. */
  backoffBase?: number | string;
  /** Longest backoff wait. Default '15m'. */
  backoffMax?: number | string;
  /** Each wait is stretched by a uniform fraction up to this, as fail2ban's bantime.rndtime. Default 0.25. */
  backoffJitter?: number;
  /** Consecutive failures after which an unfamiliar source is blocked (NIST SP 800-63B: at most 100). Default 100. */
  hardStopFailures?: number;
  /** An account's failure count is forgotten this long after its last failure. Default '1d'. */
  failureMemory?: number | string;
  /** Account backoff waits up to this are 'delay' (hold the response); longer are 'block'. Default '10s'. */
  maxDelay?: number | string;
  /** Consecutive failures on a path after which its attempts are challenged (OWASP: CAPTCHA after a few). Default 5. */
  accountChallengeFailures?: number;
  /** A source that logged in successfully stays familiar to the account this long. Default '30d'. */
  familiarFor?: number | string;
  /** Familiar sources kept per account, newest first. Default 8. */
  maxFamiliarSources?: number;

  /** Failures per address per day, a token bucket refilling evenly (Auth0: 100, one per 14.4 min). Default 100. */
  ipFailuresPerDay?: number;
  /** Failures per subnet per day, the same kind of bucket. Default 300. */
  subnetFailuresPerDay?: number;
  /** Failures per account+address pair per hour (rate-limiter-flexible's recipe: 10). Default 10. */
  pairFailuresPerHour?: number;

  /** Window of the distinct-accounts signals (SIEM rules: 5–30 min). Default '30m'. */
  sourceWindow?: number | string;
  /** Window of the failure ratio per source: long, so a low-and-slow source still adds up. Default '1d'. */
  ratioWindow?: number | string;
  /** Distinct accounts failing from one address in the window (SIEM rules: 10–15). Default 10. */
  ipDistinctAccounts?: number;
  /**
   * Window of the long distinct-accounts count per address, read from the same capped set as the short
   * one: a low-and-slow sprayer fails on a couple of accounts an hour per address, and a slow stuffer's
   * proxy on one or two a week, so this is also how long a source's failures are remembered. Default '7d'.
   */
  longSourceWindow?: number | string;
  /** Distinct accounts failing from one address within `longSourceWindow`. Default 2. */
  ipDistinctAccountsLong?: number;
  /** Distinct accounts failing from one subnet in the window. Default 20. */
  subnetDistinctAccounts?: number;
  /** Distinct accounts failing from one device fingerprint in the window. Default 5. */
  fingerprintDistinctAccounts?: number;
  /** Failure ratio per source that counts as a signal. Default 0.8. */
  failureRatio?: number;
  /** Failures a source needs in the ratio window before its ratio counts (more than one person's typos). Default 10. */
  ratioMinFailures?: number;

  /** Addresses or ranges that skip per-source throttles and signals (never the account throttles). */
  allowList?: readonly string[];
  /** Addresses or ranges that are always blocked. */
  denyList?: readonly string[];
  /** Hosting-provider ranges; logins from them add risk (OWASP suggests challenging them). */
  hostingRanges?: readonly string[];

  /** Width of one global failure-rate bucket. Default '1m'. */
  anomalyBucket?: number | string;
  /** Buckets the moving baseline averages over (EWMA span). Default 60. */
  anomalyBaselineBuckets?: number;
  /** Buckets seen before the detector may fire. Default 30. */
  anomalyWarmupBuckets?: number;
  /** Standard deviations above the baseline that count as an anomaly (OWASP: 3). Default 3. */
  anomalySigma?: number;
  /** Fewest failures in a bucket that can be an anomaly, so a quiet site does not fire on a handful. Default 10. */
  anomalyMinFailures?: number;
  /**
   * 'process' (default): each guard's anomaly monitors count the failures it records. 'fleet': every guard
   * on the same shared state (a RedisStore's, or one MemoryGuardState) counts them all, adding its own to
   * the shared count and reading the total every `anomalySyncEvery`. Applies to both monitors.
   */
  anomalyScope?: 'process' | 'fleet';
  /** With `anomalyScope: 'fleet'`, how often counts are shared. 0: only when `syncAnomaly()` is called. Default '1s'. */
  anomalySyncEvery?: number | string;

  /**
   * Width of one bucket of the long-scale monitor, which counts only failures from unfamiliar sources (an
   * account+location or account+device that never logged in): the time scale that sees low-and-slow
   * stuffing, which adds about one failure a minute and no per-source or per-account count. Default '1h'.
   */
  strangerAnomalyBucket?: number | string;
  /** Buckets its moving baseline averages over (EWMA span). Default 24 (a day of hours). */
  strangerAnomalyBaselineBuckets?: number;
  /** Buckets it must learn before it may fire. Default 12. */
  strangerAnomalyWarmupBuckets?: number;
  /** Standard deviations above the baseline that count (OWASP: 3). Default 3. */
  strangerAnomalySigma?: number;
  /** Fewest unfamiliar failures in a bucket that can be an anomaly. Default 10. */
  strangerAnomalyMinFailures?: number;
  /**
   * The unknown-account monitor: of the attempts recorded per bucket, the share that failed on an account
   * that does not exist (`record({ success: false, accountExists: false })`). Bucket default '1h'.
   */
  unknownAccountBucket?: number | string;
  /** Binomial standard deviations above the baseline share that count. Default 4. */
  unknownAccountSigma?: number;
  /**
   * The share assumed before the baseline is learnt (6 buckets), so a fresh deploy is protected from its
   * first bucket: legitimate traffic stays below it. Default 0.1.
   */
  unknownAccountPrior?: number;
  /** The stranger-mix monitor: of the attempts checked per bucket, the share on unfamiliar paths. Bucket default '1h'. */
  strangerMixBucket?: number | string;
  /** Binomial standard deviations above the baseline share that count. Default 4. */
  strangerMixSigma?: number;
  /**
   * The proofless monitor: of strangers' attempts checked per bucket, the share that came without a
   * `proof` (a proof of work the login page solves in the background, or a CAPTCHA). It counts nothing
   * until the guard has seen an attempt with a proof, so a site that never passes one is never judged by
   * it. Bucket default '1h'.
   */
  prooflessBucket?: number | string;
  /** Binomial standard deviations above the baseline share that count. Default 4. */
  prooflessSigma?: number;
  /**
   * The share assumed before the baseline is learnt (24 buckets): where the login page solves a proof in
   * the background, legitimate strangers come without one far less often than this. Default 0.5.
   */
  prooflessPrior?: number;
  /**
   * Risk at the moment of success: what `record({ success: true })` does with a correct password on an
   * unfamiliar path (no device and no network the account has used) while the guard sees stuffing (an
   * unknown-account, stranger-mix, stranger-failure or global-failure anomaly):
   * - 'suspicious' (default): while the global failure rate is anomalous (a wave, minutes long), or when
   *   the attempt carries evidence of its own as well (its address failed on another account within
   *   `longSourceWindow`, its subnet on two, a hosting-provider address, no `proof` while strangers without
   *   one are anomalously many);
   * - 'stuffing': for every such success, at the price of a second factor for legitimate users who log in
   *   from a new device and a new network while an attack lasts (docs/guard.md has the trade-off measured);
   * - 'off': never steps up at success.
   * Under 'suspicious' and 'stuffing', a success on an unfamiliar path whose account+password pair the
   * application found leaked (`leakedCredential: true`) is stepped up whatever the monitors see.
   * A stepped-up success changes nothing; the application asks for the second factor and records the
   * success again with `secondFactor: true`. Familiar paths are never stepped up for this.
   */
  successStepUp?: 'off' | 'suspicious' | 'stuffing';
  /** How often the anomaly monitors' baselines are written to the state for a fresh guard to start from. 0: never. Default '5m'. */
  baselineSaveEvery?: number | string;

  /** Risk points per signal. */
  weights?: Partial<SignalWeights>;
  /** Risk at which the ladder delays. Default 1. */
  delayAt?: number;
  /** Risk at which it challenges. Default 2. */
  challengeAt?: number;
  /** Risk at which it steps up to MFA. Default 4. */
  mfaAt?: number;
  /** Risk at which it blocks. Default 6. */
  blockAt?: number;
  /** The hold for a risk-based 'delay'. Default '1s'. */
  riskDelay?: number | string;
  /** 'pow' gives a proof-of-work difficulty; 'captcha' asks for a CAPTCHA. Default 'pow'. */
  challenge?: 'pow' | 'captcha';
  /** Difficulty (leading zero bits) at `challengeAt`; browsers do 0.1–0.3 M SHA-256/s. Default 16. */
  powDifficulty?: number;
  /** Bits added per risk point above `challengeAt`. Default 2. */
  powStep?: number;
  /** Highest difficulty. Default 24. */
  powMaxDifficulty?: number;
  /** retryAfterMs of a risk-based or deny-list block. Default '15m'. */
  blockFor?: number | string;
}

/** Every option resolved: durations in ms, defaults filled in. */
export interface GuardConfig {
  readonly secret: Uint8Array;
  readonly secretIsEphemeral: boolean;
  readonly ipv4Subnet: number;
  readonly ipv6Subnet: number;
  readonly ipv6AddressPrefix: number;
  readonly freeFailures: number;
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;
  readonly backoffJitter: number;
  readonly hardStopFailures: number;
  readonly failureMemoryMs: number;
  readonly maxDelayMs: number;
  readonly accountChallengeFailures: number;
  readonly familiarMs: number;
  readonly maxFamiliarSources: number;
  readonly ipFailuresPerDay: number;
  readonly subnetFailuresPerDay: number;
  readonly pairFailuresPerHour: number;
  readonly sourceWindowMs: number;
  readonly ratioWindowMs: number;
  readonly ipDistinctAccounts: number;
  readonly longSourceWindowMs: number;
  readonly ipDistinctAccountsLong: number;
  readonly subnetDistinctAccounts: number;
  readonly fingerprintDistinctAccounts: number;
  readonly failureRatio: number;
  readonly ratioMinFailures: number;
  readonly allowList: readonly string[];
  readonly denyList: readonly string[];
  readonly hostingRanges: readonly string[];
  readonly anomalyBucketMs: number;
  readonly anomalyBaselineBuckets: number;
  readonly anomalyWarmupBuckets: number;
  readonly anomalySigma: number;
  readonly anomalyMinFailures: number;
  readonly anomalyScope: 'process' | 'fleet';
  readonly anomalySyncEveryMs: number;
  readonly strangerAnomalyBucketMs: number;
  readonly strangerAnomalyBaselineBuckets: number;
  readonly strangerAnomalyWarmupBuckets: number;
  readonly strangerAnomalySigma: number;
  readonly strangerAnomalyMinFailures: number;
  readonly unknownAccountBucketMs: number;
  readonly unknownAccountSigma: number;
  readonly unknownAccountPrior: number;
  readonly strangerMixBucketMs: number;
  readonly strangerMixSigma: number;
  readonly prooflessBucketMs: number;
  readonly prooflessSigma: number;
  readonly prooflessPrior: number;
  readonly successStepUp: 'off' | 'suspicious' | 'stuffing';
  readonly baselineSaveEveryMs: number;
  readonly weights: SignalWeights;
  readonly delayAt: number;
  readonly challengeAt: number;
  readonly mfaAt: number;
  readonly blockAt: number;
  readonly riskDelayMs: number;
  readonly challenge: 'pow' | 'captcha';
  readonly powDifficulty: number;
  readonly powStep: number;
  readonly powMaxDifficulty: number;
  readonly blockMs: number;
}

export const DEFAULT_WEIGHTS: SignalWeights = Object.freeze({
  accountFailures: 2,
  ipDistinctAccounts: 3,
  ipDistinctAccountsLong: 1,
  subnetDistinctAccounts: 2,
  fingerprintReuse: 2,
  failureRatio: 2,
  hostingProvider: 2,
  globalAnomaly: 2,
  strangerAnomaly: 1,
  unknownAccountAnomaly: 1,
  strangerMixAnomaly: 1,
  prooflessAnomaly: 1,
  noProof: 0,
});

const KNOWN = new Set([
  'secret',
  'store',
  'state',
  'clock',
  'random',
  'ipv4Subnet',
  'ipv6Subnet',
  'ipv6AddressPrefix',
  'freeFailures',
  'backoffBase',
  'backoffMax',
  'backoffJitter',
  'hardStopFailures',
  'failureMemory',
  'maxDelay',
  'accountChallengeFailures',
  'familiarFor',
  'maxFamiliarSources',
  'ipFailuresPerDay',
  'subnetFailuresPerDay',
  'pairFailuresPerHour',
  'sourceWindow',
  'ratioWindow',
  'ipDistinctAccounts',
  'longSourceWindow',
  'ipDistinctAccountsLong',
  'subnetDistinctAccounts',
  'fingerprintDistinctAccounts',
  'failureRatio',
  'ratioMinFailures',
  'allowList',
  'denyList',
  'hostingRanges',
  'anomalyBucket',
  'anomalyBaselineBuckets',
  'anomalyWarmupBuckets',
  'anomalySigma',
  'anomalyMinFailures',
  'anomalyScope',
  'anomalySyncEvery',
  'strangerAnomalyBucket',
  'strangerAnomalyBaselineBuckets',
  'strangerAnomalyWarmupBuckets',
  'strangerAnomalySigma',
  'strangerAnomalyMinFailures',
  'weights',
  'delayAt',
  'challengeAt',
  'mfaAt',
  'blockAt',
  'riskDelay',
  'challenge',
  'powDifficulty',
  'powStep',
  'powMaxDifficulty',
  'blockFor',
  'unknownAccountBucket',
  'unknownAccountSigma',
  'unknownAccountPrior',
  'strangerMixBucket',
  'strangerMixSigma',
  'prooflessBucket',
  'prooflessSigma',
  'prooflessPrior',
  'successStepUp',
  'baselineSaveEvery',
]);

/** Shortest secret accepted: 16 bytes (128 bits), the HMAC key length below which guessing gets cheap. */
export const MIN_SECRET_BYTES = 16;

function invalid(message: string): never {
  throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `Guard ${message}`);
}

function integer(
  o: GuardOptions,
  field: keyof GuardOptions,
  fallback: number,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number {
  const v = o[field];
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    invalid(`'${field}' must be an integer from ${min} to ${max}, got ${show(v)}`);
  }
  return v;
}

function fraction(o: GuardOptions, field: keyof GuardOptions, fallback: number, min: number, max: number): number {
  const v = o[field];
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) {
    invalid(`'${field}' must be a number from ${min} to ${max}, got ${show(v)}`);
  }
  return v;
}

function duration(o: GuardOptions, field: keyof GuardOptions, fallback: string): number {
  const v = o[field] ?? fallback;
  try {
    return parseDuration(v, `Guard '${field}'`);
  } catch {
    invalid(`'${field}' must be milliseconds or a duration such as '1s', '15m' or '1d', got ${show(v)}`);
  }
}

function scope(v: unknown): 'process' | 'fleet' {
  if (v === undefined) return 'process';
  return check.oneOf(v, ['process', 'fleet'], "Guard 'anomalyScope'");
}

function cidrList(o: GuardOptions, field: 'allowList' | 'denyList' | 'hostingRanges'): readonly string[] {
  const v = o[field];
  if (v === undefined) return [];
  if (!Array.isArray(v)) invalid(`'${field}' must be an array of CIDR ranges, got ${show(v)}`);
  return Object.freeze([...v]);
}

function secretBytes(secret: unknown, env: string | undefined): { bytes: Uint8Array; ephemeral: boolean } {
  if (secret === undefined) {
    if (env === 'production') {
      throw new SluiceError(
        'ERR_SLUICE_GUARD_SECRET',
        `Guard 'secret' is required when NODE_ENV=production, got undefined; pass at least ${MIN_SECRET_BYTES} random bytes shared by every server, e.g. from a secrets manager`,
      );
    }
    // Outside production a missing secret gets a random one, so examples run; state then dies with the process.
    return { bytes: randomBytes(32), ephemeral: true };
  }
  let bytes: Uint8Array;
  if (typeof secret === 'string') bytes = utf8(secret);
  else if (secret instanceof Uint8Array) bytes = secret;
  else
    throw new SluiceError('ERR_SLUICE_GUARD_SECRET', `Guard 'secret' must be a string or bytes, got ${show(secret)}`);
  if (bytes.length < MIN_SECRET_BYTES) {
    throw new SluiceError(
      'ERR_SLUICE_GUARD_SECRET',
      `Guard 'secret' must be at least ${MIN_SECRET_BYTES} bytes, got ${bytes.length} bytes`,
    );
  }
  return { bytes: Uint8Array.from(bytes), ephemeral: false };
}

function stepUp(v: unknown): GuardConfig['successStepUp'] {
  if (v === undefined) return 'suspicious';
  if (v !== 'off' && v !== 'suspicious' && v !== 'stuffing')
    invalid(`'successStepUp' must be 'off', 'suspicious' or 'stuffing', got ${show(v)}`);
  return v;
}

function weights(o: GuardOptions): SignalWeights {
  const w = o.weights;
  if (w === undefined) return DEFAULT_WEIGHTS;
  if (typeof w !== 'object' || w === null) invalid(`'weights' must be an object, got ${show(w)}`);
  const out: Record<string, number> = { ...DEFAULT_WEIGHTS };
  for (const [k, v] of Object.entries(w)) {
    if (!(k in DEFAULT_WEIGHTS))
      invalid(`unknown 'weights.${k}'; known weights are ${Object.keys(DEFAULT_WEIGHTS).join(', ')}`);
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 100) {
      invalid(`'weights.${k}' must be an integer from 0 to 100, got ${show(v)}`);
    }
    out[k] = v;
  }
  return Object.freeze(out as unknown as SignalWeights);
}

/** Validates `options` and fills in every default. `env` is NODE_ENV, passed in so tests need not set it. */
export function resolveOptions(options: GuardOptions, env: string | undefined): GuardConfig {
  if (typeof options !== 'object' || options === null) invalid(`options must be an object, got ${show(options)}`);
  for (const field of Object.keys(options)) {
    if (!KNOWN.has(field)) invalid(`has no option '${field}'; see docs/guard.md for the list`);
  }
  const o = options;
  const { bytes, ephemeral } = secretBytes(o.secret, env);
  const challenge = check.oneOf(o.challenge ?? 'pow', ['pow', 'captcha'], "Guard 'challenge'");
  const config: GuardConfig = {
    secret: bytes,
    secretIsEphemeral: ephemeral,
    ipv4Subnet: integer(o, 'ipv4Subnet', 24, 1, 32),
    ipv6Subnet: integer(o, 'ipv6Subnet', 64, 1, 128),
    ipv6AddressPrefix: integer(o, 'ipv6AddressPrefix', 64, 1, 128),
    freeFailures: integer(o, 'freeFailures', 3, 0),
    backoffBaseMs: duration(o, 'backoffBase', '1s'),
    backoffMaxMs: duration(o, 'backoffMax', '15m'),
    backoffJitter: fraction(o, 'backoffJitter', 0.25, 0, 1),
    hardStopFailures: integer(o, 'hardStopFailures', 100, 1),
    failureMemoryMs: duration(o, 'failureMemory', '1d'),
    maxDelayMs: duration(o, 'maxDelay', '10s'),
    accountChallengeFailures: integer(o, 'accountChallengeFailures', 5, 1),
    familiarMs: duration(o, 'familiarFor', '30d'),
    maxFamiliarSources: integer(o, 'maxFamiliarSources', 8, 1, 64),
    ipFailuresPerDay: integer(o, 'ipFailuresPerDay', 100, 1),
    subnetFailuresPerDay: integer(o, 'subnetFailuresPerDay', 300, 1),
    pairFailuresPerHour: integer(o, 'pairFailuresPerHour', 10, 1),
    sourceWindowMs: duration(o, 'sourceWindow', '30m'),
    ratioWindowMs: duration(o, 'ratioWindow', '1d'),
    ipDistinctAccounts: integer(o, 'ipDistinctAccounts', 10, 2, 1000),
    longSourceWindowMs: duration(o, 'longSourceWindow', '7d'),
    ipDistinctAccountsLong: integer(o, 'ipDistinctAccountsLong', 2, 2, 1000),
    subnetDistinctAccounts: integer(o, 'subnetDistinctAccounts', 20, 2, 1000),
    fingerprintDistinctAccounts: integer(o, 'fingerprintDistinctAccounts', 5, 2, 1000),
    failureRatio: fraction(o, 'failureRatio', 0.8, 0, 1),
    ratioMinFailures: integer(o, 'ratioMinFailures', 10, 1),
    allowList: cidrList(o, 'allowList'),
    denyList: cidrList(o, 'denyList'),
    hostingRanges: cidrList(o, 'hostingRanges'),
    anomalyBucketMs: duration(o, 'anomalyBucket', '1m'),
    anomalyBaselineBuckets: integer(o, 'anomalyBaselineBuckets', 60, 2),
    anomalyWarmupBuckets: integer(o, 'anomalyWarmupBuckets', 30, 1),
    anomalySigma: fraction(o, 'anomalySigma', 3, 0, 100),
    anomalyMinFailures: integer(o, 'anomalyMinFailures', 10, 1),
    anomalyScope: scope(o.anomalyScope),
    anomalySyncEveryMs: o.anomalySyncEvery === 0 ? 0 : duration(o, 'anomalySyncEvery', '1s'),
    strangerAnomalyBucketMs: duration(o, 'strangerAnomalyBucket', '1h'),
    strangerAnomalyBaselineBuckets: integer(o, 'strangerAnomalyBaselineBuckets', 24, 2),
    strangerAnomalyWarmupBuckets: integer(o, 'strangerAnomalyWarmupBuckets', 12, 1),
    strangerAnomalySigma: fraction(o, 'strangerAnomalySigma', 3, 0, 100),
    strangerAnomalyMinFailures: integer(o, 'strangerAnomalyMinFailures', 10, 1),
    unknownAccountBucketMs: duration(o, 'unknownAccountBucket', '1h'),
    unknownAccountSigma: fraction(o, 'unknownAccountSigma', 4, 0, 100),
    unknownAccountPrior: fraction(o, 'unknownAccountPrior', 0.1, 0, 1),
    strangerMixBucketMs: duration(o, 'strangerMixBucket', '1h'),
    strangerMixSigma: fraction(o, 'strangerMixSigma', 4, 0, 100),
    prooflessBucketMs: duration(o, 'prooflessBucket', '1h'),
    prooflessSigma: fraction(o, 'prooflessSigma', 4, 0, 100),
    prooflessPrior: fraction(o, 'prooflessPrior', 0.5, 0, 1),
    successStepUp: stepUp(o.successStepUp),
    baselineSaveEveryMs: o.baselineSaveEvery === 0 ? 0 : duration(o, 'baselineSaveEvery', '5m'),
    weights: weights(o),
    delayAt: integer(o, 'delayAt', 1, 1),
    challengeAt: integer(o, 'challengeAt', 2, 1),
    mfaAt: integer(o, 'mfaAt', 4, 1),
    blockAt: integer(o, 'blockAt', 6, 1),
    riskDelayMs: duration(o, 'riskDelay', '1s'),
    challenge,
    powDifficulty: integer(o, 'powDifficulty', 16, 1, 64),
    powStep: integer(o, 'powStep', 2, 0, 16),
    powMaxDifficulty: integer(o, 'powMaxDifficulty', 24, 1, 64),
    blockMs: duration(o, 'blockFor', '15m'),
  };
  if (config.backoffMaxMs < config.backoffBaseMs)
    invalid(`'backoffMax' (${config.backoffMaxMs} ms) must be at least 'backoffBase' (${config.backoffBaseMs} ms)`);
  if (!(config.delayAt <= config.challengeAt && config.challengeAt <= config.mfaAt && config.mfaAt <= config.blockAt)) {
    invalid(
      `ladder steps must rise: delayAt (${config.delayAt}) <= challengeAt (${config.challengeAt}) <= mfaAt (${config.mfaAt}) <= blockAt (${config.blockAt})`,
    );
  }
  if (config.powMaxDifficulty < config.powDifficulty)
    invalid(
      `'powMaxDifficulty' (${config.powMaxDifficulty}) must be at least 'powDifficulty' (${config.powDifficulty})`,
    );
  if (config.anomalyWarmupBuckets > 10 * config.anomalyBaselineBuckets)
    invalid(`'anomalyWarmupBuckets' must be at most 10 × 'anomalyBaselineBuckets'`);
  // A timer takes at most 2^31 - 1 ms (longer fires at once, every millisecond), and syncing less often
  // than a bucket lasts would leave whole buckets unshared.
  if (config.anomalySyncEveryMs > Math.min(config.anomalyBucketMs, 2 ** 31 - 1)) {
    invalid(
      `'anomalySyncEvery' must be at most 'anomalyBucket' (${config.anomalyBucketMs} ms), got ${show(o.anomalySyncEvery)}`,
    );
  }
  if (config.longSourceWindowMs < config.sourceWindowMs)
    invalid(
      `'longSourceWindow' (${config.longSourceWindowMs} ms) must be at least 'sourceWindow' (${config.sourceWindowMs} ms)`,
    );
  if (config.strangerAnomalyWarmupBuckets > 10 * config.strangerAnomalyBaselineBuckets)
    invalid(`'strangerAnomalyWarmupBuckets' must be at most 10 × 'strangerAnomalyBaselineBuckets'`);
  return config;
}
