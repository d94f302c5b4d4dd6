/**
 * verifySolution: one HMAC, one hash per sub-puzzle, a constant-time compare and one store write. Any
 * solution input, however broken, resolves to a reason; only bad options (a programming error) or a
 * failing store reject.
 */
import { bytesEqual, encodeBase64url, show, SluiceError } from 'sluice/kit';
import { ALGORITHM } from './encoding.js';
import { resolveSecret, type Secret } from './keyring.js';
import type { SpentStore } from './spent-store.js';
import { checkNonces, macOf, parseSolution } from './token.js';

export type VerifyReason = 'expired' | 'bad-signature' | 'replayed' | 'wrong-scope' | 'invalid' | 'malformed';

export type VerifyResult =
  | { ok: true; reason?: undefined; scope: string; kid: string; expiresAt: number }
  | { ok: false; reason: VerifyReason };

export interface VerifyOptions {
  /** The same secret or keyring given to createChallenge (any kid still in the ring verifies). */
  secret?: Secret;
  /** The scope this request is for; the challenge must have been made for exactly this scope. */
  scope: string;
  /** Where redeemed challenges are remembered until they expire. */
  store: SpentStore;
  /** Wall-clock ms since the epoch; injected by tests. */
  now?: number;
}

const fail = (reason: VerifyReason): VerifyResult => ({ ok: false, reason });

/**
 * @example
 * const r = await verifySolution(req.body.pow, { secret, scope: `login:${username}`, store });
 * if (!r.ok) return res.status(403).json({ error: r.reason });
 */
export async function verifySolution(solution: unknown, options: VerifyOptions): Promise<VerifyResult> {
  const ring = resolveSecret(options?.secret, 'verifySolution');
  const { scope, store } = options;
  if (typeof scope !== 'string') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `verifySolution: 'scope' must be a string, got ${show(scope)}`);
  }
  if (typeof store !== 'object' || store === null || typeof store.spend !== 'function') {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `verifySolution: 'store' must be a spent store such as new MemorySpentStore(), got ${show(store)}`,
    );
  }
  const now = options.now ?? Date.now();

  const parsed = parseSolution(solution);
  if (parsed === undefined || parsed.fields.algorithm !== ALGORITHM) return fail('malformed');
  const key = ring.keys.get(parsed.fields.kid);
  if (key === undefined) return fail('bad-signature');
  if (!bytesEqual(macOf(key, parsed.payload), parsed.mac)) return fail('bad-signature');
  // Only signed fields are trusted from here on.
  const { fields } = parsed;
  if (fields.scope !== scope) return fail('wrong-scope');
  if (now >= fields.expiresAt) return fail('expired');
  if (!checkNonces(parsed.mac, fields.target, parsed.nonces)) return fail('invalid');
  // The MAC identifies the challenge; half of it is plenty to keep ids apart and halves the store's keys.
  const id = encodeBase64url(parsed.mac.subarray(0, 16));
  const spent = await store.spend(id, fields.expiresAt, now);
  if (spent === 'expired') return fail('expired'); // by the store's clock, which every server shares
  if (!spent) return fail('replayed');
  return { ok: true, scope: fields.scope, kid: fields.kid, expiresAt: fields.expiresAt };
}
