/**
 * @sluice/pow: stateless signed proof-of-work challenges, their verifier, a Node solver and a difficulty
 * policy. The browser solver and the <sluice-pow> widget are built from ./browser/ into a static file.
 *
 * @example
 * import { createChallenge, verifySolution, solveChallenge, MemorySpentStore } from '@sluice/pow';
 * const store = new MemorySpentStore();
 * const ch = createChallenge({ secret, difficulty: 50_000, scope: 'login:alice', ttlMs: 60_000 });
 * const solution = await solveChallenge(ch);
 * const r = await verifySolution(solution, { secret, scope: 'login:alice', store }); // r.ok === true
 */
export { createChallenge, type Challenge, type CreateChallengeOptions } from './challenge.js';
export { verifySolution, type VerifyOptions, type VerifyReason, type VerifyResult } from './verify.js';
export { solveChallenge, type SolveOptions } from './solve.js';
export { MemorySpentStore, type MemorySpentStoreOptions, type SpendResult, type SpentStore } from './spent-store.js';
export {
  RedisSpentStore,
  type RedisDialect,
  type RedisSetClient,
  type RedisSpentStoreOptions,
} from './redis-spent-store.js';
export { DEFAULT_KID, type Keyring, type Secret, type SecretValue } from './keyring.js';
export { DEFAULT_PUZZLES, expectedWork } from './difficulty.js';
export {
  DEFAULT_DIFFICULTY_POLICY,
  difficultyFor,
  type DifficultyInput,
  type DifficultyPolicy,
  type LoadLevel,
} from './policy.js';
