// Plays one attack mixed into a day (or a week) of legitimate logins through a Guard on a simulated
// clock, after three warm-up days that teach the guard its users' homes and the normal failure rates.
import { MemoryStore, randomInt, seededRandom } from 'sluice/kit';
import { Guard, MemoryGuardState, type GuardOptions, type GuardVerdict } from '@sluice/guard';
import type { Attack, AttackAttempt } from './attacks.js';
import { EventHeap } from './heap.js';
import { makeSession, type PopulationSettings, type Session, type User } from './population.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** The grace period: attempts in the attack's first 5 minutes are not held to the 99% target. */
const GRACE_MS = 5 * 60_000;
/** A blocked legitimate user tries again after retryAfterMs, this many times at most, then gives up. */
const MAX_LEGIT_RETRIES = 3;
/**
 * Days of legitimate traffic only, before the measured period, not counted in the results. A guard meets
 * an attack after it has run for a while: it has learnt its users' familiar sources and the normal rate of
 * failures. Its first day is a fresh deployment's, when every user is a stranger on the first login, which
 * the hourly stranger-failure baseline takes about two days to forget (EWMA over 24 buckets).
 */
const DEFAULT_WARMUP_DAYS = 3;
/** The attack starts this far into the measured period. */
const DEFAULT_ATTACK_OFFSET = 6 * HOUR;
/** A simulated epoch start, aligned to nothing in particular. */
const EPOCH = 1_750_000_000_000;
/** With several servers and anomalyScope 'fleet': how often they share their anomaly counts (the default '1s'). */
const SYNC_MS = 1000;

/** A login page's proof of work, verified by the application. */
const POW = { proof: 'pow' } as const;
/** What a user's client adds to an attempt: the page's proof of work, if it runs the page's script. */
const proofOf = (u: User) => (u.proofs ? POW : {});

export interface ScenarioResult {
  readonly name: string;
  readonly description: string;
  /** Attacker attempts made (an attacker stops on an account it got into). */
  readonly attempts: number;
  /** Attacker attempts that reached password verification (allowed, or delayed and then let through). */
  readonly through: number;
  /** Attacker attempts after the first 5 minutes, and those of them met with a challenge, MFA or a block. */
  readonly afterGrace: number;
  readonly refusedAfterGrace: number;
  readonly compromised: number;
  /** Attacker attempts with a valid pair that record() stepped up at success (a takeover stopped there). */
  readonly stoppedAtSuccess: number;
  /** What the same attempts would have compromised with no guard. */
  readonly compromisedNoGuard: number;
  /** From the attack's first attempt to its first refused one; undefined if none was refused. */
  readonly detectionMs: number | undefined;
  readonly legitUsers: number;
  readonly legitDelayed: number;
  readonly legitChallenged: number;
  readonly legitSteppedUp: number;
  /** Of those, stepped up by record() at success (a correct password on an unfamiliar path during stuffing). */
  readonly legitSteppedUpAtSuccess: number;
  /** Users challenged or stepped up, each counted once (issue 30's bound: at most 1%). */
  readonly legitChallengedOrSteppedUp: number;
  readonly legitBlocked: number;
  /** Legitimate users who never got in. */
  readonly legitLockedOut: number;
  readonly decisions: number;
  /** Why legitimate users were hindered: reason → attempts that named it. */
  readonly legitReasons: ReadonlyMap<string, number>;
  /** Why attacker attempts were refused: reason → refused attempts that named it. */
  readonly attackReasons: ReadonlyMap<string, number>;
}

/** How a run is set up beyond the guard's options. */
export interface RunSettings {
  /** App servers sharing the guard's state and store. Default 1. */
  readonly servers?: number;
  /** Days of legitimate traffic before the measured period; 0 is a fresh guard meeting the attack. Default 3. */
  readonly warmupDays?: number;
  /** When the attack starts into the measured period. Default 6 h. */
  readonly attackOffsetMs?: number;
  /**
   * Share of the attacker's attempts that carry the login page's proof of work (its tooling runs the page's
   * script, or pays for the work). Default 0: this attacker solves no challenge, and a proof is one.
   */
  readonly attackerProofShare?: number;
}

type Event =
  | { t: number; seq: number; kind: 'legit'; s: Session; step: number; retries: number; measured: boolean }
  | {
      t: number;
      seq: number;
      kind: 'legit-verify';
      s: Session;
      step: number;
      measured: boolean;
      server: number;
      passedMfa: boolean;
    }
  | { t: number; seq: number; kind: 'attack'; a: AttackAttempt; proof: boolean }
  | { t: number; seq: number; kind: 'attack-verify'; a: AttackAttempt; server: number; proof: boolean };

