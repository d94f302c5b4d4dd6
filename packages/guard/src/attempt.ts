/** Validates what `check` and `record` receive and turns it into tags, so no plain value goes further. */
import {
  formatIPv4,
  formatIPv6Groups,
  maskIPv4,
  maskIPv6,
  type ParsedIp,
  parseIp,
  show,
  SluiceError,
} from 'sluice/kit';
import type { KeyedHasher } from './keyed-hash.js';
import type { IpStanding, Reputation } from './reputation.js';

/** What `guard.check` takes: who is logging in, from where. */
export interface LoginAttempt {
  /** The username or email as typed (normalise case and spaces first if your login does). */
  account: string;
  /** The client address (from your trusted-proxy logic, never a raw X-Forwarded-For). */
  ip: string;
  /** A stable device identifier that your server set (a signed cookie), never a client-claimed value. */
  fingerprint?: string;
  /**
   * The application found this attempt's account+password pair in a corpus of leaked credentials (a
   * Cloudflare `Exposed-Credential-Check: 1` header, an in-house breach corpus). A leaked *password* alone
   * (Have I Been Pwned's range API, `Exposed-Credential-Check: 4`) is not a leaked pair: pass false or
   * nothing for it. On an unfamiliar path it steps the attempt up to MFA, at check() and at a success; a
   * familiar path is never hindered by it. The flag is read for this call only: never stored, never sent.
   */
  leakedCredential?: boolean;
  /**
   * The attempt came with a proof the application verified: a proof of work (`@sluice/pow`, which a login
   * page can solve in the background while the person types) or a CAPTCHA. A stuffing run of scripted
   * clients leaves it out; see the `no-proof` signal.
   */
  proof?: 'pow' | 'captcha';
}

/** What `guard.record` takes: the attempt and its outcome. */
export interface LoginOutcome extends LoginAttempt {
  success: boolean;
  /** The wrong password, so that repeating it does not count again. Only its keyed hash is kept. */
  password?: string;
  /**
   * On a failure: false when no such account exists. The guard treats the attempt exactly as any other
   * failure (its answers never tell which accounts exist); only the global share of such failures feeds
   * the unknown-account monitor, because a leaked list is full of accounts a site never had.
   */
  accountExists?: boolean;
  /**
   * On a success: the login passed a second factor (MFA) after `record` stepped it up. It completes the
   * login: the success is recorded and never stepped up again.
   */
  secondFactor?: boolean;
}

/** Longest account or fingerprint accepted: longer is a mistake or an attack on the hasher. */
const MAX_TEXT = 1024;
/** Longest address text accepted (a zoned IPv6 address in brackets fits). */
const MAX_IP = 64;
/** Longest password accepted, as bcrypt-era limits go (and HMAC cost stays bounded). */
const MAX_PASSWORD = 4096;

/**
 * An attempt reduced to tags: no plain value, not even the parsed address (RecentAttempts keeps these
 * between check and record, so they must hold nothing the guard state may not).
 */
export interface TaggedAttempt {
  readonly account: string;
  readonly address: string;
  readonly subnet: string;
  readonly fingerprint: string | undefined;
  /** The tag familiarity is judged by: the address for IPv4, the subnet for IPv6 (privacy addresses rotate). */
  readonly location: string;
  /** The tags a login is judged familiar by, and that a success makes familiar: the location, then the device's. */
  readonly sources: readonly string[];
  /** The address's standing in the allow, deny and hosting lists (fixed at construction, so fixed per address). */
  readonly standing: IpStanding;
  /** Bucket keys, built once per attempt: per address, per subnet, per account+address pair. */
  readonly ipKey: string;
  readonly subnetKey: string;
  readonly pairKey: string;
}

function bad(call: string, field: string, rule: string, value: unknown): never {
  throw new SluiceError(
    'ERR_SLUICE_INVALID_ATTEMPT',
    `guard.${call}(): '${field}' must be ${rule}, got ${show(value)}`,
  );
}

function text(call: string, field: string, value: unknown, max: number): string {
  if (!isText(value, max)) bad(call, field, `a non-empty string of at most ${max} characters`, value);
  return value;
}

function isText(value: unknown, max: number): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= max;
}

/** What tagging an attempt needs: the keyed hasher, the lists, the subnet prefixes. */
export interface AttemptTagger {
  readonly hasher: KeyedHasher;
  readonly reputation: Reputation;
  readonly ipv4Subnet: number;
  readonly ipv6Subnet: number;
  /** The prefix an IPv6 address is one address at (its records and buckets): one /64 is one client. */
  readonly ipv6AddressPrefix: number;
}

/** What tagAttemptRecalling needs of the memo of recent attempts (recent-attempts.ts, which imports this file). */
export interface AttemptMemo {
  /** The tags kept for this same text, if any; `take` removes them. */
  find(account: string, ip: string, fingerprint: string | undefined, take: boolean): TaggedAttempt | undefined;
  keep(tags: TaggedAttempt): void;
}

/**
 * The attempt's tags: those `recent` kept for the same attempt (check's, when record follows it), else
 * computed by tagAttempt. A check keeps what it computed for the record to come; a record takes what it
 * finds out of the table and keeps nothing, as the attempt is over. Only input that passes every check
 * reaches `recent`; anything else goes straight to tagAttempt, which throws the same error as ever
 * naming the field.
 */
