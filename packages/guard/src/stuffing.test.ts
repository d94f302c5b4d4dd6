// Low-and-slow credential stuffing: the signals a slow stuffer cannot hide (failures on accounts that do not
// exist, the mix of strangers), risk at the moment of success, the cold start, and collateral on shared networks.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { lone, makeGuard, SECRET, T0, v4 } from '../test/support/guard-kit.js';
import { Guard } from './guard.js';
import { MemoryGuardState } from './memory-state.js';
import { MemoryStore } from '../../sluice/src/stores/memory.js';
import type { GuardOptions } from './options.js';

const HOUR = 3_600_000;

/** A leaked list's failures: `n` attempts from `n` addresses, two in three on accounts that do not exist. */
async function leakedList(guard: Guard, n: number, from = 0): Promise<void> {
  for (let i = from; i < from + n; i++) {
    const exists = i % 3 === 0;
    await guard.record({
      account: exists ? `user${i}` : `leak${i}@mail.test`,
      ip: lone(1000 + i),
      success: false,
      password: `leaked-${i}`,
      accountExists: exists,
    });
  }
}

/** A login that works: check, then record the success; returns record's answer. */
async function login(guard: Guard, account: string, ip: string, fingerprint?: string) {
  const attempt = fingerprint === undefined ? { account, ip } : { account, ip, fingerprint };
  await guard.check(attempt);
  return guard.record({ ...attempt, success: true });
}

test('unknown-account-anomaly: a fresh guard sees a leaked list in its first minutes, from the prior alone', async () => {
  const { guard } = makeGuard();
  assert.deepEqual((await guard.check({ account: 'bob', ip: lone(1) })).reasons, [], 'no evidence before the list');
  await leakedList(guard, 30);
  const v = await guard.check({ account: 'bob', ip: lone(2) });
  assert.deepEqual([v.action, v.reasons], ['delay', ['unknown-account-anomaly']]);
  assert.deepEqual((await guard.check({ account: 'bob', ip: lone(2), fingerprint: 'x' })).reasons, [
    'unknown-account-anomaly',
  ]);
});

test('unknown-account-anomaly needs the application to say so: failures on unknown accounts it did not mark count as any', async () => {
  const { guard } = makeGuard();
  for (let i = 0; i < 30; i++)
    await guard.record({ account: `leak${i}@mail.test`, ip: lone(1000 + i), success: false });
  assert.deepEqual((await guard.check({ account: 'bob', ip: lone(2) })).reasons, []);
});

test('risk at success: a correct password from a stranger while stuffing is seen is stepped up to MFA and records nothing; secondFactor completes it', async () => {
  const { guard } = makeGuard({ successStepUp: 'stuffing' });
  await leakedList(guard, 30);
  const stepped = await login(guard, 'alice', lone(7));
  assert.equal(stepped.action, 'mfa');
  assert.deepEqual(stepped.reasons, ['stranger-success', 'unknown-account-anomaly']);
  // Nothing was written: the attacker's source did not become familiar, so the next success is stepped up too.
  assert.equal((await login(guard, 'alice', lone(7))).action, 'mfa');
  // The owner passes the second factor: the login completes, and the path is familiar from then on.
  const done = await guard.record({ account: 'alice', ip: lone(7), success: true, secondFactor: true });
  assert.deepEqual([done.action, done.reasons], ['allow', []]);
  assert.equal((await login(guard, 'alice', lone(7))).action, 'allow');
  assert.deepEqual(
    (await guard.check({ account: 'alice', ip: lone(7) })).reasons,
    [],
    'a familiar source meets no signal',
  );
});

