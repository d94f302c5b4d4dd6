/**
 * Difficulty units. A challenge's difficulty is the expected number of SHA-256 hashes to solve all of its
 * sub-puzzles; each sub-puzzle has a 48-bit threshold target, so difficulty moves in steps far finer than
 * the doublings of leading-zero-bit schemes (mCaptcha's difficulty_factor works the same way).
 */
import { LIMITS } from './encoding.js';

/** Default sub-puzzle count. The solve time is a sum of this many geometric draws: its coefficient of
 *  variation is about 1/√16 = 25 %, against ~100 % for one puzzle, at one extra hash per verification. */
export const DEFAULT_PUZZLES = 16;
/** Highest expected work per sub-puzzle: keeps the chance that no u32 nonce solves one below e^-64. */
export const MAX_WORK_PER_PUZZLE = 2 ** 26;

/** The per-puzzle target for `difficulty` expected hashes spread over `puzzles`. */
export function targetFor(difficulty: number, puzzles: number): number {
  const target = Math.round((LIMITS.targetSpace * puzzles) / difficulty);
  return Math.min(LIMITS.targetSpace, Math.max(1, target));
}

/** Expected hashes to solve a challenge with this target and puzzle count. */
export function expectedWork(target: number, puzzles: number): number {
  return (puzzles * LIMITS.targetSpace) / target;
}
