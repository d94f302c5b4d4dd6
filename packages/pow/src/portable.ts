/**
 * @sluice/pow where Node's built-ins are not (Workers, browsers): everything @sluice/pow exports but
 * RedisSpentStore, whose Redis path hashes its script with node:crypto. package.json serves it under the
 * default condition and the full entry under "node" (Node, Bun and Deno).
 */
export { createChallenge, type Challenge, type CreateChallengeOptions } from './challenge.js';
export { verifySolution, type VerifyOptions, type VerifyReason, type VerifyResult } from './verify.js';
export { solveChallenge, type SolveOptions } from './solve.js';
export { MemorySpentStore, type MemorySpentStoreOptions, type SpendResult, type SpentStore } from './spent-store.js';
export type { RedisDialect, RedisSetClient, RedisSpentStoreOptions } from './redis-spent-store.js';
export { DEFAULT_KID, type Keyring, type Secret, type SecretValue } from './keyring.js';
export { DEFAULT_PUZZLES, expectedWork } from './difficulty.js';
export {
  DEFAULT_DIFFICULTY_POLICY,
  difficultyFor,
  type DifficultyInput,
  type DifficultyPolicy,
  type LoadLevel,
} from './policy.js';