test('risk at success: familiar paths are never stepped up, by device or by network', async () => {
  const { guard } = makeGuard({ successStepUp: 'stuffing' });
  assert.equal((await login(guard, 'bob', v4(1), 'bob-phone')).action, 'allow');
  await leakedList(guard, 30);
  assert.equal((await login(guard, 'bob', v4(1))).action, 'allow', 'known network, no cookie');
  assert.equal((await login(guard, 'bob', lone(500), 'bob-phone')).action, 'allow', 'known device, new network');
  assert.equal((await login(guard, 'bob', lone(501), 'stolen-cookie')).action, 'mfa', 'neither');
});

test('risk at success: without evidence of stuffing a stranger logs in as before', async () => {
  const { guard } = makeGuard();
  const r = await login(guard, 'carol', lone(9));
  assert.deepEqual([r.action, r.reasons], ['allow', []]);
});

test("successStepUp: 'off' never steps up; 'suspicious' needs the attempt's own evidence, such as its address failing on another account", async () => {
  const off = makeGuard({ successStepUp: 'off' });
  await leakedList(off.guard, 30);
  assert.equal((await login(off.guard, 'alice', lone(7))).action, 'allow');

  const { guard, advance } = makeGuard({ successStepUp: 'suspicious' });
  await leakedList(guard, 30);
  assert.equal((await login(guard, 'alice', lone(7))).action, 'allow', 'a clean address');
  // lone(1004) tried leak4@... before: a stuffer's proxy coming back with a valid pair, days later.
  advance(3 * 86_400_000);
  await leakedList(guard, 30, 100);
  const r = await login(guard, 'dave', lone(1004));
  assert.equal(r.action, 'mfa');
  assert.deepEqual(r.reasons, [
    'stranger-success',
    'stranger-failure-anomaly',
    'unknown-account-anomaly',
    'source-failed-elsewhere',
  ]);
});

test("successStepUp 'suspicious': a person's own typos from a new address do not make it a proxy, nor one failure elsewhere in its subnet", async () => {
  const { guard } = makeGuard({ successStepUp: 'suspicious' });
  await leakedList(guard, 30);
  for (const typo of ['erin-typo-1', 'erin-typo-2'])
    await guard.record({ account: 'erin', ip: '10.200.0.1', success: false, password: typo });
  assert.equal((await login(guard, 'erin', '10.200.0.1')).action, 'allow', 'her own typos');
  await guard.record({ account: 'someone-else', ip: '10.201.0.1', success: false, password: 'x' });
  assert.equal((await login(guard, 'frank', '10.201.0.2')).action, 'allow', 'one failed account in the /24');
  await guard.record({ account: 'someone-else', ip: '10.201.0.3', success: true });
  await guard.record({ account: 'a-third', ip: '10.201.0.4', success: false, password: 'y' });
  await guard.record({ account: 'a-fourth', ip: '10.201.0.5', success: false, password: 'z' });
  assert.equal(
    (await login(guard, 'gina', '10.201.0.6')).action,
    'mfa',
    'three failed accounts and one success in the /24',
  );
});

test('legit user blocked in spraying-one-/64: evidence of an attack elsewhere steps an attempt up to MFA, never blocks it', async () => {
  // The global monitors alone, weighted past blockAt: a stranger is asked for a second factor, not refused.
  const { guard } = makeGuard({ weights: { unknownAccountAnomaly: 6, ipDistinctAccounts: 6 } });
  await leakedList(guard, 30);
  const v = await guard.check({ account: 'harry', ip: lone(9) });
  assert.equal(v.action, 'mfa');
  assert.deepEqual(v.reasons, ['unknown-account-anomaly']);
  assert.ok(v.risk >= 6, `risk ${v.risk}`);
  // Its own evidence still blocks: ten accounts failing from one address, a sprayer, at the same weight.
  for (let i = 0; i < 10; i++)
    await guard.record({ account: `sprayed${i}`, ip: lone(10), success: false, password: 'Summer2026!' });
  assert.equal((await guard.check({ account: 'ivan', ip: lone(10) })).action, 'block');
});

