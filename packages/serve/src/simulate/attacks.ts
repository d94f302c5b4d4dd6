// The attacks the simulator replays, each as a list of timed attempts: classic brute force, credential
// stuffing, password spraying from many IPv4 addresses and from one rotating IPv6 /64, and low-and-slow
// variants of each, spread over a week.
import { randomInt } from 'sluice/kit';
import { COMMON_PASSWORDS, privacyAddress, randomIpv4, type User } from './population.js';

export interface AttackAttempt {
  /** Milliseconds after the attack starts. */
  readonly at: number;
  readonly account: string;
  readonly ip: string;
  readonly password: string;
  /** Whether the password is the account's real one (what a guard-less login would let in). */
  readonly valid: boolean;
  /**
   * Whether the defender's corpus of leaked credentials holds this account+password pair (the application
   * then passes `leakedCredential: true`). Only a stuffer's pairs can be: a sprayed common password or a
   * brute-force guess is at most a password-only match, which is not a leaked pair.
   */
  readonly leaked: boolean;
}

export interface Attack {
  readonly name: string;
  readonly description: string;
  /** Days of legitimate traffic to simulate around it. */
  readonly days: number;
  readonly attempts: readonly AttackAttempt[];
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** `n` attempts spread evenly over `durationMs`, with a little jitter so none line up on a bucket edge. */
const spread = (i: number, n: number, durationMs: number, random: () => number) =>
  Math.floor(((i + random()) * durationMs) / n);

/** A user whose password is not a common one, as a brute-force target. */
function target(users: readonly User[], random: () => number): User {
  for (;;) {
    const u = users[randomInt(random, 0, users.length - 1)]!;
    if (!(COMMON_PASSWORDS as readonly string[]).includes(u.password)) return u;
  }
}

/** One address guessing one account's password from a wordlist; the right one is at `hitAt`. */
function bruteForce(
  users: readonly User[],
  random: () => number,
  guesses: number,
  durationMs: number,
  hitAt: number,
): AttackAttempt[] {
  const u = target(users, random);
  const ip = randomIpv4(random);
  return Array.from({ length: guesses }, (_, i) => ({
    at: spread(i, guesses, durationMs, random),
    account: u.account,
    ip,
    password: i === hitAt ? u.password : `wordlist-${i}`,
    valid: i === hitAt,
    leaked: false,
  }));
}

/**
 * Leaked pairs tried once or twice per account from a pool of proxies; `validShare` of the attempts carry a
 * real user's real password. A third of the other leaked accounts exist here (with another password).
 */
function stuffing(
  users: readonly User[],
  random: () => number,
  pairs: number,
  ips: number,
  durationMs: number,
  validShare: number,
): AttackAttempt[] {
  const pool = Array.from({ length: ips }, () => randomIpv4(random));
  const out: AttackAttempt[] = [];
  let leaked = 0;
  while (out.length < pairs) {
    const real = random() < 1 / 3;
    const account = real ? users[randomInt(random, 0, users.length - 1)]!.account : `leak${leaked++}@mail.test`;
    const tries = random() < 0.5 ? 1 : 2;
    for (let k = 0; k < tries && out.length < pairs; k++) {
      out.push({
        at: 0,
        account,
        ip: pool[randomInt(random, 0, ips - 1)]!,
        password: `leaked-${out.length}`,
        valid: false,
        leaked: false,
      });
    }
  }
  // Plant the valid pairs at random positions, each a distinct real user with the real password.
  const valid = Math.round(pairs * validShare);
  const chosen = new Set<number>();
  while (chosen.size < Math.min(valid, users.length)) chosen.add(randomInt(random, 0, users.length - 1));
  let k = 0;
  for (const user of chosen) {
    const i = Math.floor((k++ * pairs) / valid + random() * (pairs / valid));
    out[i] = { ...out[i]!, account: users[user]!.account, password: users[user]!.password, valid: true };
  }
  return out.map((a, i) => ({ ...a, at: spread(i, pairs, durationMs, random) }));
}

/** `passwords` tried against `accounts` (half real, half guessed names), one password at a time. */
function spraying(
  users: readonly User[],
  random: () => number,
  passwords: readonly string[],
  accounts: number,
  ipFor: (i: number) => string,
  durationMs: number,
): AttackAttempt[] {
  const names: { account: string; password: string | undefined }[] = [];
  for (let i = 0; i < accounts; i++) {
    const u = i % 2 === 0 && i / 2 < users.length ? users[i / 2]! : undefined;
    names.push(
      u === undefined
        ? { account: `guess${i}@example.com`, password: undefined }
        : { account: u.account, password: u.password },
    );
  }
  const out: AttackAttempt[] = [];
  const n = passwords.length * accounts;
  for (const password of passwords) {
    for (const a of names) {
      const i = out.length;
      out.push({
        at: spread(i, n, durationMs, random),
        account: a.account,
        ip: ipFor(i),
        password,
        valid: a.password === password,
        leaked: false,
      });
    }
  }
  return out;
}

/**
 * The share of a stuffer's pairs that the defender's corpus of leaked credentials holds, by default. No
 * study measures it; the pairs stuffers trade are public combo lists, compiled from the same breaches that
 * Have I Been Pwned, Cloudflare and in-house corpora are built from, and a fresh private leak (or fresh
 * infostealer logs) that no corpus holds yet is the exception: one pair in ten here. docs/guard.md shows
 * what lower coverage costs (`--leak-coverage`).
 */
export const DEFAULT_LEAK_COVERAGE = 0.9;

/** What the defender's leaked corpus knows of the attacks' pairs. */
export interface Corpus {
  /** Share of stuffing pairs the corpus holds, 0 to 1. */
  readonly leakCoverage: number;
  /** Draws which pairs; a stream of its own, so that coverage changes nothing else in the attacks. */
  readonly random: () => number;
}

/**
 * Marks each pair as held by the corpus with probability `leakCoverage`. One draw per attempt whatever the
 * coverage, so a higher coverage holds every pair a lower one does (the frontier compares like with like).
 */
function inCorpus(attempts: readonly AttackAttempt[], corpus: Corpus): AttackAttempt[] {
  return attempts.map((a) => ({ ...a, leaked: corpus.random() < corpus.leakCoverage }));
}

/** Every scenario, built for `users` from `random`; stuffing pairs are in `corpus` (none when it is left out). */
export function makeAttacks(
  users: readonly User[],
  random: () => number,
  corpus: Corpus = { leakCoverage: 0, random: () => 1 },
): Attack[] {
  const sprayIps = Array.from({ length: 200 }, () => randomIpv4(random));
  const slash64 = '2001:db8:bad:1::';
  return [
    {
      name: 'brute-force',
      description: '10,000 guesses at one account from one address, 2 a second; the right one is guess 5,000',
      days: 1,
      attempts: bruteForce(users, random, 10_000, 5_000_000, 5_000),
    },
    {
      name: 'credential-stuffing',
      description: '100,000 leaked pairs over 5,000 addresses in 2 h, 1–2 tries per account, 0.5% valid',
      days: 1,
      attempts: inCorpus(stuffing(users, random, 100_000, 5_000, 2 * HOUR, 0.005), corpus),
    },
    {
      name: 'spraying-200-ips',
      description: '3 common passwords against 20,000 accounts from 200 addresses in 3 h',
      days: 1,
      attempts: spraying(users, random, COMMON_PASSWORDS, 20_000, (i) => sprayIps[i % 200]!, 3 * HOUR),
    },
    {
      name: 'spraying-one-/64',
      description:
        '3 common passwords against 20,000 accounts, every attempt from a new address in one IPv6 /64, in 3 h',
      days: 1,
      attempts: spraying(users, random, COMMON_PASSWORDS, 20_000, () => privacyAddress(slash64, random), 3 * HOUR),
    },
    {
      name: 'brute-force-slow',
      description: 'one guess every 15 min at one account from one address for 7 days; the right one is guess 300',
      days: 8,
      attempts: bruteForce(users, random, 672, 7 * DAY, 300),
    },
    {
      name: 'stuffing-slow',
      description: '10,000 leaked pairs over 5,000 addresses in 7 days (2 per address), 0.5% valid',
      days: 8,
      attempts: inCorpus(stuffing(users, random, 10_000, 5_000, 7 * DAY, 0.005), corpus),
    },
    {
      name: 'spraying-slow',
      description: '3 common passwords against 20,000 accounts from 200 addresses in 7 days',
      days: 8,
      attempts: spraying(users, random, COMMON_PASSWORDS, 20_000, (i) => sprayIps[i % 200]!, 7 * DAY),
    },
  ];
}
