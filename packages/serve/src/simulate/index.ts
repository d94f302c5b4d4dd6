// `sluice simulate attacks`: builds the population and the attacks from one seed, plays each scenario
// through a Guard with its defaults, and prints what got through and whom it hindered.
import { seededRandom } from 'sluice/kit';
import { formatTable } from '../support/table.js';
import { DEFAULT_LEAK_COVERAGE, makeAttacks } from './attacks.js';
import { DEFAULT_POPULATION, makeUsers, type PopulationSettings } from './population.js';
import { runScenario, type ScenarioResult } from './run.js';

export interface SimulateOptions {
  readonly seed: number;
  readonly users: number;
  /** Only these scenarios (by name); all when empty. */
  readonly only: readonly string[];
  /** App servers: guards sharing one state and store (as on one Redis), logins spread over them. Default 1. */
  readonly servers?: number;
  /** The guards' anomalyScope. Default 'process'. */
  readonly anomalyScope?: 'process' | 'fleet';
  /** Days of legitimate traffic before the attack's day; 0: a fresh guard, with no history, meets it. Default 3. */
  readonly warmupDays?: number;
  /** The guards' successStepUp. Default the guard's ('suspicious'). */
  readonly successStepUp?: 'off' | 'suspicious' | 'stuffing';
  /** Share of a stuffer's pairs the defender's leaked corpus holds, 0 to 1. Default DEFAULT_LEAK_COVERAGE (0.9). */
  readonly leakCoverage?: number;
  /** Share of users whose own account+password pair the corpus holds, 0 to 1. Default 0.015 (DEFAULT_POPULATION). */
  readonly leakedPairShare?: number;
  /** Share of users whose client carries the login page's proof of work, 0 to 1. Default 0.98 (DEFAULT_POPULATION). */
  readonly proofShare?: number;
  /** Share of the attacker's attempts that carry it, 0 to 1. Default 0. */
  readonly attackerProofShare?: number;
}

export const SCENARIO_NAMES = [
  'brute-force',
  'credential-stuffing',
  'spraying-200-ips',
  'spraying-one-/64',
  'brute-force-slow',
  'stuffing-slow',
  'spraying-slow',
];

/** A share as a percentage, without trailing zeros: 0.015 → '1.5%'. */
const share = (x: number) => `${Number((100 * x).toFixed(2))}%`;
const pct = (n: number, of: number) => (of === 0 ? '-' : `${((100 * n) / of).toFixed(n === of || n === 0 ? 0 : 2)}%`);