test('risk at success without check() in this process: the account and sources are read, and the answer is the same', async () => {
  const state = new MemoryGuardState();
  const store = new MemoryStore();
  let now = T0;
  const make = () =>
    new Guard({ secret: SECRET, state, store, clock: () => now, random: () => 0, successStepUp: 'stuffing' });
  const [a, b] = [make(), make()];
  await leakedList(a, 30);
  await leakedList(b, 30, 100); // each process sees the list
  await a.check({ account: 'erin', ip: lone(8) });
  const r = await b.record({ account: 'erin', ip: lone(8), success: true });
  assert.equal(r.action, 'mfa');
  now += 1;
  await b.record({ account: 'erin', ip: lone(8), success: true, secondFactor: true });
  assert.equal((await login(a, 'erin', lone(8))).action, 'allow', 'familiar, as the state says');
});

test('stranger-mix-anomaly: the share of attempts from unfamiliar paths beyond its baseline; familiar users untouched', async () => {
  const { guard, advance } = makeGuard({ weights: { strangerAnomaly: 0 } });
  // A day of ordinary traffic: 200 logins an hour from home, 2 from strangers.
  for (let u = 0; u < 200; u++) await login(guard, `user${u}`, lone(u));
  for (let h = 0; h < 25; h++) {
    advance(HOUR);
    for (let u = 0; u < 200; u++) await guard.check({ account: `user${u}`, ip: lone(u) });
    for (let s = 0; s < 2; s++) await guard.check({ account: `user${s}`, ip: lone(5000 + 2 * h + s) });
  }
  advance(HOUR);
  assert.deepEqual((await guard.check({ account: 'user1', ip: lone(9000) })).reasons, []);
  // Slow stuffing: 60 strangers an hour on top.
  for (let i = 0; i < 60; i++) await guard.check({ account: `leak${i}@mail.test`, ip: lone(10_000 + i) });
  for (let u = 0; u < 100; u++) await guard.check({ account: `user${u}`, ip: lone(u) });
  assert.deepEqual((await guard.check({ account: 'user1', ip: lone(9001) })).reasons, ['stranger-mix-anomaly']);
  assert.deepEqual((await guard.check({ account: 'user1', ip: lone(1) })).reasons, [], 'the owner at home');
});

test('the global signals of slow stuffing add their largest weight, not their sum: a week of it does not challenge every stranger', async () => {
  const { guard } = makeGuard({ weights: { unknownAccountAnomaly: 1 } });
  await leakedList(guard, 30);
  const v = await guard.check({ account: 'bob', ip: lone(3) });
  assert.equal(v.risk, 1);
  const both = makeGuard({ weights: { unknownAccountAnomaly: 2 } });
  await leakedList(both.guard, 30);
  assert.equal((await both.guard.check({ account: 'bob', ip: lone(3) })).risk, 2);
});

test('cold start: a fresh guard adopts the baselines a guard before it persisted in the shared state', async () => {
  const state = new MemoryGuardState();
  let now = T0 - (T0 % 60_000);
  const options: GuardOptions = {
    secret: SECRET,
    state,
    store: new MemoryStore(),
    clock: () => now,
    random: () => 0,
    baselineSaveEvery: '1m',
  };
  const veteran = new Guard(options);
  // 40 minutes of 2 failures a minute: the failure-rate monitor learns its baseline (warm-up 30 buckets).
  for (let m = 0; m < 40; m++) {
    for (let i = 0; i < 2; i++) await veteran.record({ account: `typo${m}-${i}`, ip: lone(m * 2 + i), success: false });
    now += 60_000;
  }
  await veteran.check({ account: 'x', ip: lone(1) }); // the last minute's save
  const text = state.readBaselines(now);
  assert.ok(text !== undefined && JSON.parse(text).failures.learnt >= 30, text);
  const burst = async (g: Guard) => {
    for (let i = 0; i < 40; i++) await g.record({ account: `wave${i}`, ip: lone(3000 + i), success: false });
    return g.anomalous();
  };
  // A deploy: the new guard's first minute is a flood, and it knows it from the fleet's baseline.
  now += 60_000;
  assert.equal(await burst(new Guard({ ...options, store: new MemoryStore() })), true);
  // The same flood on a guard with no persisted baseline waits out its warm-up.
  assert.equal(await burst(new Guard({ ...options, state: new MemoryGuardState(), store: new MemoryStore() })), false);
});

