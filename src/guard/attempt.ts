/** Validates what `check` and `record` receive and turns it into tags, so no plain value goes further. */
import { SluiceError, show } from '../core/errors.js';
import { ipText, maskedText, parseIp, tryParseIp, v4Mask, type IpAddress } from './ip.js';
import type { KeyedHasher } from './keyed-hash.js';

/** What `guard.check` takes: who is logging in, from where. */
export interface LoginAttempt {
  /** The username or email as typed (normalise case and spaces first if your login does). */
  account: string;
  /** The client address (from your trusted-proxy logic, never a raw X-Forwarded-For). */
  ip: string;
  /** A stable device identifier that your server set (a signed cookie), never a client-claimed value. */
  fingerprint?: string;
}

/** What `guard.record` takes: the attempt and its outcome. */
export interface LoginOutcome extends LoginAttempt {
  success: boolean;
  /** The wrong password, so that repeating it does not count again. Only its keyed hash is kept. */
  password?: string;
}

/** Longest account or fingerprint accepted: longer is a mistake or an attack on the hasher. */
const MAX_TEXT = 1024;
/** Longest password accepted, as bcrypt-era limits go (and HMAC cost stays bounded). */
const MAX_PASSWORD = 4096;

/** An attempt reduced to tags and the parsed address. */
export interface TaggedAttempt {
  readonly ip: IpAddress;
  readonly account: string;
  readonly address: string;
  readonly subnet: string;
  readonly fingerprint: string | undefined;
  /** The tag familiarity is judged by: the address for IPv4, the subnet for IPv6 (privacy addresses rotate). */
  readonly location: string;
}

function bad(call: string, field: string, rule: string, value: unknown): never {
  throw new SluiceError('ERR_SLUICE_INVALID_ATTEMPT', `guard.${call}(): '${field}' must be ${rule}, got ${show(value)}`);
}

function text(call: string, field: string, value: unknown, max: number): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > max) bad(call, field, `a non-empty string of at most ${max} characters`, value);
  return value;
}

export function tagAttempt(
  call: 'check' | 'record',
  input: unknown,
  hasher: KeyedHasher,
  ipv4Subnet: number,
  ipv6Subnet: number,
): TaggedAttempt {
  if (typeof input !== 'object' || input === null) bad(call, 'attempt', 'an object { account, ip, fingerprint? }', input);
  const a = input as Record<string, unknown>;
  const account = hasher.tag('acct', text(call, 'account', a.account, MAX_TEXT));
  // The field name for parseIp's error is built only when there is an error to throw.
  let ip = typeof a.ip === 'string' ? tryParseIp(a.ip) : undefined;
  if (ip === undefined) {
    if (typeof a.ip !== 'string') bad(call, 'ip', 'an IPv4 or IPv6 address string', a.ip);
    ip = parseIp(a.ip, `guard.${call}(): 'ip'`); // throws ERR_SLUICE_INVALID_IP naming the field
  }
  // Dotted-quad text that parsed as IPv4 is already canonical (parseIp takes no leading zeros, no other
  // form), so it is tagged as given; ::ffff:a.b.c.d and IPv6 are written out canonically first.
  const address = hasher.tag('ip', ip.v4 && !(a.ip as string).includes(':') ? (a.ip as string) : ipText(ip.bytes));
  const prefix = ip.v4 ? ipv4Subnet : ipv6Subnet;
  const b = ip.bytes;
  const subnet = ip.v4
    ? hasher.tagDottedQuad('net', b[12]! & v4Mask(prefix, 0), b[13]! & v4Mask(prefix, 1), b[14]! & v4Mask(prefix, 2), b[15]! & v4Mask(prefix, 3), prefix)
    : hasher.tag('net', `${maskedText(ip, prefix)}/${prefix}`);
  const fingerprint = a.fingerprint === undefined ? undefined : hasher.tag('fp', text(call, 'fingerprint', a.fingerprint, MAX_TEXT));
  return { ip, account, address, subnet, fingerprint, location: ip.v4 ? address : subnet };
}

/** Checks the outcome's `success` and `password` (no object returned: record reads them itself). */
export function checkOutcome(input: LoginOutcome): void {
  if (typeof input.success !== 'boolean') bad('record', 'success', 'true or false', input.success);
  const p = input.password;
  if (p !== undefined && (typeof p !== 'string' || p.length > MAX_PASSWORD)) bad('record', 'password', `a string of at most ${MAX_PASSWORD} characters`, typeof p === 'string' ? `<${p.length} characters>` : p);
}