function duration(ms: number | undefined): string {
  if (ms === undefined) return 'never';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 7_200_000) return `${(ms / 60_000).toFixed(1)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

/** Reasons by how often they were named, most first. */
function reasonList(reasons: ReadonlyMap<string, number>): string {
  if (reasons.size === 0) return 'none';
  return [...reasons]
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
}

export async function simulateAttacks(
  options: SimulateOptions,
  onResult?: (r: ScenarioResult) => void,
): Promise<ScenarioResult[]> {
  const population: PopulationSettings = {
    ...DEFAULT_POPULATION,
    users: options.users,
    leakedPairShare: options.leakedPairShare ?? DEFAULT_POPULATION.leakedPairShare,
    proofShare: options.proofShare ?? DEFAULT_POPULATION.proofShare,
  };
  const users = makeUsers(population, seededRandom(options.seed));
  // The corpus draws from a stream of its own, so that its coverage changes nothing else in the attacks.
  const corpus = {
    leakCoverage: options.leakCoverage ?? DEFAULT_LEAK_COVERAGE,
    random: seededRandom(options.seed ^ 0x1eac0de),
  };
  const attacks = makeAttacks(users, seededRandom(options.seed + 1), corpus).filter(
    (a) => options.only.length === 0 || options.only.includes(a.name),
  );
  const results: ScenarioResult[] = [];
  for (const attack of attacks) {
    // Seeded by the scenario's place in the full list, so running a subset replays the same scenario.
    const guard = {
      anomalyScope: options.anomalyScope ?? 'process',
      ...(options.successStepUp === undefined ? {} : { successStepUp: options.successStepUp }),
    };
    // A fresh guard meets the attack in its first minutes; a warmed-up one 6 h into the measured period.
    const settings = {
      servers: options.servers ?? 1,
      warmupDays: options.warmupDays ?? 3,
      attackerProofShare: options.attackerProofShare ?? 0,
      ...(options.warmupDays === 0 ? { attackOffsetMs: 60_000 } : {}),
    };
    const r = await runScenario(
      attack,
      users,
      population,
      options.seed + 100 + SCENARIO_NAMES.indexOf(attack.name),
      guard,
      settings,
    );
    onResult?.(r);
    results.push(r);
  }
  return results;
}

export function formatResults(options: SimulateOptions, results: readonly ScenarioResult[]): string {
  const attackRows = results.map((r) => [
    r.name,
    String(r.attempts),
    `${r.through} (${pct(r.through, r.attempts)})`,
    pct(r.refusedAfterGrace, r.afterGrace),
    `${r.compromised} / ${r.compromisedNoGuard}`,
    String(r.stoppedAtSuccess),
    duration(r.detectionMs),
  ]);
  const legitRows = results.map((r) => [
    r.name,
    String(r.legitUsers),
    `${r.legitDelayed} (${pct(r.legitDelayed, r.legitUsers)})`,
    `${r.legitChallenged} (${pct(r.legitChallenged, r.legitUsers)})`,
    `${r.legitSteppedUp} (${pct(r.legitSteppedUp, r.legitUsers)})`,
    `${r.legitSteppedUpAtSuccess} (${pct(r.legitSteppedUpAtSuccess, r.legitUsers)})`,
    `${r.legitChallengedOrSteppedUp} (${pct(r.legitChallengedOrSteppedUp, r.legitUsers)})`,
    `${r.legitBlocked} (${pct(r.legitBlocked, r.legitUsers)})`,
  ]);
  const right = 'right' as const;
  return [
    `sluice simulate attacks --seed ${options.seed} --users ${options.users}${(options.servers ?? 1) > 1 ? ` --servers ${options.servers}` : ''}${options.anomalyScope === 'fleet' ? ' --anomaly-scope fleet' : ''}${options.warmupDays !== undefined && options.warmupDays !== 3 ? ` --warmup-days ${options.warmupDays}` : ''}${options.successStepUp !== undefined ? ` --step-up ${options.successStepUp}` : ''}${options.leakCoverage !== undefined ? ` --leak-coverage ${options.leakCoverage}` : ''}${options.leakedPairShare !== undefined ? ` --leaked-pair-share ${options.leakedPairShare}` : ''}${options.proofShare !== undefined ? ` --proof-share ${options.proofShare}` : ''}${options.attackerProofShare !== undefined ? ` --attacker-proof-share ${options.attackerProofShare}` : ''}`,
    `${options.users} users (1% with a common password; 60% own IPv4, 25% behind shared NATs, 15% IPv6 privacy addresses;`,
    `80% keep a device cookie), 2 logins a day each, 4% of logins with typos, 0.5% first typing an account name that does not exist,`,
    `3% from another network, 1% on a new device; ${share(options.leakedPairShare ?? DEFAULT_POPULATION.leakedPairShare)} with their own account+password pair in the leaked corpus,`,
    `which holds ${share(options.leakCoverage ?? DEFAULT_LEAK_COVERAGE)} of a stuffer's pairs; ${share(options.proofShare ?? DEFAULT_POPULATION.proofShare)} of users' clients and ${share(options.attackerProofShare ?? 0)} of the attacker's attempts`,
    `carry the login page's proof of work; ${options.warmupDays === 0 ? 'a fresh guard with no history: the attack starts 1 min in' : `${options.warmupDays ?? 3} warm-up days of legitimate traffic (not counted), then the attack 6 h into the measured period`}.`,
    `Guard defaults throughout${options.successStepUp !== undefined ? `, but successStepUp '${options.successStepUp}'` : ''}.`,
    '',
    'Attackers (an attempt gets through when it reaches password verification: allowed, or delayed and waited out;',
    'the attacker solves no challenge and passes no MFA)',
    ...formatTable(
      [
        { header: 'scenario', align: 'left' },
        { header: 'attempts', align: right },
        { header: 'got through', align: right },
        { header: 'refused after 5 min', align: right },
        { header: 'compromised / no guard', align: right },
        { header: 'stopped at success', align: right },
        { header: 'detected after', align: right },
      ],
      attackRows,
    ),
    '',
    'Legitimate users who met each step at least once in the measured period',
    ...formatTable(
      [
        { header: 'scenario', align: 'left' },
        { header: 'users', align: right },
        { header: 'delayed', align: right },
        { header: 'challenged', align: right },
        { header: 'stepped up (MFA)', align: right },
        { header: 'of which at success', align: right },
        { header: 'challenged or MFA', align: right },
        { header: 'blocked', align: right },
      ],
      legitRows,
    ),
    'Why attackers were refused (reasons in the refusing verdicts, with how many refused attempts named each)',
    ...results.map((r) => `  ${r.name}: ${reasonList(r.attackReasons)}`),
    'Why legitimate users were hindered (the same, for their attempts that were not allowed)',
    ...results.map((r) => `  ${r.name}: ${reasonList(r.legitReasons)}`),
    '',
    ...results.map((r) => `${r.name}: ${r.description}`),
    '',
  ].join('\n');
}
