/**
 * The wire forms, shared by server and solvers (no Node APIs here, so the browser bundle can use it):
 *   challenge token  = base64url(payload) "." base64url(mac)
 *   solution         = token "." base64url(nonces)    nonces: one u32 big-endian per sub-puzzle
 * The MAC is HMAC-SHA-256 over MAC_DOMAIN ‖ payload, and doubles as the puzzles' seed: unique per
 * challenge and fixed by everything signed.
 */
import { decodeBase64url, encodeBase64url } from './base64url.js';
import { decodeChallenge, encodeChallenge, LIMITS, MAC_DOMAIN, type ChallengeFields } from './encoding.js';
import { hmacSha256, puzzleHash48, toWords, type HmacKey } from './sha256.js';

const domain = new TextEncoder().encode(MAC_DOMAIN);

/** Longest payload a valid challenge can have; anything longer is rejected before decoding. */
export const MAX_PAYLOAD_BYTES = 1 + 1 + LIMITS.kidBytes + 1 + LIMITS.algorithmBytes + 1 + LIMITS.saltBytes + 6 + 1 + 6 + 2 + LIMITS.scopeBytes;
/** Longest solution text worth parsing: base64url of the largest payload, MAC and nonces, plus dots. */
export const MAX_SOLUTION_CHARS = Math.ceil(((MAX_PAYLOAD_BYTES + 32 + 4 * LIMITS.maxPuzzles) * 4) / 3) + 8;

export function macOf(key: HmacKey, payload: Uint8Array): Uint8Array {
  const message = new Uint8Array(domain.length + payload.length);
  message.set(domain);
  message.set(payload, domain.length);
  return hmacSha256(key, message);
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
  if (payload === undefined || mac === undefined || mac.length !== 32 || payload.length > MAX_PAYLOAD_BYTES) return undefined;
  const fields = decodeChallenge(payload);
  return fields === undefined ? undefined : { payload, fields, mac };
}

/** Parses a solution: exactly one nonce per sub-puzzle, or undefined. */
export function parseSolution(solution: unknown): ParsedSolution | undefined {
  if (typeof solution !== 'string' || solution.length > MAX_SOLUTION_CHARS) return undefined;
  const parts = solution.split('.', 4);
  if (parts.length !== 3) return undefined;
  const token = parseParts(parts[0]!, parts[1]!);
  const raw = decodeBase64url(parts[2]!);
  if (token === undefined || raw === undefined || raw.length !== token.fields.puzzles * 4) return undefined;
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  const nonces = new Uint32Array(token.fields.puzzles);
  for (let i = 0; i < nonces.length; i++) nonces[i] = view.getUint32(i * 4);
  return { ...token, nonces };
}

export function formatSolution(token: string, nonces: ArrayLike<number>): string {
  const raw = new Uint8Array(nonces.length * 4);
  const view = new DataView(raw.buffer);
  for (let i = 0; i < nonces.length; i++) view.setUint32(i * 4, nonces[i]!);
  return `${token}.${encodeBase64url(raw)}`;
}

/** True when every sub-puzzle's nonce hashes below the target: one hash each. */
export function checkNonces(mac: Uint8Array, target: number, nonces: Uint32Array): boolean {
  const seed = toWords(mac);
  let ok = true;
  // No early exit: a wrong answer costs what a right one does, so timing shows nothing about which failed.
  for (let i = 0; i < nonces.length; i++) ok = puzzleHash48(seed, i, nonces[i]! | 0) < target && ok;
  return ok;
}