test('a persisted baseline the guard cannot read or parse is ignored: the guard decides, and learns on its own', async () => {
  const state = new MemoryGuardState();
  state.writeBaselines('{not json', HOUR, T0);
  const { guard } = makeGuard({ state });
  assert.equal((await guard.check({ account: 'a', ip: lone(1) })).action, 'allow');
  const broken = new MemoryGuardState();
  broken.readBaselines = () => {
    throw new Error('down');
  };
  const other = makeGuard({ state: broken });
  assert.equal((await other.guard.check({ account: 'a', ip: lone(1) })).action, 'allow');
});

test('collateral: a /24 shared with a sprayer is not a sprayer while real users log in from it', async () => {
  const run = async (withUsers: boolean) => {
    const { guard } = makeGuard({ ratioMinFailures: 10_000 });
    // Real users at home in 198.51.100.0/24, each familiar with its own address: a first login there makes
    // it familiar, and the logins after vouch for it.
    if (withUsers) for (let u = 0; u < 30; u++) for (let k = 0; k < 2; k++) await login(guard, `home${u}`, v4(100 + u));
    for (let i = 0; i < 20; i++) await guard.record({ account: `victim${i}`, ip: v4(i), success: false });
    return (await guard.check({ account: 'newcomer', ip: v4(200) })).reasons;
  };
  assert.ok((await run(false)).includes('subnet-distinct-accounts'), 'a sprayer alone in its /24');
  assert.ok(!(await run(true)).includes('subnet-distinct-accounts'), 'a /24 where real users log in');
});

test("a stranger's success writes no source record where none failed; a familiar success does", async () => {
  // (A stranger's success on a source that failed counts: signals.test.ts, 'successes dilute it'.)
  const { guard, state } = makeGuard();
  await login(guard, 'dana', v4(7));
  assert.equal(state.sourceCount, 0, 'a first login from a source that never failed: no address or subnet record');
  await login(guard, 'dana', v4(7));
  assert.equal(state.sourceCount, 2, 'a familiar login vouches for its address and subnet');
});

test("a new user's first success clears the hindrance for that path", async () => {
  const { guard } = makeGuard({ ratioMinFailures: 10_000 });
  for (let i = 0; i < 20; i++) await guard.record({ account: `victim${i}`, ip: v4(i), success: false });
  assert.ok((await guard.check({ account: 'newcomer', ip: v4(200) })).reasons.includes('subnet-distinct-accounts'));
  await guard.record({ account: 'newcomer', ip: v4(200), success: true });
  assert.deepEqual((await guard.check({ account: 'newcomer', ip: v4(200) })).reasons, []);
});

test('record() rejects ill-typed accountExists and secondFactor, naming the field', async () => {
  const { guard } = makeGuard();
  await assert.rejects(
    guard.record({ account: 'a', ip: lone(1), success: false, accountExists: 'no' as never }),
    /'accountExists' must be true, false or undefined, got "no"/,
  );
  await assert.rejects(
    guard.record({ account: 'a', ip: lone(1), success: true, secondFactor: 1 as never }),
    /'secondFactor' must be true, false or undefined, got 1/,
  );
  await assert.rejects(
    guard.record({ account: 'a', ip: lone(1), success: true, accountExists: false }),
    /'accountExists' must be true or undefined on a success/,
  );
});

test('successStepUp is validated', () => {
  assert.throws(
    () => makeGuard({ successStepUp: 'always' as never }),
    /'successStepUp' must be 'off', 'suspicious' or 'stuffing', got "always"/,
  );
});
