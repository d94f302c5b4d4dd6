/**
 * Difficulty policy: how much work to ask for, from the guard's risk and the server's load, in the
 * spirit of mCaptcha's visitor levels (a table of load thresholds, each with a difficulty factor).
 *
 * Where the default base figure comes from (docs/pow.md, "Difficulty policy"):
 * - measured: the page's solver (plain-JS SHA-256 in Web Workers) hashes about 2.9 M/s per worker in
 *   headless Chromium 156 on this project's 2-core AMD EPYC build machine (bench/pow-browser.mjs);
 * - assumed, not measured here: a mid-range phone core runs such JS at about a third of that speed
 *   (single-core benchmark ratios of mid-range Android SoCs to desktop x86 cores are roughly 1:3), and
 *   we count only 2 of its cores, since the small cores of big.LITTLE designs add little;
 * - so a mid-range phone solves about 2 M hashes/s, and the first challenge asks for 1 M expected
 *   hashes: about 0.5 s median. Measure your own users' devices and set `baseDifficulty` to match.
 */
import { check, show, SluiceError } from 'sluice/kit';

/** One mCaptcha-style level: at or above `load`, multiply the difficulty by `factor`. */
export interface LoadLevel {
  load: number;
  factor: number;
}

export interface DifficultyPolicy {
  /** Expected hashes for a first challenge at no load. */
  baseDifficulty: number;
  /** Each step of risk multiplies the difficulty by this. */
  riskGrowth: number;
  /** Never ask for more than this many expected hashes. */
  maxDifficulty: number;
  /** Load levels, ascending by `load`. */
  loadLevels: readonly LoadLevel[];
}

export interface DifficultyInput {
  /** 0 for a first challenge; +1 for each further risk step (e.g. each challenge already solved recently
   *  for this account or IP, or each failure past the guard's challenge threshold). */
  risk?: number;
  /** Server load as a fraction of capacity, 0–1 (e.g. login requests per second / sustainable rate). */
  load?: number;
}

export const DEFAULT_DIFFICULTY_POLICY: DifficultyPolicy = Object.freeze({
  baseDifficulty: 1_000_000,
  riskGrowth: 2,
  // 16× the base: about 8 s on the assumed phone, the longest we ask a person to wait.
  maxDifficulty: 16_000_000,
  loadLevels: Object.freeze([
    { load: 0.5, factor: 2 },
    { load: 0.8, factor: 4 },
    { load: 0.95, factor: 8 },
  ]),
});

/**
 * @example
 * const difficulty = difficultyFor({ risk: failuresPastThreshold, load: inflight / capacity });
 * const ch = createChallenge({ secret, difficulty, scope: `login:${account}` });
 */
export function difficultyFor(
  input: DifficultyInput = {},
  policy: DifficultyPolicy = DEFAULT_DIFFICULTY_POLICY,
): number {
  const risk = check.nonNegativeInteger(input.risk ?? 0, "difficultyFor: 'risk'");
  const load = check.nonNegativeNumber(input.load ?? 0, "difficultyFor: 'load'", {
    orInfinity: true,
    note: '(a fraction of capacity)',
  });
  checkPolicy(policy);
  let factor = 1;
  for (const level of policy.loadLevels) if (load >= level.load) factor = level.factor;
  // Computed in logs so a large risk saturates at the cap instead of overflowing to Infinity.
  const log = Math.log(policy.baseDifficulty) + risk * Math.log(policy.riskGrowth) + Math.log(factor);
  return Math.round(Math.min(policy.maxDifficulty, Math.exp(log)));
}

function checkPolicy(p: DifficultyPolicy): void {
  const bad = (field: string, value: unknown, rule: string) =>
    new SluiceError('ERR_SLUICE_INVALID_OPTION', `difficulty policy: '${field}' must be ${rule}, got ${show(value)}`);
  if (!(p.baseDifficulty >= 1) || !Number.isFinite(p.baseDifficulty))
    throw bad('baseDifficulty', p.baseDifficulty, 'a finite number ≥ 1');
  if (!(p.riskGrowth >= 1) || !Number.isFinite(p.riskGrowth))
    throw bad('riskGrowth', p.riskGrowth, 'a finite number ≥ 1');
  if (!(p.maxDifficulty >= p.baseDifficulty) || !Number.isFinite(p.maxDifficulty))
    throw bad('maxDifficulty', p.maxDifficulty, `a finite number ≥ baseDifficulty (${p.baseDifficulty})`);
  let previous = -Infinity;
  for (const [i, level] of p.loadLevels.entries()) {
    if (!(level.load > previous)) throw bad(`loadLevels[${i}].load`, level.load, 'a number above the previous level');
    if (!(level.factor >= 1) || !Number.isFinite(level.factor))
      throw bad(`loadLevels[${i}].factor`, level.factor, 'a finite number ≥ 1');
    previous = level.load;
  }
}
