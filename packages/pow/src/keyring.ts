/**
 * Secrets for signing challenges: one secret, or a keyring for rotation. A challenge names the key id
 * (kid) it was signed with; verification looks the kid up, so challenges signed with an old key keep
 * verifying while that key stays in the ring.
 */
import { emitWarning, hmacKey, type HmacKey, hmacSha256, nodeEnv, randomBytes, show, SluiceError } from 'sluice/kit';
import { LIMITS, MAC_DOMAIN } from './encoding.js';

/** A secret: at least 16 bytes; a string is taken as its UTF-8 bytes. */
export type SecretValue = string | Uint8Array;

/** A keyring for rotation: new challenges are signed with `current`; any kid in `keys` verifies. */
export interface Keyring {
  current: string;
  keys: Readonly<Record<string, SecretValue>>;
}

export type Secret = SecretValue | Keyring;

/** The kid a plain (non-keyring) secret signs with. Put the old secret under this kid when moving to a keyring. */
export const DEFAULT_KID = 'default';
export const MIN_SECRET_BYTES = 16;
const KID_PATTERN = /^[A-Za-z0-9._-]+$/;

export interface ResolvedKeyring {
  readonly currentKid: string;
  readonly keys: ReadonlyMap<string, HmacKey>;
}

// Resolving hashes the key blocks; callers pass the same secret on every request, so remember a few.
const byObject = new WeakMap<object, ResolvedKeyring>();
const byString = new Map<string, ResolvedKeyring>();
let devSecret: Uint8Array | undefined;

/**
 * Turns the `secret` option into prepared keys, throwing SluiceError naming the bad field. Outside
 * production a missing secret becomes one random secret per process (challenges then verify only in the
 * process that made them); with NODE_ENV=production a missing secret is an error, never a default.
 */
export function resolveSecret(secret: unknown, where: string): ResolvedKeyring {
  if (typeof secret === 'string') {
    const hit = byString.get(secret);
    if (hit !== undefined) return hit;
    const ring = single(secretBytes(secret, `${where}: 'secret'`));
    if (byString.size >= 16) byString.clear();
    byString.set(secret, ring);
    return ring;
  }
  if (typeof secret === 'object' && secret !== null) {
    const hit = byObject.get(secret);
    if (hit !== undefined) return hit;
    const ring =
      secret instanceof Uint8Array ? single(secretBytes(secret, `${where}: 'secret'`)) : keyring(secret, where);
    byObject.set(secret, ring);
    return ring;
  }
  if (secret === undefined) {
    if (nodeEnv() === 'production') {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `${where}: 'secret' is required when NODE_ENV=production; pass at least ${MIN_SECRET_BYTES} random bytes (e.g. from an environment variable), got undefined`,
      );
    }
    if (devSecret === undefined) {
      devSecret = randomBytes(32);
      // Said once, as the guard says it: a challenge made here verifies nowhere else and not after a restart.
      emitWarning(
        `${where} has no secret, so @sluice/pow made a random one: its challenges verify only in this process and not after a restart. Pass \`secret\` (required when NODE_ENV=production).`,
        { code: 'WRN_SLUICE_POW_EPHEMERAL_SECRET' },
      );
    }
    return resolveSecret(devSecret, where);
  }
  throw new SluiceError(
    'ERR_SLUICE_INVALID_OPTION',
    `${where}: 'secret' must be a string, a Uint8Array or a keyring { current, keys }, got ${show(secret)}`,
  );
}

/**
 * The MAC key is HMAC(secret, MAC_DOMAIN), not the secret itself: a sluice challenge MAC can then never
 * equal a MAC the application computes with the same secret for something else (domain separation),
 * and no per-request concatenation of a domain tag is needed.
 */
function macKey(secret: Uint8Array): HmacKey {
  return hmacKey(hmacSha256(hmacKey(secret), new TextEncoder().encode(MAC_DOMAIN)));
}

function single(bytes: Uint8Array): ResolvedKeyring {
  return { currentKid: DEFAULT_KID, keys: new Map([[DEFAULT_KID, macKey(bytes)]]) };
}

function keyring(ring: object, where: string): ResolvedKeyring {
  const { current, keys } = ring as Partial<Keyring>;
  if (typeof keys !== 'object' || keys === null) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `${where}: 'secret.keys' must be an object of kid → secret, got ${show(keys)}`,
    );
  }
  const prepared = new Map<string, HmacKey>();
  for (const [kid, value] of Object.entries(keys)) {
    checkKid(kid, where, `'secret.keys' kid`);
    prepared.set(kid, macKey(secretBytes(value, `${where}: 'secret.keys.${kid}'`)));
  }
  if (typeof current !== 'string' || !prepared.has(current)) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `${where}: 'secret.current' must name a kid in 'secret.keys' (${[...prepared.keys()].map(show).join(', ') || 'none'}), got ${show(current)}`,
    );
  }
  return { currentKid: current, keys: prepared };
}

function checkKid(kid: string, where: string, label: string): void {
  if (kid.length > LIMITS.kidBytes || !KID_PATTERN.test(kid)) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `${where}: ${label} must be 1–${LIMITS.kidBytes} characters of A–Z a–z 0–9 . _ -, got ${show(kid)}`,
    );
  }
}

function secretBytes(value: unknown, label: string): Uint8Array {
  const bytes =
    typeof value === 'string' ? new TextEncoder().encode(value) : value instanceof Uint8Array ? value : undefined;
  if (bytes === undefined) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `${label} must be a string or a Uint8Array, got ${show(value)}`);
  }
  if (bytes.length < MIN_SECRET_BYTES) {
    // Say the length, never the secret itself.
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `${label} must be at least ${MIN_SECRET_BYTES} bytes, got ${bytes.length} bytes`,
    );
  }
  return bytes;
}
