/**
 * The login guard: call `check` before verifying a password and `record` after. It layers independent
 * throttles (per account, per address, per subnet, per account+address pair) with signals that per-key
 * thresholds miss (distinct accounts per source over a short and a long window, failure ratio, a global
 * failure-rate anomaly, an hourly anomaly of failures from unfamiliar sources, IP reputation, fingerprint
 * reuse), and maps them onto the ladder allow → delay → challenge → mfa → block.
 *
 * @example
 * const guard = new Guard({ secret: process.env.GUARD_SECRET, store: new MemoryStore() });
 * const v = await guard.check({ account, ip });
 * if (v.action === 'block') return reply429(v.retryAfterMs);
 * // ... delay, challenge or mfa as v says, then verify the password ...
 * await guard.record({ account, ip, success: ok, password: ok ? undefined : password });
 */
import {
  branded,
  brandOf,
  type Clock,
  coarseClock,
  check,
  compilePolicies,
  type Decision,
  emitWarning,
  isPromise,
  MemoryStore,
  nodeEnv,
  randomUnit,
  show,
  SluiceError,
  type Store,
  unrefTimer,
} from 'sluice/kit';
import { GuardMonitors } from './monitors.js';
import {
  attemptFlags,
  checkOutcome,
  tagAttemptRecalling,
  type AttemptFlags,
  type AttemptTagger,
  type LoginAttempt,
  type LoginOutcome,
  type TaggedAttempt,
} from './attempt.js';
import type { BackoffSchedule } from './backoff.js';
import { KeyedHasher } from './keyed-hash.js';
import { decide, raise, rank, type Floor, type GuardVerdict } from './ladder.js';
import { MemoryGuardState } from './memory-state.js';
import { resolveOptions, type GuardConfig, type GuardOptions } from './options.js';
import { RecentAttempts } from './recent-attempts.js';
import { Reputation } from './reputation.js';
import { judgePath } from './rules.js';
import {
  guardStateOf,
  type GuardState,
  type LoginPort,
  type LoginReads,
  type SourceSpec,
  type SourceView,
} from './state.js';

/** What `guard.record` reports back: whether the failure counted (a repeated wrong password does not). */
export interface RecordResult {
  readonly counted: boolean;
  /** The account's consecutive failures, both paths, after this attempt (a success from a familiar source forgets only its own path's). */
  readonly consecutiveFailures: number;
  /**
   * 'mfa': a correct password on an unfamiliar path while the guard sees stuffing (see `successStepUp`),
   * or with a pair the application found leaked (`leakedCredential`). The login must not complete yet:
   * nothing was recorded; ask for the second factor, then record the success again with
   * `secondFactor: true`. 'allow' otherwise.
   */
  readonly action: 'allow' | 'mfa';
  /**
   * Why a success was stepped up, in the order checked; for 'allow', empty, or `['store-error']` when the
   * guard's shared state could not be written (`counted` then says whether this process kept the failure).
   */
  readonly reasons: readonly string[];
}

/** What check() learnt of a stranger's attempt, kept for its record() (the same tagged attempt). */
interface CheckedPath {
  readonly familiar: boolean;
  readonly unfamiliarFailures: number;
  readonly ipSource: SourceView | undefined;
  readonly netSource: SourceView | undefined;
  /** Whether the checked attempt came with a proof (of work, or a CAPTCHA). */
  readonly proof: boolean;
}

const NO_REASONS: readonly string[] = Object.freeze([]);
const ALLOWED = (consecutiveFailures: number, counted = false): RecordResult => ({
  counted,
  consecutiveFailures,
  action: 'allow',
  reasons: NO_REASONS,
});
/**
 * The reason of a verdict or record made without the guard's shared state (its Redis did not answer): an
 * application logs it and alerts on it. The RedisStore's decisions say the same in `reason`.
 */
export const STORE_ERROR_REASON = 'store-error';
const OFFLINE_REASONS: readonly string[] = Object.freeze([STORE_ERROR_REASON]);
/** A record made without the shared state: `counted` only where this process kept it (onError 'local'). */
const WITHOUT_STORE = (consecutiveFailures: number, counted: boolean): RecordResult => ({
  counted,
  consecutiveFailures,
  action: 'allow',
  reasons: OFFLINE_REASONS,
});

