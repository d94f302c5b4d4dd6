/**
 * The challenge's canonical binary encoding: one layout, fixed field order, every variable-length field
 * length-prefixed, and a strict decoder that rejects trailing bytes. So distinct challenges always encode
 * to distinct bytes (the decoder is a left inverse), which is what the HMAC signs. ALTCHA v1 signed fields
 * joined without separators, and one field's digits could be moved into the next (CVE-2025-68113).
 *
 * Layout of version 1 (big-endian):
 *   u8 version | u8 len, kid | u8 len, algorithm | u8 len, salt | u48 target | u8 puzzles
 *   | u48 expiresAt (ms since the epoch) | u16 len, scope (UTF-8)
 */

export const VERSION = 1;
export const ALGORITHM = 'SHA-256';
/** MAC keys are derived from the secret with this label, so a sluice MAC is never confused with another use of the secret. */
export const MAC_DOMAIN = 'sluice-pow\u0000';

export const LIMITS = {
  kidBytes: 64,
  algorithmBytes: 32,
  saltBytes: 64,
  scopeBytes: 1024,
  maxPuzzles: 64,
  /** Targets are 48-bit thresholds: a hash passes when its first 48 bits are below the target. */
  targetSpace: 2 ** 48,
} as const;

export interface ChallengeFields {
  version: number;
  kid: string;
  algorithm: string;
  salt: Uint8Array;
  /** Per sub-puzzle threshold in [1, 2^48]: expected hashes per sub-puzzle = 2^48 / target. */
  target: number;
  puzzles: number;
  expiresAt: number;
  scope: string;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

function isUint(n: unknown, max: number): n is number {
  return typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= max;
}

/** Encodes `fields`, or throws a plain Error naming the field when one is out of range (callers validate first). */
export function encodeChallenge(f: ChallengeFields): Uint8Array {
  const kid = encoder.encode(f.kid);
  const alg = encoder.encode(f.algorithm);
  const scope = encoder.encode(f.scope);
  if (!isUint(f.version, 255)) throw new Error('version');
  if (kid.length > LIMITS.kidBytes) throw new Error('kid');
  if (alg.length > LIMITS.algorithmBytes) throw new Error('algorithm');
  if (f.salt.length > LIMITS.saltBytes) throw new Error('salt');
  if (!isUint(f.target, LIMITS.targetSpace) || f.target < 1) throw new Error('target');
  if (!isUint(f.puzzles, LIMITS.maxPuzzles) || f.puzzles < 1) throw new Error('puzzles');
  if (!isUint(f.expiresAt, 2 ** 48 - 1)) throw new Error('expiresAt');
  if (scope.length > LIMITS.scopeBytes) throw new Error('scope');
  // A target of exactly 2^48 (every hash passes) is stored as 0, the one value a real target never takes.
  const target = f.target === LIMITS.targetSpace ? 0 : f.target;
  const out = new Uint8Array(1 + 1 + kid.length + 1 + alg.length + 1 + f.salt.length + 6 + 1 + 6 + 2 + scope.length);
  const view = new DataView(out.buffer);
  let o = 0;
  out[o++] = f.version;
  out[o++] = kid.length;
  out.set(kid, o);
  o += kid.length;
  out[o++] = alg.length;
  out.set(alg, o);
  o += alg.length;
  out[o++] = f.salt.length;
  out.set(f.salt, o);
  o += f.salt.length;
  o = writeU48(view, o, target);
  out[o++] = f.puzzles;
  o = writeU48(view, o, f.expiresAt);
  view.setUint16(o, scope.length);
  o += 2;
  out.set(scope, o);
  return out;
}

/** Decodes a version-1 payload, or returns undefined for anything that is not exactly one. */
export function decodeChallenge(bytes: Uint8Array): ChallengeFields | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let o = 0;
  const need = (n: number) => o + n <= bytes.length;
  if (!need(1)) return undefined;
  const version = bytes[o++]!;
  if (version !== VERSION) return undefined;
  const kid = readShort(bytes, o, LIMITS.kidBytes);
  if (kid === undefined) return undefined;
  o += 1 + kid.length;
  const alg = readShort(bytes, o, LIMITS.algorithmBytes);
  if (alg === undefined) return undefined;
  o += 1 + alg.length;
  const salt = readShort(bytes, o, LIMITS.saltBytes);
  if (salt === undefined) return undefined;
  o += 1 + salt.length;
  if (!need(6 + 1 + 6 + 2)) return undefined;
  const rawTarget = readU48(view, o);
  o += 6;
  const puzzles = bytes[o++]!;
  const expiresAt = readU48(view, o);
  o += 6;
  const scopeLen = view.getUint16(o);
  o += 2;
  if (scopeLen > LIMITS.scopeBytes || o + scopeLen !== bytes.length) return undefined;
  if (puzzles < 1 || puzzles > LIMITS.maxPuzzles) return undefined;
  const kidText = text(kid);
  const algText = text(alg);
  const scope = text(bytes.subarray(o, o + scopeLen));
  if (kidText === undefined || algText === undefined || scope === undefined) return undefined;
  const target = rawTarget === 0 ? LIMITS.targetSpace : rawTarget;
  return { version, kid: kidText, algorithm: algText, salt, target, puzzles, expiresAt, scope };
}

/** Strict UTF-8 decoding, with a fast path for ASCII (kids, the algorithm and most scopes). */
function text(bytes: Uint8Array): string | undefined {
  let ascii = true;
  for (let i = 0; i < bytes.length; i++)
    if (bytes[i]! > 0x7f) {
      ascii = false;
      break;
    }
  if (ascii) return String.fromCharCode.apply(null, bytes as unknown as number[]);
  try {
    return decoder.decode(bytes);
  } catch {
    return undefined;
  }
}

function readShort(bytes: Uint8Array, o: number, max: number): Uint8Array | undefined {
  if (o >= bytes.length) return undefined;
  const len = bytes[o]!;
  if (len > max || o + 1 + len > bytes.length) return undefined;
  return bytes.subarray(o + 1, o + 1 + len);
}

function writeU48(view: DataView, o: number, n: number): number {
  view.setUint16(o, Math.floor(n / 2 ** 32));
  view.setUint32(o + 2, n >>> 0);
  return o + 6;
}

function readU48(view: DataView, o: number): number {
  return view.getUint16(o) * 2 ** 32 + view.getUint32(o + 2);
}
