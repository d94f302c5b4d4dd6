// Low-and-slow stuffing end to end on the smaller population: the takeover stopped at the correct password,
// with and without a leaked corpus, and a fresh guard, with no history, facing a fast wave. Apart from
// attacks.test.ts so each file stays short.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRandom } from '../../../sluice/src/support/random.js';
import { DEFAULT_LEAK_COVERAGE, makeAttacks, type Corpus } from './attacks.js';
import { DEFAULT_POPULATION, makeUsers } from './population.js';
import { runScenario } from './run.js';

// With no leaked corpus the application passes no leakedCredential, for its users or for the attackers;
// and no proof (the login page solves none), except in the test of proofs.
const population = { ...DEFAULT_POPULATION, users: 2000, leakedPairShare: 0, proofShare: 0 };
const users = makeUsers(population, seededRandom(3));
const scenario = (name: string) => makeAttacks(users, seededRandom(4)).find((a) => a.name === name)!;
// With one: the same users, 1.5% of them with their own pair in it, and the corpus holding the share of
// the stuffer's pairs the simulator assumes by default.
const leakedPopulation = { ...DEFAULT_POPULATION, users: 2000, proofShare: 0 };
const leakedUsers = makeUsers(leakedPopulation, seededRandom(3));
const corpus = (leakCoverage: number): Corpus => ({ leakCoverage, random: seededRandom(5) });
const withCorpus = (name: string, leakCoverage = DEFAULT_LEAK_COVERAGE) =>
  makeAttacks(leakedUsers, seededRandom(4), corpus(leakCoverage)).find((a) => a.name === name)!;

test('stuffing-slow with a leaked corpus: the leaked-credential signal stops the takeovers (at most 5 of 50); at most 1% of users stepped up or challenged, none blocked', async () => {
  const r = await runScenario(withCorpus('stuffing-slow'), leakedUsers, leakedPopulation, 18);
  assert.equal(r.compromisedNoGuard, 50);
  assert.ok(r.compromised <= 5, `${r.compromised} of ${r.compromisedNoGuard}`);
  assert.ok(r.attackReasons.has('leaked-credential'), [...r.attackReasons.keys()].join());
  assert.ok(
    r.legitChallenged + r.legitSteppedUp <= 0.01 * r.legitUsers,
    `${r.legitChallenged} challenged, ${r.legitSteppedUp} stepped up`,
  );
  assert.equal(r.legitBlocked, 0);
  // The owners of leaked pairs are met on a new network too: their prompts are the signal's price.
  assert.ok(r.legitReasons.has('leaked-credential'), [...r.legitReasons.keys()].join());
  // The same week with no corpus: the takeovers the signal stopped.
  const none = await runScenario(scenario('stuffing-slow'), users, population, 18);
  assert.ok(
    r.compromised < none.compromised / 3,
    `${r.compromised} with the corpus against ${none.compromised} without`,
  );
});

test('stuffing-slow: successStepUp stuffing stops the takeovers at the correct password; the default steps up only attempts with evidence of their own', async () => {
  const strict = await runScenario(scenario('stuffing-slow'), users, population, 18, { successStepUp: 'stuffing' });
  assert.ok(
    strict.compromised <= 0.1 * strict.compromisedNoGuard,
    `${strict.compromised} of ${strict.compromisedNoGuard}`,
  );
  // The rest were refused before the password: their proxies had failed on other accounts that week.
  assert.ok(strict.stoppedAtSuccess >= 0.5 * strict.compromisedNoGuard, `stopped ${strict.stoppedAtSuccess}`);
  assert.ok(
    strict.attackReasons.has('stranger-success') && strict.attackReasons.has('unknown-account-anomaly'),
    [...strict.attackReasons.keys()].join(),
  );
  assert.equal(strict.legitBlocked, 0);
  const byDefault = await runScenario(scenario('stuffing-slow'), users, population, 18);
  assert.ok(
    byDefault.legitChallenged + byDefault.legitSteppedUp <= 0.01 * byDefault.legitUsers,
    `${byDefault.legitChallenged} challenged, ${byDefault.legitSteppedUp} stepped up`,
  );
  assert.ok(
    byDefault.legitSteppedUpAtSuccess < strict.legitSteppedUpAtSuccess,
    'the default trades takeovers for fewer prompts',
  );
  assert.ok(byDefault.attackReasons.has('source-failed-elsewhere'), [...byDefault.attackReasons.keys()].join());
  const off = await runScenario(scenario('stuffing-slow'), users, population, 18, { successStepUp: 'off' });
  assert.ok(byDefault.compromised < off.compromised, `${byDefault.compromised} against ${off.compromised} with 'off'`);
});

test('a fresh guard (no history) stops a fast stuffing wave within its first 5 minutes', async () => {
  const r = await runScenario(
    scenario('credential-stuffing'),
    users,
    population,
    19,
    {},
    { warmupDays: 0, attackOffsetMs: 60_000 },
  );
  assert.ok(r.detectionMs !== undefined && r.detectionMs < 5 * 60_000, `detected after ${r.detectionMs} ms`);
  assert.ok(r.attackReasons.has('unknown-account-anomaly'), [...r.attackReasons.keys()].join());
  assert.ok(r.compromised <= 0.1 * r.compromisedNoGuard, `${r.compromised} of ${r.compromisedNoGuard}`);
  assert.equal(r.legitBlocked, 0, JSON.stringify([...r.legitReasons]));
});

test("stuffing-slow with proofs: the login page's proof of work, which a scripted stuffer leaves out, stops its takeovers at the correct password", async () => {
  // The users of the test without a corpus, 98% of whose clients bring the page's proof (the default).
  const proofed = { ...population, proofShare: DEFAULT_POPULATION.proofShare };
  const proofUsers = makeUsers(proofed, seededRandom(3));
  const attack = makeAttacks(proofUsers, seededRandom(4)).find((a) => a.name === 'stuffing-slow')!;
  const r = await runScenario(attack, proofUsers, proofed, 18);
  assert.ok(r.compromised <= 5, `${r.compromised} of ${r.compromisedNoGuard}`);
  assert.ok(
    r.attackReasons.has('no-proof') && r.attackReasons.has('proofless-anomaly'),
    [...r.attackReasons.keys()].join(),
  );
  assert.ok(
    r.legitChallenged + r.legitSteppedUp <= 0.01 * r.legitUsers,
    `${r.legitChallenged} challenged, ${r.legitSteppedUp} stepped up`,
  );
  assert.equal(r.legitBlocked, 0);
  // A stuffer whose tooling brings the proof too is back to what the guard sees without proofs.
  const paying = await runScenario(attack, proofUsers, proofed, 18, {}, { attackerProofShare: 1 });
  const none = await runScenario(scenario('stuffing-slow'), users, population, 18);
  assert.ok(!paying.attackReasons.has('no-proof'), [...paying.attackReasons.keys()].join());
  assert.ok(
    r.compromised < paying.compromised && paying.compromised === none.compromised,
    `${r.compromised} against ${paying.compromised} and ${none.compromised} without proofs`,
  );
});