/** The largest distinct-accounts set any source needs: one past the highest threshold. */
function distinctCap(c: GuardConfig): number {
  return (
    Math.max(c.ipDistinctAccounts, c.ipDistinctAccountsLong, c.subnetDistinctAccounts, c.fingerprintDistinctAccounts) +
    1
  );
}

let warnedEphemeral = false;

export class Guard {
  readonly config: GuardConfig;
  readonly state: GuardState;
  readonly store: Store;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly hasher: KeyedHasher;
  private readonly tagger: AttemptTagger;
  /** The tags of attempts checked and not yet recorded: record() finds check()'s instead of tagging again. */
  private readonly recent = new RecentAttempts();
  /** What check() judged of each attempt it saw, for record()'s step-up at success (dies with the tags). */
  private readonly checked = new WeakMap<TaggedAttempt, CheckedPath>();
  private readonly monitors: GuardMonitors;
  /** The state as the guard decides on it: each login's reads and writes whole (state.ts, LoginPort). */
  private readonly login: LoginPort;
  /** With `anomalyScope: 'fleet'`: the timer that shares the anomaly counts (unref'd; close() stops it). */
  private syncTimer: ReturnType<typeof setInterval> | undefined;

  /**
   * The guard state `store` keeps beside its buckets, if any. Here: a store's own (GuardStateSource). The
   * Guard of `@sluice/guard` on Node (node.ts) also builds the Redis state for a RedisStore: it imports it,
   * rather than the state registering itself when loaded, which a bundler believing `sideEffects: false`
   * would drop. This one (Workers, browsers) cannot load that state and says so rather than keep the
   * guard's records in one process while the buckets are shared.
   */
  protected static stateFor(store: unknown): GuardState | undefined {
    if (branded(store, brandOf('RedisStore')) && guardStateOf(store) === undefined) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `Guard 'store' is a RedisStore, whose guard state (RedisGuardState) loads only on Node, Bun and Deno ('@sluice/guard' under the "node" condition); there, pass it or the store as you do, or give this guard an explicit 'state'`,
      );
    }
    return guardStateOf(store);
  }

  constructor(options: GuardOptions) {
    this.config = resolveOptions(options, nodeEnv());
    const c = this.config;
    if (c.secretIsEphemeral && !warnedEphemeral) {
      warnedEphemeral = true;
      emitWarning(
        'Guard has no secret, so it made a random one: its state will not survive a restart nor be shared between servers. Pass `secret` (required when NODE_ENV=production).',
        { code: 'WRN_SLUICE_GUARD_EPHEMERAL_SECRET' },
      );
    }
    this.clock = check.function(options.clock ?? coarseClock, "Guard 'clock'", { note: 'returning milliseconds' });
    this.random = check.function(options.random ?? randomUnit, "Guard 'random'", { note: 'returning [0, 1)' });
    this.store = options.store ?? new MemoryStore();
    // An explicit state wins; else the store's own (a RedisStore: the guard's Redis state on its client); else memory.
    this.state = options.state ?? (this.constructor as typeof Guard).stateFor(this.store) ?? new MemoryGuardState();
    if (typeof this.state !== 'object' || this.state === null || typeof this.state.loginPort !== 'function') {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `Guard 'state' must be a GuardState such as new MemoryGuardState(), got ${show(this.state)}`,
      );
    }
    this.hasher = new KeyedHasher(c.secret);
    const reputation = new Reputation(c.allowList, c.denyList, c.hostingRanges);
    if (c.ipv6AddressPrefix < c.ipv6Subnet) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `Guard 'ipv6AddressPrefix' ${c.ipv6AddressPrefix} must be at least 'ipv6Subnet' ${c.ipv6Subnet}: an address is never wider than its subnet`,
      );
    }
    this.tagger = {
      hasher: this.hasher,
      reputation,
      ipv4Subnet: c.ipv4Subnet,
      ipv6Subnet: c.ipv6Subnet,
      ipv6AddressPrefix: c.ipv6AddressPrefix,
    };
    this.monitors = new GuardMonitors(c, this.state);
    if (c.anomalyScope === 'fleet') {
      if (typeof this.state.shareFailures !== 'function') {
        throw new SluiceError(
          'ERR_SLUICE_INVALID_OPTION',
          `Guard 'anomalyScope' 'fleet' needs a state that shares failure counts (a RedisStore's, or one MemoryGuardState given to every guard); this state has no shareFailures()`,
        );
      }
    }
    if (typeof this.store !== 'object' || this.store === null || typeof this.store.bind !== 'function') {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `Guard 'store' must be a sluice store such as new MemoryStore(), got ${show(this.store)}`,
      );
    }
    const policy = (name: string, limit: number, window: string) =>
      compilePolicies([{ name, algorithm: 'token-bucket', limit, window }])[0]!;
    const ip = policy('guard-ip', c.ipFailuresPerDay, '1d');
    const subnet = policy('guard-subnet', c.subnetFailuresPerDay, '1d');
    const pair = policy('guard-pair', c.pairFailuresPerHour, '1h');
    const backoff: BackoffSchedule = {
      freeFailures: c.freeFailures,
      baseMs: c.backoffBaseMs,
      maxMs: c.backoffMaxMs,
      jitter: c.backoffJitter,
    };
    const spec: SourceSpec = {
      distinctWindowMs: c.sourceWindowMs,
      longDistinctWindowMs: c.longSourceWindowMs,
      ratioWindowMs: c.ratioWindowMs,
      maxDistinct: distinctCap(c),
    };
    const config = {
      spec,
      memoryMs: c.failureMemoryMs,
      familiarMs: c.familiarMs,
      maxFamiliar: c.maxFamiliarSources,
      backoff,
    };
    // The state's own port: the memory state's keeps the buckets in the store's tables (bound as a Limiter
    // binds its policies, so a MemoryStore answers without a Promise); the Redis state's, beside its records.
    this.login = this.state.loginPort(this.store, { ...config, ip, subnet, pair, clock: this.clock });
    // Last, once nothing above can throw: a guard that failed to construct leaves no timer behind.
    if (c.anomalyScope === 'fleet' && c.anomalySyncEveryMs > 0) {
      this.syncTimer = setInterval(() => void this.syncAnomaly(), c.anomalySyncEveryMs);
      unrefTimer(this.syncTimer);
    }
  }

  /**
   * Decides what to do with a login attempt before its password is verified. It changes no account state
   * and charges no bucket; a stranger's attempt that it refuses (challenge or worse) counts as a failure of
   * its address, subnet and fingerprint (the distinct-accounts sets and the failure ratio) and of the global
   * failure rate, because a refused attempt never reaches `record`. A stranger whose account+password pair
   * is leaked (`leakedCredential: true`) is asked for at least MFA.
   */
  async check(attempt: LoginAttempt): Promise<GuardVerdict> {
    const t = tagAttemptRecalling('check', attempt, this.tagger, this.recent);
    const flags = attemptFlags('check', attempt);
    const now = this.clock();
    const maintained = this.monitors.maintain(now);
    if (maintained !== undefined) await maintained;
    // Every read in one operation (the per-source ones only for a stranger): on Redis one round trip.
    const reads = this.login.read(t, now, !t.standing.allowed);
    return this.verdict(t, now, isPromise(reads) ? await reads : reads, flags);
  }

  /**
   * The verdict from check()'s reads (the per-source ones are ignored for a familiar or allow-listed
   * source). `flags`: what the attempt says of itself (a leaked pair, a proof).
   */
  private async verdict(t: TaggedAttempt, now: number, reads: LoginReads, flags: AttemptFlags): Promise<GuardVerdict> {
    const c = this.config;
    const standing = t.standing;
    const reasons: string[] = [];
    // Judged without the shared state, or with buckets its store answered by its failure policy: said
    // first, whatever the action (an outage must show in the verdicts an application logs).
    if (reads.offline === true || isStoreError(reads.pair) || isStoreError(reads.ip) || isStoreError(reads.subnet))
      reasons.push(STORE_ERROR_REASON);
    const floor: Floor = { action: 'allow', delayMs: 0, retryAfterMs: 0 };
    if (standing.denied) {
      reasons.push('ip-deny-list');
      raise(floor, 'block', c.blockMs);
    }
    // Hard throttles. A familiar source skips the per-source ones: it has logged in to this account before,
    // and the account's owner must keep a way in while strangers hammer the account or share the address.
    const account = reads.account;
    const familiar = judgePath(account, t.sources) === 'familiar';
    const stranger = !familiar && !standing.allowed;
    const { pair } = reads;
    const { ip, subnet: net, ipSource, netSource, fingerprintSource: fpSource } = stranger ? reads : NOT_READ;
    if (!standing.allowed) this.monitors.strangerMix.note(now, stranger);
    this.checked.set(t, {
      familiar,
      unfamiliarFailures: account?.unfamiliarFailures ?? 0,
      ipSource,
      netSource,
      proof: flags.proof !== undefined,
    });
    let risk = 0;
    let globalRisk = 0;
    if (ip !== undefined && exhausted(ip)) {
      reasons.push('ip-failures');
      raise(floor, 'block', untilOneToken(ip, c.ipFailuresPerDay, 86_400_000));
    }
    if (net !== undefined && exhausted(net)) {
      reasons.push('subnet-failures');
      raise(floor, 'block', untilOneToken(net, c.subnetFailuresPerDay, 86_400_000));
    }
    if (pair !== undefined && exhausted(pair)) {
      reasons.push('pair-failures');
      raise(floor, 'block', untilOneToken(pair, c.pairFailuresPerHour, 3_600_000));
    }
    if (account !== undefined) {
      const total = account.familiarFailures + account.unfamiliarFailures;
      if (total >= c.hardStopFailures) {
        reasons.push('account-hard-stop');
        // The owner steps up instead of being locked out; strangers wait until the failures are forgotten.
        if (familiar) raise(floor, 'mfa', 0);
        else raise(floor, 'block', Math.max(1, account.lastFailureAt + c.failureMemoryMs - now));
      }
      const lockedUntil = familiar ? account.familiarLockedUntil : account.unfamiliarLockedUntil;
      const waitMs = lockedUntil - now;
      if (waitMs > 0) {
        reasons.push('account-backoff');
        raise(floor, waitMs <= c.maxDelayMs ? 'delay' : 'block', waitMs);
      }
      // Each path is judged by its own counter (as Entra's smart lockout), so strangers' failures never
      // push the owner's path up the ladder; the owner's own run of failures does.
      if ((familiar ? account.familiarFailures : account.unfamiliarFailures) >= c.accountChallengeFailures) {
        reasons.push('account-failures');
        risk += c.weights.accountFailures;
      }
    }

    // Signals: risk points, for unfamiliar sources outside the allow list.
    if (stranger) {
      const w = c.weights;
      // A leaked account+password pair on a stranger's path is a floor of 'mfa', not risk points. It is a
      // fact about this attempt's own pair (attackers hold it), not a degree of suspicion to add up: a
      // challenge below MFA is what a paid solver passes, so points short of `mfaAt` would let a stuffer
      // with a valid pair through, and so would an operator's raised `mfaAt`. A floor is also exactly "at
      // least MFA, never a block by itself": the pair's owner, met on a new network, has the second factor
      // and must not be locked out. The attempt's other signals still climb above it, and none of it is
      // global evidence (no monitor reads the flag). A familiar path never meets it: the owner at home with
      // a leaked password is told to change it by the application, not stepped up.
      if (flags.leaked) {
        reasons.push('leaked-credential');
        raise(floor, 'mfa', 0);
      }
      if (ipSource !== undefined && ipSource.distinctFailedAccounts >= c.ipDistinctAccounts) {
        reasons.push('ip-distinct-accounts');
        risk += w.ipDistinctAccounts;
      } else if (
        ipSource !== undefined &&
        ipSource.distinctFailedAccountsLong >= c.ipDistinctAccountsLong &&
        !vouched(ipSource)
      ) {
        // The same evidence over a day, for a source too slow for the short window; not counted twice.
        reasons.push('ip-distinct-accounts-long');
        risk += w.ipDistinctAccountsLong;
      }
      // A source that also lets real users in (its successes, as many as the accounts failing from it) is a
      // shared network, not a sprayer: carrier-grade NAT puts thousands behind one /24, a household's NAT a
      // few behind one address. Only the short distinct-accounts count (ten in half an hour) outweighs it.
      if (
        netSource !== undefined &&
        netSource.distinctFailedAccounts >= c.subnetDistinctAccounts &&
        !vouched(netSource)
      ) {
        reasons.push('subnet-distinct-accounts');
        risk += w.subnetDistinctAccounts;
      }
      if (fpSource !== undefined && fpSource.distinctFailedAccounts >= c.fingerprintDistinctAccounts) {
        reasons.push('fingerprint-reuse');
        risk += w.fingerprintReuse;
      }
      if (
        (this.highRatio(ipSource) && !vouched(ipSource!)) ||
        (this.highRatio(netSource) && !vouched(netSource!)) ||
        this.highRatio(fpSource)
      ) {
        reasons.push('failure-ratio');
        risk += w.failureRatio;
      }
      if (standing.hosting) {
        reasons.push('hosting-provider');
        risk += w.hostingProvider;
      }
      // The share of strangers without a proof is the proofless monitor's; an attempt that is one of them
      // while it is anomalous is evidence of its own (a scripted client in a run of them), which the
      // global evidence alone is not: a stranger with a proof meets only the latter.
      this.monitors.noteProof(now, flags.proof !== undefined);
      if (flags.proof === undefined && this.monitors.prooflessAnomalous(now)) {
        reasons.push('no-proof');
        risk += w.noProof;
      }
      const evidence = this.monitors.evidence(now);
      for (const r of evidence.reasons) reasons.push(r);
      risk += evidence.risk;
      globalRisk = evidence.risk;
    }
    const verdict = metByProof(c, decide(c, floor, risk, reasons, globalRisk), flags.proof);
    // A refused attempt never reaches record(), so an attack that is being refused would drop out of the
    // failure rate and its sources' counts, end the signals, get through again, and so oscillate. A
    // stranger refused (challenge or worse) counts as a failure of its sources and of the global and
    // stranger failure rates. A stranger stepped up for a leaked pair counts as well: a stuffing run refused
    // by its pairs then stays in the failure rates and in its proxies' distinct-account sets, so the signals
    // that catch the pairs a corpus lacks still see the run. The owner of a leaked pair, stepped up on a new
    // network, leaves one failure there for their own account, which their success after the second factor
    // outweighs (the source is then vouched for: as many successes as accounts failing from it).
    if (!familiar && rank(verdict.action) >= rank('challenge')) {
      this.monitors.noteFailure(now, true);
      if (!standing.allowed) {
        const noted = this.login.refuse(t, now);
        if (isPromise(noted)) await noted;
      }
    }
    return verdict;
  }

  /** Records the outcome of a verified attempt. Pass the wrong `password` on failure so repeats are not counted. */
  async record(outcome: LoginOutcome): Promise<RecordResult> {
    const t = tagAttemptRecalling('record', outcome, this.tagger, this.recent);
    checkOutcome(outcome);
    const flags = attemptFlags('record', outcome);
    const now = this.clock();
    const maintained = this.monitors.maintain(now);
    if (maintained !== undefined) await maintained;
    if (!t.standing.allowed && outcome.secondFactor !== true)
      this.monitors.unknownAccounts.note(now, !outcome.success && outcome.accountExists === false);
    if (
      outcome.success &&
      outcome.secondFactor !== true &&
      this.config.successStepUp !== 'off' &&
      !t.standing.allowed
    ) {
      const stepUp = await this.stepUpAtSuccess(t, now, flags);
      if (stepUp !== undefined) return stepUp;
    }
    if (outcome.success) {
      const judged = await this.login.succeed(t, now, this.checked.get(t)?.familiar);
      this.monitors.noteSuccess(now);
      const before = judged.path === 'familiar' ? judged.unfamiliarFailuresBefore : 0;
      return judged.offline === true ? WITHOUT_STORE(before, false) : ALLOWED(before);
    }
    const passwordTag =
      outcome.password === undefined ? undefined : this.hasher.passwordTag(t.account, outcome.password);
    const failed = await this.login.fail(t, passwordTag, this.random, now);
    // A failure the state could not keep still happened: the monitors count it; `counted` says where it was kept.
    if (failed.offline === true) {
      this.monitors.noteFailure(now, failed.path === 'unfamiliar');
      return WITHOUT_STORE(failed.total, failed.counted);
    }
    if (!failed.counted) return ALLOWED(failed.total);
    this.monitors.noteFailure(now, failed.path === 'unfamiliar');
    return ALLOWED(failed.total, true);
  }

  /**
   * Risk at the moment of success: a correct password is where a takeover happens. A success on an
   * unfamiliar path while the monitors see stuffing is stepped up (see `successStepUp`), and so is one
   * whose pair the application found leaked (`flags.leaked`), whatever the monitors see; nothing of it is
   * written: the attacker's source does not become familiar, the pair lane is not cleared. What check()
   * learnt of the attempt is used when this process checked it; otherwise the account and the sources are
   * read, one round trip, and only while there is evidence of stuffing or a leaked pair.
   */
  private async stepUpAtSuccess(t: TaggedAttempt, now: number, flags: AttemptFlags): Promise<RecordResult | undefined> {
    const c = this.config;
    const leaked = flags.leaked;
    const evidence = this.monitors.evidence(now);
    if (evidence.reasons.length === 0 && !leaked) return undefined;
    const seen = this.checked.get(t) ?? (await this.readPath(t, now));
    if (seen.familiar) return undefined;
    // The attempt's own evidence. An address that failed on another account within the long window is a
    // proxy come back with a valid pair: a slow stuffer uses each address a few times a week. A subnet
    // holds many customers, so it takes two. The account's own strangers' failures may have come from
    // this source (the person's typos just before), so one failed account is taken off for them. A
    // hosting provider is not where people log in from.
    const own: string[] = [];
    if (seen.unfamiliarFailures > 0) own.push('account-stranger-failures');
    const elsewhere = (s: SourceView | undefined, least: number) =>
      s !== undefined && s.distinctFailedAccountsLong - (seen.unfamiliarFailures > 0 ? 1 : 0) >= least && !vouched(s);
    if (elsewhere(seen.ipSource, 1) || elsewhere(seen.netSource, 2)) own.push('source-failed-elsewhere');
    if (t.standing.hosting) own.push('hosting-provider');
    // A success with no proof (neither at its check nor now) while strangers without one are anomalously
    // many: a scripted client in the run, whose password the leak gave it.
    if (flags.proof === undefined && !seen.proof && this.monitors.prooflessAnomalous(now)) own.push('no-proof');
    // A leaked pair that works is a takeover whether or not the monitors see a run: a slow stuffer's pairs
    // arrive one at a time, and an application that learns of the leak only after verifying the password
    // (an in-house corpus keyed by the password's hash) has had no say at check().
    if (leaked)
      return {
        counted: false,
        consecutiveFailures: seen.unfamiliarFailures,
        action: 'mfa',
        reasons: ['stranger-success', 'leaked-credential', ...evidence.reasons, ...own],
      };
    // Strangers' failures on the account alone are the owner's misfortune as often as an attack: with no
    // evidence on the attempt itself, 'suspicious' lets the owner in, unless a wave is failing right now
    // (the global failure anomaly, minutes long), when a prompt costs few and a takeover is likeliest.
    const loud = evidence.reasons.includes('global-failure-anomaly');
    if (c.successStepUp === 'suspicious' && !loud && !own.some((r) => r !== 'account-stranger-failures'))
      return undefined;
    return {
      counted: false,
      consecutiveFailures: seen.unfamiliarFailures,
      action: 'mfa',
      reasons: ['stranger-success', ...evidence.reasons, ...own],
    };
  }

  /** check()'s judgement of an attempt this process did not check: the account and its sources, read. */
  private async readPath(t: TaggedAttempt, now: number): Promise<CheckedPath> {
    const read = this.login.read(t, now, true, false);
    const reads = isPromise(read) ? await read : read;
    return {
      familiar: judgePath(reads.account, t.sources) === 'familiar',
      unfamiliarFailures: reads.account?.unfamiliarFailures ?? 0,
      ipSource: reads.ipSource,
      netSource: reads.netSource,
      proof: false,
    };
  }

  /**
   * With `anomalyScope: 'fleet'`: adds this guard's failures to the shared counts and reads the fleet's
   * totals back, for both monitors (the timer calls it every `anomalySyncEvery`). If the state fails, the
   * counts are kept for the next call and the monitors go on with their own count and the last total read.
   */
  async syncAnomaly(): Promise<void> {
    await this.monitors.sync(this.clock());
  }

  /** Stops the timer of `anomalyScope: 'fleet'` (it never keeps a process alive, being unref'd). */
  close(): void {
    if (this.syncTimer !== undefined) clearInterval(this.syncTimer);
    this.syncTimer = undefined;
  }

  /** Whether global failures are anomalous now (for dashboards and the simulator). */
  anomalous(): boolean {
    return this.monitors.failures.anomalous(this.clock());
  }

  /** Failures in the current global anomaly bucket, as this guard knows them (the fleet's with `anomalyScope: 'fleet'`). */
  failuresThisBucket(): number {
    return this.monitors.failures.currentCount(this.clock());
  }

  private highRatio(s: SourceView | undefined): boolean {
    if (s === undefined || s.failures < this.config.ratioMinFailures) return false;
    return s.failures / (s.failures + s.successes) >= this.config.failureRatio;
  }
}

