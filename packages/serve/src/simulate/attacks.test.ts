// The low-and-slow scenarios end to end on a smaller population, through the real Guard: slow spraying is
// refused by the long per-address count with the stranger-failure anomaly, and slow stuffing shows the
// trade-off the README documents (delays only by default; a challenge for every stranger at weight 2).
// With no leaked corpus: the application passes no leakedCredential, for its users (leakedPairShare 0) or
// for the attackers (makeAttacks without a corpus); stuffing.test.ts measures the corpus.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRandom } from '../../../sluice/src/support/random.js';
import { makeAttacks } from './attacks.js';
import { DEFAULT_POPULATION, makeUsers } from './population.js';
import { runScenario } from './run.js';

const population = { ...DEFAULT_POPULATION, users: 2000, leakedPairShare: 0, proofShare: 0 };
const users = makeUsers(population, seededRandom(3));
const scenario = (name: string) => makeAttacks(users, seededRandom(4)).find((a) => a.name === name)!;

test('spraying-slow: at least 99% refused after 5 min, no legitimate user blocked, at most 1% challenged', async () => {
  const r = await runScenario(scenario('spraying-slow'), users, population, 17);
  assert.ok(r.refusedAfterGrace / r.afterGrace >= 0.99, `${r.refusedAfterGrace} of ${r.afterGrace}`);
  assert.ok(r.compromised <= 0.1 * r.compromisedNoGuard, `${r.compromised} of ${r.compromisedNoGuard}`);
  assert.ok(
    r.attackReasons.has('ip-distinct-accounts-long') && r.attackReasons.has('stranger-failure-anomaly'),
    [...r.attackReasons.keys()].join(),
  );
  assert.equal(r.legitBlocked, 0);
  assert.ok(
    r.legitChallenged + r.legitSteppedUp <= 0.01 * r.legitUsers,
    `${r.legitChallenged} challenged, ${r.legitSteppedUp} stepped up`,
  );
});

test('stuffing-slow: the stranger-failure anomaly sees it; at weight 2 it refuses 99%, at the price of challenging strangers', async () => {
  const byDefault = await runScenario(scenario('stuffing-slow'), users, population, 18);
  assert.ok(byDefault.legitChallenged <= 0.01 * byDefault.legitUsers);
  assert.ok(byDefault.legitDelayed > 0, 'strangers are delayed while the anomaly holds');
  const strict = await runScenario(scenario('stuffing-slow'), users, population, 18, {
    weights: { strangerAnomaly: 2 },
  });
  assert.ok(
    strict.refusedAfterGrace / strict.afterGrace >= 0.99,
    `${strict.refusedAfterGrace} of ${strict.afterGrace}`,
  );
  assert.ok(
    strict.compromised <= 0.1 * strict.compromisedNoGuard,
    `${strict.compromised} of ${strict.compromisedNoGuard}`,
  );
  assert.equal(strict.legitBlocked, 0);
  assert.ok(
    strict.detectionMs !== undefined && strict.detectionMs < 3_600_000,
    `detected after ${strict.detectionMs} ms`,
  );
});

test('stuffing-slow over 8 servers: per process each sees an eighth and refuses almost nothing; with anomalyScope fleet they refuse what one server does', async () => {
  const one = await runScenario(scenario('stuffing-slow'), users, population, 18);
  const perProcess = await runScenario(scenario('stuffing-slow'), users, population, 18, {}, { servers: 8 });
  const fleet = await runScenario(
    scenario('stuffing-slow'),
    users,
    population,
    18,
    { anomalyScope: 'fleet' },
    { servers: 8 },
  );
  assert.ok(one.refusedAfterGrace > 100, `one server refused ${one.refusedAfterGrace}`);
  assert.ok(
    perProcess.refusedAfterGrace < one.refusedAfterGrace / 10,
    `per process ${perProcess.refusedAfterGrace} against ${one.refusedAfterGrace}`,
  );
  assert.ok(
    fleet.refusedAfterGrace >= 0.9 * one.refusedAfterGrace,
    `fleet ${fleet.refusedAfterGrace} against ${one.refusedAfterGrace}`,
  );
});