export async function runScenario(
  attack: Attack,
  users: readonly User[],
  population: PopulationSettings,
  seed: number,
  guardOptions: GuardOptions = {},
  settings: RunSettings = {},
): Promise<ScenarioResult> {
  const servers = settings.servers ?? 1;
  const WARMUP_DAYS = settings.warmupDays ?? DEFAULT_WARMUP_DAYS;
  const ATTACK_OFFSET = settings.attackOffsetMs ?? DEFAULT_ATTACK_OFFSET;
  const random = seededRandom(seed);
  let now = EPOCH;
  // N app servers on one shared state and store, as N processes on one Redis: each login goes to the next
  // server in turn. What differs between them is only what is per process: the anomaly monitors, unless
  // anomalyScope is 'fleet', whose counts are then shared every simulated second (SYNC_MS).
  const store = new MemoryStore({ maxKeys: 4_000_000 });
  const state = new MemoryGuardState();
  const fleet = Array.from(
    { length: servers },
    (_, i) =>
      new Guard({
        secret: 'simulator-secret-not-for-production',
        store,
        state,
        clock: () => now,
        random: seededRandom(seed ^ (0x5eed + i)),
        anomalySyncEvery: 0,
        ...guardOptions,
      }),
  );
  // Logins go to the servers in turn; a login's check and its record go to the same one.
  let turn = 0;
  const next = () => turn++ % servers;
  let nextSync = EPOCH;
  const heap = new EventHeap<Event>();
  const start = EPOCH + WARMUP_DAYS * DAY; // the warm-up days come first
  const days = attack.days;
  for (let day = 0; day < WARMUP_DAYS + days; day++) {
    const measured = day >= WARMUP_DAYS;
    for (let u = 0; u < users.length; u++) {
      for (let k = 0; k < population.sessionsPerDay; k++) {
        const t = EPOCH + day * DAY + randomInt(random, 0, DAY - 1);
        const s = makeSession(population, users, u, random);
        heap.push({ t, seq: 0, kind: 'legit', s, step: s.wrongAccount === undefined ? 0 : -1, retries: 0, measured });
      }
    }
  }
  const attackStart = start + ATTACK_OFFSET;
  // Which attempts carry a proof: a stream of its own, so that the share changes nothing else.
  const proofRandom = seededRandom(seed ^ 0x9f00f);
  const attackerProofShare = settings.attackerProofShare ?? 0;
  for (const a of attack.attempts)
    heap.push({ t: attackStart + a.at, seq: 0, kind: 'attack', a, proof: proofRandom() < attackerProofShare });

  const delayed = new Set<number>();
  const challenged = new Set<number>();
  const steppedUp = new Set<number>();
  const steppedUpAtSuccess = new Set<number>();
  const known = new Set(users.map((u) => u.account));
  // Users whose real account+password pair the defender's corpus holds: those the population says, and
  // those whose pair a stuffer holds when the corpus has that pair too (it is the same leak). Their logins
  // with the real password carry leakedCredential: true, as the application's corpus lookup would say.
  const leakedAccounts = new Set(users.filter((u) => u.leakedPair).map((u) => u.account));
  for (const a of attack.attempts) if (a.valid && a.leaked) leakedAccounts.add(a.account);
  let stoppedAtSuccess = 0;
  const blocked = new Set<number>();
  const lockedOut = new Set<number>();
  const active = new Set<number>();
  const compromised = new Set<string>();
  const validAccounts = new Set(attack.attempts.filter((a) => a.valid).map((a) => a.account));
  let through = 0;
  let made = 0;
  let afterGrace = 0;
  let refusedAfterGrace = 0;
  let firstRefused: number | undefined;
  let decisions = 0;

  const legitReasons = new Map<string, number>();
  const attackReasons = new Map<string, number>();
  const tally = (v: GuardVerdict, user: number) => {
    if (v.action !== 'allow') for (const r of v.reasons) legitReasons.set(r, (legitReasons.get(r) ?? 0) + 1);
    if (v.action === 'delay') delayed.add(user);
    else if (v.action === 'challenge') challenged.add(user);
    else if (v.action === 'mfa') steppedUp.add(user);
    else if (v.action === 'block') blocked.add(user);
  };

  for (let e = heap.pop(); e !== undefined; e = heap.pop()) {
    now = e.t;
    if (now >= nextSync && servers > 1) {
      for (const g of fleet) await g.syncAnomaly(); // nothing unless anomalyScope is 'fleet'
      nextSync = now + SYNC_MS;
    }
    switch (e.kind) {
      case 'legit': {
        const { s } = e;
        const u = users[s.user]!;
        const server = next();
        const account = e.step < 0 ? s.wrongAccount! : u.account;
        // Only the real password on the real account is a leaked pair; a typo or a mistyped name is not.
        const leakedCredential = e.step >= 0 && s.typos[e.step] === undefined && leakedAccounts.has(u.account);
        const v = await fleet[server]!.check({
          account,
          ip: s.ip,
          fingerprint: s.fingerprint,
          leakedCredential,
          ...proofOf(u),
        });
        decisions++;
        if (e.measured) {
          active.add(s.user);
          tally(v, s.user);
        }
        if (v.action === 'block') {
          if (e.retries < MAX_LEGIT_RETRIES) heap.push({ ...e, t: e.t + v.retryAfterMs, retries: e.retries + 1 });
          else if (e.measured) lockedOut.add(s.user);
          break;
        }
        // A person solves the challenge or the MFA prompt, waits out the delay, and the password is checked.
        heap.push({
          t: e.t + v.delayMs,
          seq: 0,
          kind: 'legit-verify',
          s,
          step: e.step,
          measured: e.measured,
          server,
          passedMfa: v.action === 'mfa',
        });
        break;
      }
      case 'legit-verify': {
        const { s } = e;
        const u = users[s.user]!;
        const typo = s.typos[e.step];
        if (e.step < 0) {
          // The name typed does not exist: a failure the application reports as such, then the real name.
          await fleet[e.server]!.record({
            account: s.wrongAccount!,
            ip: s.ip,
            fingerprint: s.fingerprint,
            success: false,
            password: u.password,
            accountExists: false,
            ...proofOf(u),
          });
          heap.push({
            t: e.t + randomInt(random, 3_000, 15_000),
            seq: 0,
            kind: 'legit',
            s,
            step: 0,
            retries: 0,
            measured: e.measured,
          });
        } else if (typo === undefined) {
          const leakedCredential = leakedAccounts.has(u.account);
          // A person who passed the MFA check() asked for has passed the second factor of this login, and
          // the application says so (as the demo does), rather than asking for it again at success.
          const r = await fleet[e.server]!.record({
            account: u.account,
            ip: s.ip,
            fingerprint: s.fingerprint,
            success: true,
            leakedCredential,
            ...proofOf(u),
            ...(e.passedMfa ? { secondFactor: true } : {}),
          });
          if (r.action === 'mfa') {
            // Stepped up at success: the person passes the second factor, and the login completes.
            if (e.measured) {
              steppedUp.add(s.user);
              steppedUpAtSuccess.add(s.user);
              for (const reason of r.reasons) legitReasons.set(reason, (legitReasons.get(reason) ?? 0) + 1);
            }
            await fleet[e.server]!.record({
              account: u.account,
              ip: s.ip,
              fingerprint: s.fingerprint,
              success: true,
              secondFactor: true,
              leakedCredential,
              ...proofOf(u),
            });
          }
        } else {
          await fleet[e.server]!.record({
            account: u.account,
            ip: s.ip,
            fingerprint: s.fingerprint,
            success: false,
            password: typo,
            ...proofOf(u),
          });
          heap.push({
            t: e.t + randomInt(random, 3_000, 15_000),
            seq: 0,
            kind: 'legit',
            s,
            step: e.step + 1,
            retries: 0,
            measured: e.measured,
          });
        }
        break;
      }
      case 'attack': {
        // An attacker stops on an account once in: later guesses there would measure nothing.
        if (compromised.has(e.a.account)) break;
        made++;
        const server = next();
        const v = await fleet[server]!.check({
          account: e.a.account,
          ip: e.a.ip,
          leakedCredential: e.a.leaked,
          ...(e.proof ? POW : {}),
        });
        decisions++;
        const refused = v.action === 'challenge' || v.action === 'mfa' || v.action === 'block';
        const sinceStart = e.t - attackStart;
        if (refused && firstRefused === undefined) firstRefused = sinceStart;
        if (refused) for (const r of v.reasons) attackReasons.set(r, (attackReasons.get(r) ?? 0) + 1);
        if (sinceStart >= GRACE_MS) {
          afterGrace++;
          if (refused) refusedAfterGrace++;
        }
        // The attacker does not solve challenges or MFA; it does wait out a delay.
        if (!refused) heap.push({ t: e.t + v.delayMs, seq: 0, kind: 'attack-verify', a: e.a, server, proof: e.proof });
        break;
      }
      case 'attack-verify': {
        through++;
        const { a } = e;
        const r = await fleet[e.server]!.record({
          account: a.account,
          ip: a.ip,
          success: a.valid,
          password: a.valid ? undefined : a.password,
          accountExists: a.valid || known.has(a.account),
          leakedCredential: a.leaked,
          ...(e.proof ? POW : {}),
        });
        if (r.action === 'mfa') {
          // Stepped up at success: the attacker passes no second factor.
          stoppedAtSuccess++;
          for (const reason of r.reasons) attackReasons.set(reason, (attackReasons.get(reason) ?? 0) + 1);
          if (firstRefused === undefined) firstRefused = e.t - attackStart;
        } else if (a.valid) compromised.add(a.account);
        break;
      }
    }
  }
  return {
    name: attack.name,
    description: attack.description,
    attempts: made,
    through,
    afterGrace,
    refusedAfterGrace,
    compromised: compromised.size,
    stoppedAtSuccess,
    compromisedNoGuard: validAccounts.size,
    detectionMs: firstRefused,
    legitUsers: active.size,
    legitDelayed: delayed.size,
    legitChallenged: challenged.size,
    legitSteppedUp: steppedUp.size,
    legitSteppedUpAtSuccess: steppedUpAtSuccess.size,
    legitChallengedOrSteppedUp: new Set([...challenged, ...steppedUp]).size,
    legitBlocked: blocked.size,
    legitLockedOut: lockedOut.size,
    decisions,
    legitReasons,
    attackReasons,
  };
}