/**
 * A challenge the attempt has met already: a proof of work at no more than the base difficulty (the one a
 * login page solves in the background, at `powDifficulty`), or a solved CAPTCHA (which meets any). It goes
 * on as it would have once solved, with `challenge-met` among its reasons: the person never saw it, and a
 * scripted client that brought no proof still meets it. A harder challenge (more risk) is not met.
 */
function metByProof(c: GuardConfig, v: GuardVerdict, proof: 'pow' | 'captcha' | undefined): GuardVerdict {
  if (v.action !== 'challenge' || proof === undefined) return v;
  // A solved CAPTCHA meets any challenge; a proof of work, one no harder than the base.
  const met =
    proof === 'captcha' || (v.challenge !== 'captcha' && v.challenge !== undefined && v.challenge <= c.powDifficulty);
  if (!met) return v;
  return {
    ...v,
    action: v.delayMs > 0 ? 'delay' : 'allow',
    challenge: undefined,
    reasons: [...v.reasons, 'challenge-met'],
  };
}

/** A bucket's peek answered by its store's failure policy rather than by the store. */
function isStoreError(d: Decision | undefined): boolean {
  return d !== undefined && d.reason === STORE_ERROR_REASON;
}

/** A source with as many successes as accounts failing from it: real users share it (see check). */
function vouched(s: SourceView): boolean {
  return s.successes >= Math.max(1, s.distinctFailedAccounts);
}

