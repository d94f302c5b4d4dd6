// The framework-neutral part of the example login routes: ask the guard, act on its verdict, verify the
// password in the same time whether or not the account exists, record the outcome, answer generically.
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import type { CaptchaProvider, Guard } from '@sluice/guard';

const scryptAsync = promisify(scrypt) as (password: string, salt: Buffer, keylen: number) => Promise<Buffer>;

/** An scrypt password hash: salt and key. */
export interface PasswordHash {
  readonly salt: Buffer;
  readonly key: Buffer;
}

export async function hashPassword(password: string): Promise<PasswordHash> {
  const salt = randomBytes(16);
  return { salt, key: await scryptAsync(password, salt, 32) };
}

/** What the routes need to know about accounts. */
export interface UserDirectory {
  /** The account's password hash and one-time code, or undefined if there is no such account. */
  find(account: string): { hash: PasswordHash; otp: string } | undefined;
}

/** Hashed once at start-up: unknown accounts are checked against it so they take as long as known ones. */
const DUMMY = hashPassword(randomBytes(16).toString('hex'));

async function verify(password: string, hash: PasswordHash): Promise<boolean> {
  const key = await scryptAsync(password, hash.salt, 32);
  return timingSafeEqual(key, hash.key);
}

export interface LoginRequest {
  account: unknown;
  password: unknown;
  ip: string;
  /** The device cookie, if the browser sent one. */
  device: string | undefined;
  /** A CAPTCHA token, when the guard asked for one. */
  captchaToken: unknown;
  /** A one-time code, when the guard asked for MFA. */
  otp: unknown;
  /**
   * Your leaked-credential check of this account+password pair, if you have one: Cloudflare's
   * `Exposed-Credential-Check: 1` header (only when the origin is reachable through Cloudflare alone), or an
   * in-house breach corpus. A leaked password alone (a Have I Been Pwned range match) is not a leaked pair.
   */
  leakedCredential?: boolean;
}

export interface LoginReply {
  status: number;
  body: Record<string, unknown>;
  headers: Record<string, string>;
}

export interface LoginDeps {
  guard: Guard;
  users: UserDirectory;
  captcha: CaptchaProvider;
  /** How to wait out a 'delay'; tests pass one that records instead of sleeping. */
  sleep?: (ms: number) => Promise<void>;
}

const reply = (status: number, body: Record<string, unknown>, headers: Record<string, string> = {}): LoginReply => ({
  status,
  body,
  headers,
});
/** The one answer for a wrong password and for an account that does not exist. */
const INVALID = () => reply(401, { error: 'invalid_credentials' });

export async function handleLogin(deps: LoginDeps, req: LoginRequest): Promise<LoginReply> {
  const { account, password } = req;
  if (
    typeof account !== 'string' ||
    account.length === 0 ||
    account.length > 256 ||
    typeof password !== 'string' ||
    password.length > 1024
  ) {
    return reply(400, { error: 'bad_request' });
  }
  const attempt = {
    account,
    ip: req.ip,
    ...(req.device === undefined ? {} : { fingerprint: req.device }),
    ...(req.leakedCredential === undefined ? {} : { leakedCredential: req.leakedCredential }),
  };
  const v = await deps.guard.check(attempt);
  if (v.action === 'block') {
    return reply(429, { error: 'too_many_attempts' }, { 'retry-after': String(Math.ceil(v.retryAfterMs / 1000)) });
  }
  if (v.delayMs > 0) await (deps.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms))))(v.delayMs);
  if (v.action === 'challenge') {
    if (v.challenge !== 'captcha') {
      // Proof of work: hand out the difficulty; verifying a solution is the proof-of-work module's job.
      return reply(401, { error: 'challenge_required', difficulty: v.challenge });
    }
    const token = typeof req.captchaToken === 'string' ? req.captchaToken : '';
    if (!(await deps.captcha.verify(token, req.ip)).success) return reply(401, { error: 'captcha_required' });
  }
  // MFA is asked before the password is judged, so the step-up never tells a stuffer the password was right.
  if (v.action === 'mfa' && typeof req.otp !== 'string') return reply(401, { error: 'mfa_required' });

  const user = deps.users.find(account);
  const passwordOk = await verify(password, user?.hash ?? (await DUMMY));
  const otpValid =
    user !== undefined &&
    typeof req.otp === 'string' &&
    req.otp.length === user.otp.length &&
    timingSafeEqual(Buffer.from(req.otp), Buffer.from(user.otp));
  const ok = user !== undefined && passwordOk && (v.action !== 'mfa' || otpValid);
  // A login that passed the MFA asked for says so, so that the guard does not ask for it again at success.
  const recorded = await deps.guard.record({
    ...attempt,
    success: ok,
    password: ok ? undefined : password,
    ...(ok && v.action === 'mfa' ? { secondFactor: true } : {}),
  });
  if (!ok) return INVALID();
  if (recorded.action === 'mfa') {
    // Stepped up at success (a stranger's correct password while the guard sees stuffing): nothing was
    // recorded; the login completes only with the second factor, recorded as such.
    if (!otpValid) return reply(401, { error: 'mfa_required' });
    await deps.guard.record({ ...attempt, success: true, secondFactor: true });
  }
  return reply(200, { ok: true });
}

/** A new device id for the device cookie: random, so nobody can claim another's device. */
export const newDeviceId = () => randomBytes(16).toString('base64url');

/** The `device` cookie's value from a Cookie header. */
export function deviceCookie(header: string | undefined): string | undefined {
  const m = header === undefined ? null : /(?:^|;\s*)device=([A-Za-z0-9_-]{16,64})(?:;|$)/.exec(header);
  return m === null ? undefined : m[1];
}

export const DEVICE_COOKIE_OPTIONS = 'Path=/; HttpOnly; Secure; SameSite=Lax; Max-Age=31536000';