export function tagAttemptRecalling(
  call: 'check' | 'record',
  input: unknown,
  tagger: AttemptTagger,
  recent: AttemptMemo,
): TaggedAttempt {
  if (typeof input === 'object' && input !== null) {
    const a = input as Record<string, unknown>;
    const { account, ip, fingerprint } = a;
    if (
      isText(account, MAX_TEXT) &&
      isText(ip, MAX_IP) &&
      (fingerprint === undefined || isText(fingerprint, MAX_TEXT))
    ) {
      const known = recent.find(account, ip, fingerprint, call === 'record');
      if (known !== undefined) return known; // kept only after this same text parsed and tagged
      const t = tagAttempt(call, input, tagger); // throws for an address that does not parse: nothing kept
      if (call === 'check') recent.keep(t);
      return t;
    }
  }
  return tagAttempt(call, input, tagger);
}

export function tagAttempt(call: 'check' | 'record', input: unknown, tagger: AttemptTagger): TaggedAttempt {
  const { hasher, ipv4Subnet, ipv6Subnet, ipv6AddressPrefix } = tagger;
  if (typeof input !== 'object' || input === null)
    bad(call, 'attempt', 'an object { account, ip, fingerprint? }', input);
  const a = input as Record<string, unknown>;
  const account = hasher.tag('acct', text(call, 'account', a.account, MAX_TEXT));
  if (typeof a.ip !== 'string') bad(call, 'ip', 'an IPv4 or IPv6 address string', a.ip);
  const ip = guardIp(a.ip);
  if (ip === undefined) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_IP',
      `guard.${call}(): 'ip' must be an IPv4 or IPv6 address, got ${show(a.ip)}`,
    );
  }
  // Dotted-quad text that parsed as IPv4 is already canonical (parseIp takes no leading zeros, no other
  // form), so it is tagged as given; ::ffff:a.b.c.d and IPv6 are written out canonically first.
  // An IPv6 address counts at its prefix (a /64 by default): one client holds all of it.
  let shown: string;
  if (ip.v === 4) shown = a.ip.includes(':') ? formatIPv4(ip.n) : a.ip;
  else
    shown =
      ipv6AddressPrefix === 128
        ? formatIPv6Groups(ip.h)
        : `${formatIPv6Groups(maskIPv6(ip.h, ipv6AddressPrefix))}/${ipv6AddressPrefix}`;
  const address = hasher.tag('ip', shown);
  let subnet: string;
  if (ip.v === 4) {
    const net = maskIPv4(ip.n, ipv4Subnet);
    subnet = hasher.tagDottedQuad('net', net >>> 24, (net >>> 16) & 255, (net >>> 8) & 255, net & 255, ipv4Subnet);
  } else {
    subnet = hasher.tag('net', `${formatIPv6Groups(maskIPv6(ip.h, ipv6Subnet))}/${ipv6Subnet}`);
  }
  const fingerprint =
    a.fingerprint === undefined ? undefined : hasher.tag('fp', text(call, 'fingerprint', a.fingerprint, MAX_TEXT));
  const location = ip.v === 4 ? address : subnet;
  return {
    account,
    address,
    subnet,
    fingerprint,
    location,
    sources: fingerprint === undefined ? [location] : [location, fingerprint],
    standing: tagger.reputation.classify(ip),
    ipKey: `i:${address}`,
    subnetKey: `n:${subnet}`,
    pairKey: `p:${account}.${address}`,
  };
}

/** What an attempt says of itself beyond who and where, read for one call and never stored. */
export interface AttemptFlags {
  /** Its account+password pair is in a leaked corpus (`leakedCredential: true`). */
  readonly leaked: boolean;
  /** The verified proof it came with, if any. */
  readonly proof: 'pow' | 'captcha' | undefined;
}

/**
 * The attempt's flags, each checked: an ill-typed one is an error naming the field (a truthy string such
 * as 'false' must not step anyone up, nor a typo let a pair through).
 */
export function attemptFlags(call: 'check' | 'record', input: LoginAttempt): AttemptFlags {
  const leaked = input.leakedCredential;
  if (leaked !== undefined && typeof leaked !== 'boolean')
    bad(call, 'leakedCredential', 'true, false or undefined', leaked);
  const p = input.proof;
  if (p !== undefined && p !== 'pow' && p !== 'captcha') bad(call, 'proof', "'pow', 'captcha' or undefined", p);
  return { leaked: leaked === true, proof: p };
}

/** Checks the outcome's `success` and `password` (no object returned: record reads them itself). */
export function checkOutcome(input: LoginOutcome): void {
  if (typeof input.success !== 'boolean') bad('record', 'success', 'true or false', input.success);
  const p = input.password;
  if (p !== undefined && (typeof p !== 'string' || p.length > MAX_PASSWORD))
    bad(
      'record',
      'password',
      `a string of at most ${MAX_PASSWORD} characters`,
      typeof p === 'string' ? `<${p.length} characters>` : p,
    );
  if (input.accountExists !== undefined && typeof input.accountExists !== 'boolean')
    bad('record', 'accountExists', 'true, false or undefined', input.accountExists);
  if (input.secondFactor !== undefined && typeof input.secondFactor !== 'boolean')
    bad('record', 'secondFactor', 'true, false or undefined', input.secondFactor);
  if (input.accountExists === false && input.success)
    bad('record', 'accountExists', 'true or undefined on a success', input.accountExists);
}

/** The guard's reading of an address: core/ip.ts's, of at most MAX_IP characters, IPv6 also in [brackets]. */
function guardIp(text: string): ParsedIp | undefined {
  if (text.length === 0 || text.length > MAX_IP) return undefined;
  if (text.startsWith('[') && text.endsWith(']')) {
    const inner = text.slice(1, -1);
    return inner.includes(':') ? parseIp(inner) : undefined;
  }
  return parseIp(text);
}
