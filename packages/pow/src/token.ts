/**
 * The wire forms, shared by server and solvers (no Node APIs here, so the browser bundle can use it):
 *   challenge token  = base64url(payload) "." base64url(mac)
 *   solution         = token "." base64url(nonces)    nonces: one u32 big-endian per sub-puzzle
 * The MAC is HMAC-SHA-256 of the payload under a key derived for this use (keyring.ts), and doubles as the puzzles' seed: unique per
 * challenge and fixed by everything signed.
 */
import { decodeBase64url, encodeBase64url, type HmacKey, hmacSha256, puzzleHash48, puzzleSeed } from 'sluice/kit';
import { decodeChallenge, encodeChallenge, LIMITS, type ChallengeFields } from './encoding.js';

/** Longest payload a valid challenge can have; anything longer is rejected before decoding. */
export const MAX_PAYLOAD_BYTES =
  1 + 1 + LIMITS.kidBytes + 1 + LIMITS.algorithmBytes + 1 + LIMITS.saltBytes + 6 + 1 + 6 + 2 + LIMITS.scopeBytes;
/** Longest solution text worth parsing: base64url of the largest payload, MAC and nonces, plus dots. */
export const MAX_SOLUTION_CHARS = Math.ceil(((MAX_PAYLOAD_BYTES + 32 + 4 * LIMITS.maxPuzzles) * 4) / 3) + 8;

/** `key` is a derived MAC key from resolveSecret(), never the raw secret. */
export function macOf(key: HmacKey, payload: Uint8Array): Uint8Array {
  return hmacSha256(key, payload);
}

export function signToken(fields: ChallengeFields, key: HmacKey): string {
  const payload = encodeChallenge(fields);
  return `${encodeBase64url(payload)}.${encodeBase64url(macOf(key, payload))}`;
}

export interface ParsedToken {
  payload: Uint8Array;
  fields: ChallengeFields;
  mac: Uint8Array;
}

export interface ParsedSolution extends ParsedToken {
  nonces: Uint32Array;
}

/** Parses a challenge token, or returns undefined if it is not one (nothing is verified here). */
export function parseToken(token: unknown): ParsedToken | undefined {
  if (typeof token !== 'string' || token.length > MAX_SOLUTION_CHARS) return undefined;
  const dot = token.indexOf('.');
  if (dot < 0 || token.indexOf('.', dot + 1) >= 0) return undefined;
  return parseParts(token.slice(0, dot), token.slice(dot + 1));
}

function parseParts(payloadText: string, macText: string): ParsedToken | undefined {
  const payload = decodeBase64url(payloadText);
  const mac = decodeBase64url(macText);
  if (payload === undefined || mac === undefined || mac.length !== 32 || payload.length > MAX_PAYLOAD_BYTES)
    return undefined;
  const fields = decodeChallenge(payload);
  return fields === undefined ? undefined : { payload, fields, mac };
}

/** Parses a solution: exactly one nonce per sub-puzzle, or undefined. */
export function parseSolution(solution: unknown): ParsedSolution | undefined {
  if (typeof solution !== 'string' || solution.length > MAX_SOLUTION_CHARS) return undefined;
  // indexOf rather than split: verification runs this per request, and split allocates an array.
  const dot1 = solution.indexOf('.');
  const dot2 = dot1 < 0 ? -1 : solution.indexOf('.', dot1 + 1);
  if (dot2 < 0 || solution.indexOf('.', dot2 + 1) >= 0) return undefined;
  const token = parseParts(solution.slice(0, dot1), solution.slice(dot1 + 1, dot2));
  const raw = decodeBase64url(solution.slice(dot2 + 1));
  if (token === undefined || raw === undefined || raw.length !== token.fields.puzzles * 4) return undefined;
  const nonces = new Uint32Array(token.fields.puzzles);
  for (let i = 0; i < nonces.length; i++) {
    const j = i * 4;
    nonces[i] = ((raw[j]! << 24) | (raw[j + 1]! << 16) | (raw[j + 2]! << 8) | raw[j + 3]!) >>> 0;
  }
  return { payload: token.payload, fields: token.fields, mac: token.mac, nonces };
}

export function formatSolution(token: string, nonces: ArrayLike<number>): string {
  const raw = new Uint8Array(nonces.length * 4);
  const view = new DataView(raw.buffer);
  for (let i = 0; i < nonces.length; i++) view.setUint32(i * 4, nonces[i]!);
  return `${token}.${encodeBase64url(raw)}`;
}

/** True when every sub-puzzle's nonce hashes below the target: one hash each. */
export function checkNonces(mac: Uint8Array, target: number, nonces: Uint32Array): boolean {
  const seed = puzzleSeed(mac);
  let ok = true;
  // No early exit: a wrong answer costs what a right one does, so timing shows nothing about which failed.
  for (let i = 0; i < nonces.length; i++) ok = puzzleHash48(seed, i, nonces[i]! | 0) < target && ok;
  return ok;
}