/** The per-source reads as check() takes them for a familiar or allow-listed source: none. */
const NOT_READ = {
  ip: undefined,
  subnet: undefined,
  ipSource: undefined,
  netSource: undefined,
  fingerprintSource: undefined,
} as const;

/**
 * Whether a peeked bucket has no whole token left. A store that could not answer says so by its failure
 * policy (RedisStore, `reason: 'store-error'`): fail-open is "allowed, remaining 0, resetAfterMs 0" by
 * contract, which must not read as an empty bucket here, or an outage would block every stranger. A real
 * empty bucket always has a refill time, so `resetAfterMs` 0 tells them apart; fail-closed is denied.
 */
function exhausted(d: Decision): boolean {
  if (d.remaining >= 1) return false;
  return !(d.allowed && d.resetAfterMs === 0);
}

/**
 * From a peeked token-bucket decision with no whole token left: the wait until one token is back. The
 * decision's resetAfterMs is the time to refill the whole deficit; one token is (burst − 1) tokens sooner.
 */
function untilOneToken(d: Decision, limit: number, windowMs: number): number {
  if (d.resetAfterMs === 0) return Math.max(1, d.retryAfterMs); // a fail-closed store: its own retry time
  return Math.max(1, Math.ceil(d.resetAfterMs - ((limit - 1) * windowMs) / limit));
}
