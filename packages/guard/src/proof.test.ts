// The proof signals: strangers' attempts that come without a proof of work or a CAPTCHA the application
// verified. A run of scripted clients leaves the proof out, and where the login page solves one in the
// background, legitimate strangers rarely do.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { lone, makeGuard } from '../test/support/guard-kit.js';
import type { Guard } from './guard.js';

/** `n` strangers' attempts, each from its own address on its own account; with `proof` or without. */
async function strangers(guard: Guard, from: number, n: number, proof: boolean): Promise<void> {
  for (let i = from; i < from + n; i++)
    await guard.check(proof ? { account: `s${i}`, ip: lone(i), proof: 'pow' } : { account: `s${i}`, ip: lone(i) });
}

test('a site that passes no proof is never judged by it: every stranger without one is no evidence', async () => {
  const { guard } = makeGuard();
  await strangers(guard, 0, 200, false);
  const v = await guard.check({ account: 'eve', ip: lone(500) });
  assert.ok(!v.reasons.includes('proofless-anomaly') && !v.reasons.includes('no-proof'), v.reasons.join());
});

test("proofless-anomaly: once proofs are wired, a run of strangers without one is global evidence; no-proof is the attempt's own", async () => {
  const { guard } = makeGuard();
  await strangers(guard, 0, 40, true); // the login page's proofs: the share without one is low
  assert.deepEqual(
    (await guard.check({ account: 'amy', ip: lone(100) })).reasons,
    [],
    'one stranger without a proof among many with one',
  );
  await strangers(guard, 200, 100, false); // a scripted run: far more than half of the strangers now
  const scripted = await guard.check({ account: 'bot', ip: lone(300) });
  assert.deepEqual(scripted.reasons, ['no-proof', 'proofless-anomaly']);
  // By default no-proof weighs nothing before the password (its work is at the correct one, below): the
  // 2% of legitimate strangers whose client brings no proof are not challenged for it.
  assert.equal(scripted.action, 'delay');
  const person = await guard.check({ account: 'ann', ip: lone(301), proof: 'captcha' });
  assert.deepEqual(person.reasons, ['proofless-anomaly']);
  assert.equal(person.action, 'delay', 'a stranger with a proof meets the global evidence alone');
});

test('weights.noProof: an operator who would rather refuse a proofless stranger before the password challenges it', async () => {
  const { guard } = makeGuard({ weights: { noProof: 1 } });
  await strangers(guard, 0, 40, true);
  await strangers(guard, 200, 100, false);
  assert.equal((await guard.check({ account: 'bot', ip: lone(300) })).action, 'challenge');
  assert.equal((await guard.check({ account: 'ann', ip: lone(301), proof: 'pow' })).action, 'delay');
});

test("no-proof at success: a stranger's correct password without a proof is stepped up while the run lasts; with one it is not", async () => {
  const { guard } = makeGuard();
  await strangers(guard, 0, 40, true);
  await strangers(guard, 200, 100, false);
  const bare = await guard.record({ account: 'carl', ip: lone(400), success: true });
  assert.equal(bare.action, 'mfa');
  assert.ok(bare.reasons.includes('no-proof'), bare.reasons.join());
  const proven = await guard.record({ account: 'cora', ip: lone(401), success: true, proof: 'pow' });
  assert.equal(proven.action, 'allow');
  // A proof given at check() holds for its record.
  await guard.check({ account: 'cleo', ip: lone(402), proof: 'pow' });
  assert.equal((await guard.record({ account: 'cleo', ip: lone(402), success: true })).action, 'allow');
});

test('no-proof never meets a familiar path', async () => {
  const { guard } = makeGuard();
  await guard.check({ account: 'home', ip: lone(900), proof: 'pow' });
  await guard.record({ account: 'home', ip: lone(900), success: true, proof: 'pow' });
  await strangers(guard, 0, 40, true);
  await strangers(guard, 200, 100, false);
  assert.deepEqual((await guard.check({ account: 'home', ip: lone(900) })).reasons, []);
  assert.equal((await guard.record({ account: 'home', ip: lone(900), success: true })).action, 'allow');
});

test("proof is validated: 'pow', 'captcha' or undefined, naming the field", async () => {
  const { guard } = makeGuard();
  await assert.rejects(
    guard.check({ account: 'a', ip: lone(1), proof: 'yes' as never }),
    /guard\.check\(\): 'proof' must be 'pow', 'captcha' or undefined, got "yes"/,
  );
  await assert.rejects(
    guard.record({ account: 'a', ip: lone(1), success: true, proof: true as never }),
    /guard\.record\(\): 'proof' must be 'pow', 'captcha' or undefined, got true/,
  );
  assert.throws(() => makeGuard({ prooflessPrior: 2 }), /prooflessPrior/);
  assert.throws(() => makeGuard({ weights: { noProof: -1 } }), /weights\.noProof/);
});

test('challenge-met: a challenge no harder than the base is met by the proof of work the attempt brought; a harder one is not', async () => {
  const { guard } = makeGuard({ freeFailures: 100 });
  // Five wrong passwords at home: account-failures (2 points), a 16-bit challenge.
  await guard.check({ account: 'tom', ip: lone(1) });
  await guard.record({ account: 'tom', ip: lone(1), success: true });
  for (let i = 0; i < 5; i++) await guard.record({ account: 'tom', ip: lone(1), success: false, password: `typo${i}` });
  const bare = await guard.check({ account: 'tom', ip: lone(1) });
  assert.equal(bare.action, 'challenge');
  assert.equal(bare.challenge, 16);
  const proven = await guard.check({ account: 'tom', ip: lone(1), proof: 'pow' });
  assert.equal(proven.action, 'allow');
  assert.deepEqual(proven.reasons, ['account-failures', 'challenge-met']);
  assert.equal(proven.challenge, undefined);
  // A stranger with the same failures and a hosting address: 4 points, MFA, which no proof meets.
  const { guard: strict } = makeGuard({ freeFailures: 100, hostingRanges: ['10.0.0.0/8'] });
  for (let i = 0; i < 5; i++)
    await strict.record({ account: 'tom', ip: lone(2), success: false, password: `typo${i}` });
  assert.equal((await strict.check({ account: 'tom', ip: lone(2), proof: 'captcha' })).action, 'mfa');
  // 3 points: an 18-bit challenge, harder than the page's background proof.
  const { guard: harder } = makeGuard({ freeFailures: 100, weights: { accountFailures: 3 } });
  for (let i = 0; i < 5; i++)
    await harder.record({ account: 'tom', ip: lone(3), success: false, password: `typo${i}` });
  const v = await harder.check({ account: 'tom', ip: lone(3), proof: 'pow' });
  assert.equal(v.action, 'challenge');
  assert.equal(v.challenge, 18);
  // A solved CAPTCHA meets it.
  assert.equal((await harder.check({ account: 'tom', ip: lone(3), proof: 'captcha' })).action, 'allow');
});
