// The legitimate population: accounts, their passwords, homes (own IPv4, shared NAT, IPv6 privacy
// addresses), devices, whose account+password pair is in a leaked corpus, and login sessions with the
// typos real people make.
import { randomInt } from 'sluice/kit';

/** The three passwords a sprayer tries; a small share of users really has one of them. */
export const COMMON_PASSWORDS = ['123456', 'password', 'qwerty123'] as const;

export interface PopulationSettings {
  readonly users: number;
  /** Share of users whose password is one of COMMON_PASSWORDS. */
  readonly commonPasswordShare: number;
  /** Shares of homes: own IPv4 address, an IPv4 NAT shared by about `natSize` users; the rest IPv6 /64s. */
  readonly ownIpv4Share: number;
  readonly natShare: number;
  readonly natSize: number;
  /** Share of users whose browser keeps the server's device cookie. */
  readonly fingerprintShare: number;
  /** Logins per user per day. */
  readonly sessionsPerDay: number;
  /** Per session: share from some other network (mobile, travel), and on a new device (cookie lost). */
  readonly roamingShare: number;
  readonly newDeviceShare: number;
  /** Per session: share that mistypes at least once. */
  readonly typoShare: number;
  /** Per session: share that first types an account name that does not exist (a typo in the email). */
  readonly wrongAccountShare: number;
  /**
   * Share of users whose own account+password pair is in the defender's corpus of leaked credentials (they
   * reused a password that leaked elsewhere with the same email): their logins with the real password
   * carry `leakedCredential: true`.
   */
  readonly leakedPairShare: number;
  /**
   * Share of users whose client carries the login page's proof of work (`proof: 'pow'`): the page solves
   * one in the background while the person types, in any browser that runs its script.
   */
  readonly proofShare: number;
}

export const DEFAULT_POPULATION: PopulationSettings = {
  users: 10_000,
  commonPasswordShare: 0.01,
  ownIpv4Share: 0.6,
  natShare: 0.25,
  natSize: 25,
  fingerprintShare: 0.8,
  sessionsPerDay: 2,
  roamingShare: 0.03,
  newDeviceShare: 0.01,
  typoShare: 0.04,
  wrongAccountShare: 0.005,
  // Google's Password Checkup study (Thomas et al., "Protecting accounts from credential stuffing with
  // password breach alerting", USENIX Security 2019): about 1.5% of the sign-ins it saw used a breached
  // username+password pair. Every user here logs in equally often, so a share of users is a share of sign-ins.
  leakedPairShare: 0.015,
  // GOV.UK measured about 1.1% of its visits not running its scripts (Government Digital Service, "How many
  // people are missing out on JavaScript enhancement?", 2013); twice that come without the proof here.
  proofShare: 0.98,
};

export interface User {
  readonly account: string;
  readonly password: string;
  /** An IPv4 address, or an IPv6 /64 prefix ending in '::' awaiting a privacy suffix. */
  readonly home: string;
  readonly fingerprint: string | undefined;
  /** The account+password pair is in the defender's leaked corpus (see leakedPairShare). */
  readonly leakedPair: boolean;
  /** The user's client carries the login page's proof of work (see proofShare). */
  readonly proofs: boolean;
}

export interface Session {
  readonly user: number;
  readonly ip: string;
  readonly fingerprint: string | undefined;
  /** Wrong passwords typed before the right one, in order. */
  readonly typos: readonly string[];
  /** An account name that does not exist, tried (with the right password) before the real one; or undefined. */
  readonly wrongAccount: string | undefined;
}

/** A random address in public-looking IPv4 space (first octet 11–222, skipping 127). */
export function randomIpv4(random: () => number): string {
  let a = randomInt(random, 11, 222);
  if (a === 127) a = 128;
  return `${a}.${randomInt(random, 0, 255)}.${randomInt(random, 0, 255)}.${randomInt(random, 1, 254)}`;
}

const hex = (n: number) => n.toString(16);

/** A privacy address: a random interface id under a /64 prefix ending in '::'. */
export function privacyAddress(prefix: string, random: () => number): string {
  return `${prefix.slice(0, -1)}${hex(randomInt(random, 0, 0xffff))}:${hex(randomInt(random, 0, 0xffff))}:${hex(randomInt(random, 0, 0xffff))}:${hex(randomInt(random, 1, 0xffff))}`;
}

export function makeUsers(p: PopulationSettings, random: () => number): User[] {
  const nats = Array.from({ length: Math.max(1, Math.round((p.users * p.natShare) / p.natSize)) }, () =>
    randomIpv4(random),
  );
  const users: User[] = [];
  for (let i = 0; i < p.users; i++) {
    const password =
      random() < p.commonPasswordShare
        ? COMMON_PASSWORDS[randomInt(random, 0, 2)]!
        : `pw-${i}-${Math.floor(random() * 1e9).toString(36)}`;
    const r = random();
    const home =
      r < p.ownIpv4Share
        ? randomIpv4(random)
        : r < p.ownIpv4Share + p.natShare
          ? nats[randomInt(random, 0, nats.length - 1)]!
          : `2001:db8:${hex(i >> 16)}:${hex(i & 0xffff)}::`;
    users.push({
      account: `user${i}@example.com`,
      password,
      home,
      fingerprint: random() < p.fingerprintShare ? `dev-${i}` : undefined,
      leakedPair: false,
      proofs: true,
    });
  }
  // Drawn after every other draw, so that a seed gives the same users, homes and devices whatever the shares.
  const leaked = users.map((u) => ({ ...u, leakedPair: random() < p.leakedPairShare }));
  return leaked.map((u) => ({ ...u, proofs: random() < p.proofShare }));
}

/** One login session of `user`: where from, which device, and which typos come first. */
export function makeSession(
  p: PopulationSettings,
  users: readonly User[],
  user: number,
  random: () => number,
): Session {
  const u = users[user]!;
  let ip = u.home.endsWith('::') ? privacyAddress(u.home, random) : u.home;
  if (random() < p.roamingShare) ip = randomIpv4(random);
  let fingerprint = u.fingerprint;
  if (fingerprint !== undefined && random() < p.newDeviceShare)
    fingerprint = `${fingerprint}-new${Math.floor(random() * 1e6)}`;
  const typos: string[] = [];
  if (random() < p.typoShare) {
    const r = random();
    const n = r < 0.6 ? 1 : r < 0.9 ? 2 : randomInt(random, 3, 5);
    for (let k = 0; k < n; k++) {
      // People often retype the same mistake; the guard must not count it twice.
      typos.push(k > 0 && random() < 0.3 ? typos[k - 1]! : `${u.password}-typo${Math.floor(random() * 1e6)}`);
    }
  }
  const wrongAccount =
    p.wrongAccountShare > 0 && random() < p.wrongAccountShare ? u.account.replace('@', '_@') : undefined;
  return { user, ip, fingerprint, typos, wrongAccount };
}
