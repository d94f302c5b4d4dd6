// The leaked-credential signal: an attempt whose account+password pair the application found in a leaked
// corpus is stepped up to MFA on a stranger's path, at check() and at a success, and never on a familiar or
// allow-listed one. Uses only `guard` and the clock, so test/redis/guard-suites.test.ts runs it on Redis too.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { lone, makeGuard, v4 } from '../test/support/guard-kit.js';
import type { Guard } from './guard.js';

/** A login that works from a path, making it familiar: check, then record the success. */
async function loginFrom(guard: Guard, account: string, ip: string, fingerprint?: string): Promise<void> {
  const attempt = fingerprint === undefined ? { account, ip } : { account, ip, fingerprint };
  await guard.check(attempt);
  assert.equal((await guard.record({ ...attempt, success: true })).action, 'allow');
}

test('check(): a stranger with a leaked pair is asked for MFA, naming leaked-credential; the same attempt without it is allowed', async () => {
  const { guard } = makeGuard();
  const plain = await guard.check({ account: 'alice', ip: lone(1) });
  assert.deepEqual([plain.action, plain.reasons], ['allow', []]);
  const leaked = await guard.check({ account: 'bob', ip: lone(2), leakedCredential: true });
  assert.deepEqual([leaked.action, leaked.reasons, leaked.risk], ['mfa', ['leaked-credential'], 0]);
  const notLeaked = await guard.check({ account: 'carol', ip: lone(3), leakedCredential: false });
  assert.deepEqual([notLeaked.action, notLeaked.reasons], ['allow', []]);
});

test('check(): the leaked-credential step-up is a floor of MFA whatever the thresholds, and never a block by itself', async () => {
  const { guard } = makeGuard({ mfaAt: 10, blockAt: 10 });
  const v = await guard.check({ account: 'bob', ip: lone(2), leakedCredential: true });
  assert.deepEqual([v.action, v.retryAfterMs], ['mfa', 0]);
  const low = makeGuard({ challengeAt: 1, mfaAt: 1, blockAt: 1 });
  assert.equal((await low.guard.check({ account: 'bob', ip: lone(2), leakedCredential: true })).action, 'mfa');
});

test("check(): the attempt's own evidence still climbs above the leaked-credential floor", async () => {
  const { guard } = makeGuard({ weights: { ipDistinctAccounts: 6 } });
  for (let i = 0; i < 10; i++)
    await guard.record({ account: `sprayed${i}`, ip: lone(10), success: false, password: 'Summer2026!' });
  const v = await guard.check({ account: 'ivan', ip: lone(10), leakedCredential: true });
  assert.equal(v.action, 'block');
  assert.deepEqual(v.reasons, ['leaked-credential', 'ip-distinct-accounts', 'failure-ratio']);
});

test('check(): a familiar path is never hindered by a leaked pair, by network or by device', async () => {
  const { guard } = makeGuard();
  await loginFrom(guard, 'dora', v4(1), 'dora-phone');
  const home = await guard.check({ account: 'dora', ip: v4(1), leakedCredential: true });
  assert.deepEqual([home.action, home.reasons], ['allow', []]);
  const device = await guard.check({
    account: 'dora',
    ip: lone(50),
    fingerprint: 'dora-phone',
    leakedCredential: true,
  });
  assert.deepEqual([device.action, device.reasons], ['allow', []]);
  assert.equal(
    (await guard.check({ account: 'dora', ip: lone(51), leakedCredential: true })).action,
    'mfa',
    'neither: a stranger',
  );
});

test('check(): an allow-listed address is never hindered by a leaked pair', async () => {
  const { guard } = makeGuard({ allowList: ['10.0.7.0/24'] });
  const v = await guard.check({ account: 'erin', ip: lone(7), leakedCredential: true });
  assert.deepEqual([v.action, v.reasons], ['allow', []]);
});

test('check(): a stranger stepped up for a leaked pair counts as a failure of its address, as any refused stranger', async () => {
  const { guard } = makeGuard();
  // A slow stuffer's proxy: two leaked pairs refused at check(), never recorded.
  for (const account of ['frank', 'gina'])
    assert.equal((await guard.check({ account, ip: lone(20), leakedCredential: true })).action, 'mfa');
  const v = await guard.check({ account: 'hugo', ip: lone(20) });
  assert.deepEqual([v.action, v.reasons], ['delay', ['ip-distinct-accounts-long']]);
});

test('record(): a leaked stranger success is stepped up with no evidence of stuffing, and records nothing', async () => {
  const { guard } = makeGuard();
  const r = await guard.record({ account: 'ivy', ip: lone(30), success: true, leakedCredential: true });
  assert.deepEqual([r.action, r.reasons, r.counted], ['mfa', ['stranger-success', 'leaked-credential'], false]);
  // Nothing was written: the path is still a stranger's, so it is stepped up again.
  assert.equal((await guard.check({ account: 'ivy', ip: lone(30), leakedCredential: true })).action, 'mfa');
  assert.equal(
    (await guard.record({ account: 'ivy', ip: lone(30), success: true, leakedCredential: true })).action,
    'mfa',
  );
  // Without the flag, and with no evidence of stuffing, the same success goes through.
  const clean = makeGuard();
  assert.equal((await clean.guard.record({ account: 'ivy', ip: lone(30), success: true })).action, 'allow');
});

test('record(): secondFactor completes a leaked stranger success, and the path is familiar from then on', async () => {
  const { guard } = makeGuard();
  const done = await guard.record({
    account: 'jack',
    ip: lone(31),
    success: true,
    leakedCredential: true,
    secondFactor: true,
  });
  assert.deepEqual([done.action, done.reasons], ['allow', []]);
  assert.deepEqual((await guard.check({ account: 'jack', ip: lone(31), leakedCredential: true })).reasons, []);
  assert.equal(
    (await guard.record({ account: 'jack', ip: lone(31), success: true, leakedCredential: true })).action,
    'allow',
  );
});

test("record(): successStepUp 'off' lets a leaked stranger's success through; check() still asks for MFA", async () => {
  const { guard } = makeGuard({ successStepUp: 'off' });
  assert.equal((await guard.check({ account: 'kim', ip: lone(32), leakedCredential: true })).action, 'mfa');
  const r = await guard.record({ account: 'kim', ip: lone(32), success: true, leakedCredential: true });
  assert.deepEqual([r.action, r.reasons], ['allow', []]);
});

test('record(): a leaked success on a familiar path or an allow-listed address is not stepped up', async () => {
  const { guard } = makeGuard({ allowList: ['10.0.33.0/24'] });
  await loginFrom(guard, 'lena', v4(3));
  assert.equal(
    (await guard.record({ account: 'lena', ip: v4(3), success: true, leakedCredential: true })).action,
    'allow',
  );
  assert.equal(
    (await guard.record({ account: 'max', ip: lone(33), success: true, leakedCredential: true })).action,
    'allow',
  );
});

test('leakedCredential is validated in check() and record(), naming the field and the value', async () => {
  const { guard } = makeGuard();
  await assert.rejects(
    guard.check({ account: 'a', ip: lone(1), leakedCredential: 'false' as never }),
    /guard\.check\(\): 'leakedCredential' must be true, false or undefined, got "false"/,
  );
  await assert.rejects(
    guard.record({ account: 'a', ip: lone(1), success: true, leakedCredential: 1 as never }),
    /guard\.record\(\): 'leakedCredential' must be true, false or undefined, got 1/,
  );
  await assert.rejects(
    guard.record({ account: 'a', ip: lone(1), success: false, leakedCredential: null as never }),
    /'leakedCredential' must be true, false or undefined, got null/,
  );
});
