// The demo's one account: a scrypt password hash and a TOTP enrolment (RFC 6238 through otplib), with
// each accepted code refused a second time, as RFC 6238 §5.2 asks.
import { randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';
import { generateSecret, generateURI, verify } from 'otplib';

export interface Account {
  name: string;
  salt: Buffer;
  hash: Buffer;
  totpSecret: string;
  /** The last TOTP time step accepted, so a code cannot be used twice. */
  lastStep: number;
}

const hashPassword = (password: string, salt: Buffer) => scryptSync(password, salt, 32);

export function makeAccount(name: string, password: string): Account {
  const salt = randomBytes(16);
  return { name, salt, hash: hashPassword(password, salt), totpSecret: generateSecret(), lastStep: -1 };
}

// Compared against for unknown accounts too, so a missing account takes as long as a wrong password.
const DUMMY = makeAccount('', randomBytes(16).toString('hex'));

export function checkPassword(account: Account | undefined, password: string): boolean {
  const a = account ?? DUMMY;
  const ok = timingSafeEqual(hashPassword(password, a.salt), a.hash);
  return ok && account !== undefined;
}

export async function checkTotp(account: Account | undefined, code: string): Promise<boolean> {
  if (account === undefined || !/^\d{6}$/.test(code)) return false;
  const r = await verify({ secret: account.totpSecret, token: code, epochTolerance: 30 });
  // The TOTP strategy reports the matched time step; without one there is nothing to pin, so refuse.
  const step = r.valid ? (r as { timeStep?: number }).timeStep : undefined;
  if (step === undefined || step <= account.lastStep) return false;
  account.lastStep = step;
  return true;
}

export const totpUri = (account: Account) =>
  generateURI({ issuer: 'sluice demo', label: account.name, secret: account.totpSecret });
