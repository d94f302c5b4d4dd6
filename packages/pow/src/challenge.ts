/**
 * createChallenge: a stateless, signed proof-of-work challenge. Nothing is stored when it is issued; the
 * token carries every parameter under an HMAC, so any server holding the key can verify it later.
 */
import { randomBytes, show, SluiceError } from 'sluice/kit';
import { DEFAULT_PUZZLES, expectedWork, MAX_WORK_PER_PUZZLE, targetFor } from './difficulty.js';
import { ALGORITHM, LIMITS, VERSION } from './encoding.js';
import { resolveSecret, type Secret } from './keyring.js';
import { signToken } from './token.js';

export interface CreateChallengeOptions {
  /** Signing secret (≥ 16 bytes) or keyring `{ current, keys }`. Required when NODE_ENV=production. */
  secret?: Secret;
  /** Expected SHA-256 hashes to solve the whole challenge, e.g. from `difficultyFor()`. */
  difficulty: number;
  /** What the solution will be accepted for: a route, an account, a client key, e.g. 'login:alice'. */
  scope: string;
  /** How long the challenge may be solved and redeemed. Default 60 s. */
  ttlMs?: number;
  /** Sub-puzzles to split the work into (1–64). Default 16. */
  puzzles?: number;
  /** Wall-clock ms since the epoch; injected by tests. Expiry is absolute so any server can check it. */
  now?: number;
}

/** What the browser or Node solver needs; `token` alone is enough to solve and to redeem. */
export interface Challenge {
  token: string;
  algorithm: typeof ALGORITHM;
  /** Expected hashes to solve, after rounding to the target. */
  difficulty: number;
  target: number;
  puzzles: number;
  expiresAt: number;
  scope: string;
  kid: string;
}

const KNOWN = new Set(['secret', 'difficulty', 'scope', 'ttlMs', 'puzzles', 'now']);
const SALT_BYTES = 16;
const MAX_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * @example
 * const ch = createChallenge({ secret: process.env.POW_SECRET, difficulty: 200_000, scope: 'login:alice', ttlMs: 60_000 });
 * res.json(ch); // the page solves ch.token and posts the solution back
 */
export function createChallenge(options: CreateChallengeOptions): Challenge {
  const where = 'createChallenge';
  if (typeof options !== 'object' || options === null) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `${where} options must be an object, got ${show(options)}`);
  }
  for (const field of Object.keys(options)) {
    if (!KNOWN.has(field))
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `${where}: unknown option '${field}'; known options are ${[...KNOWN].join(', ')}`,
      );
  }
  const ring = resolveSecret(options.secret, where);
  const puzzles = options.puzzles ?? DEFAULT_PUZZLES;
  if (!Number.isInteger(puzzles) || puzzles < 1 || puzzles > LIMITS.maxPuzzles) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `${where}: 'puzzles' must be an integer from 1 to ${LIMITS.maxPuzzles}, got ${show(options.puzzles)}`,
    );
  }
  const { difficulty } = options;
  const maxDifficulty = puzzles * MAX_WORK_PER_PUZZLE;
  if (typeof difficulty !== 'number' || !Number.isFinite(difficulty) || difficulty < 1 || difficulty > maxDifficulty) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `${where}: 'difficulty' must be the expected hashes to solve, a number from 1 to ${maxDifficulty} for ${puzzles} puzzles, got ${show(difficulty)}`,
    );
  }
  const { scope } = options;
  if (
    typeof scope !== 'string' ||
    !(scope as unknown as { isWellFormed(): boolean }).isWellFormed() ||
    new TextEncoder().encode(scope).length > LIMITS.scopeBytes
  ) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `${where}: 'scope' must be a well-formed string of at most ${LIMITS.scopeBytes} UTF-8 bytes, got ${show(scope)}`,
    );
  }
  const ttlMs = options.ttlMs ?? 60_000;
  if (!Number.isInteger(ttlMs) || ttlMs < 1 || ttlMs > MAX_TTL_MS) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `${where}: 'ttlMs' must be an integer from 1 to ${MAX_TTL_MS} (a day), got ${show(options.ttlMs)}`,
    );
  }
  const now = options.now ?? Date.now();
  if (!Number.isInteger(now) || now < 0) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `${where}: 'now' must be epoch milliseconds, got ${show(options.now)}`,
    );
  }
  const target = targetFor(difficulty, puzzles);
  const fields = {
    version: VERSION,
    kid: ring.currentKid,
    algorithm: ALGORITHM,
    salt: randomBytes(SALT_BYTES),
    target,
    puzzles,
    expiresAt: now + ttlMs,
    scope,
  };
  return {
    token: signToken(fields, ring.keys.get(ring.currentKid)!),
    algorithm: ALGORITHM,
    difficulty: Math.round(expectedWork(target, puzzles)),
    target,
    puzzles,
    expiresAt: fields.expiresAt,
    scope,
    kid: ring.currentKid,
  };
}
