// The guard's hard throttles, one test each: account backoff and its familiar path, the hard stop, the
// per-address and per-subnet buckets, the account+address pair lane, and repeated wrong passwords.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { lone, makeGuard, v4, v6 } from '../test/support/guard-kit.js';

const fail = (account: string, ip: string, password = `wrong-${Math.random()}`) => ({
  account,
  ip,
  success: false,
  password,
});

test('a clean attempt is allowed with no reasons', async () => {
  const { guard } = makeGuard();
  assert.deepEqual(await guard.check({ account: 'alice', ip: v4(0) }), {
    action: 'allow',
    delayMs: 0,
    retryAfterMs: 0,
    challenge: undefined,
    risk: 0,
    reasons: [],
  });
});

test('account backoff: three free failures, then 1 s doubling; short waits delay, long ones block', async () => {
  const { guard, advance } = makeGuard({ accountChallengeFailures: 100 });
  for (let i = 0; i < 3; i++) await guard.record(fail('alice', lone(i)));
  assert.equal((await guard.check({ account: 'alice', ip: lone(100) })).action, 'allow');
  await guard.record(fail('alice', lone(3)));
  assert.deepEqual(await guard.check({ account: 'alice', ip: lone(100) }), {
    action: 'delay',
    delayMs: 1000,
    retryAfterMs: 0,
    challenge: undefined,
    risk: 0,
    reasons: ['account-backoff'],
  });
  advance(1000);
  assert.equal((await guard.check({ account: 'alice', ip: lone(100) })).action, 'allow');
  const waits: number[] = [];
  for (let i = 4; i < 9; i++) {
    await guard.record(fail('alice', lone(i)));
    const v = await guard.check({ account: 'alice', ip: lone(100) });
    waits.push(v.action === 'delay' ? v.delayMs : -v.retryAfterMs);
  }
  // 2, 4, 8 s are held; 16 and 32 s exceed maxDelay (10 s) and block instead (shown negative).
  assert.deepEqual(waits, [2000, 4000, 8000, -16000, -32000]);
});

test('from the fifth failure strangers are challenged too, and the backoff still holds them', async () => {
  const { guard } = makeGuard();
  for (let i = 0; i < 5; i++) await guard.record(fail('alice', lone(i)));
  assert.deepEqual(await guard.check({ account: 'alice', ip: lone(100) }), {
    action: 'challenge',
    delayMs: 2000,
    retryAfterMs: 0,
    challenge: 16,
    risk: 2,
    reasons: ['account-backoff', 'account-failures'],
  });
});

test('backoff jitter stretches each wait by up to 25%', async () => {
  const { guard } = makeGuard({ random: () => 0.5 });
  for (let i = 0; i < 4; i++) await guard.record(fail('alice', lone(i)));
  assert.equal((await guard.check({ account: 'alice', ip: lone(9) })).delayMs, 1125);
});

test('a familiar address keeps its own counter: strangers locking the account do not lock its owner out', async () => {
  const { guard } = makeGuard();
  await guard.record({ account: 'alice', ip: v4(7), success: true });
  for (let i = 0; i < 30; i++) await guard.record(fail('alice', lone(i)));
  const stranger = await guard.check({ account: 'alice', ip: lone(500) });
  assert.equal(stranger.action, 'block');
  assert.ok(stranger.reasons.includes('account-backoff'));
  assert.equal((await guard.check({ account: 'alice', ip: v4(7) })).action, 'allow');
  // The owner's own typos back off on their own path.
  for (let i = 0; i < 4; i++) await guard.record(fail('alice', v4(7)));
  assert.deepEqual((await guard.check({ account: 'alice', ip: v4(7) })).reasons, ['account-backoff']);
});

test('a familiar device (fingerprint) keeps the light path from a new address', async () => {
  const { guard } = makeGuard();
  await guard.record({ account: 'alice', ip: v4(7), fingerprint: 'device-1', success: true });
  for (let i = 0; i < 30; i++) await guard.record(fail('alice', lone(i)));
  assert.equal((await guard.check({ account: 'alice', ip: lone(900), fingerprint: 'device-1' })).action, 'allow');
  assert.equal((await guard.check({ account: 'alice', ip: lone(900), fingerprint: 'device-2' })).action, 'block');
});

test('IPv6 familiarity is by /64, so a rotating privacy address stays familiar', async () => {
  const { guard } = makeGuard();
  await guard.record({ account: 'alice', ip: v6(1), success: true });
  for (let i = 0; i < 30; i++) await guard.record(fail('alice', lone(i)));
  assert.equal((await guard.check({ account: 'alice', ip: v6(77) })).action, 'allow');
});

test('hard stop at 100 consecutive failures: strangers are blocked, the familiar owner steps up to MFA', async () => {
  const { guard, advance } = makeGuard({ backoffMax: '1s' });
  await guard.record({ account: 'alice', ip: v4(7), success: true });
  for (let i = 0; i < 99; i++) await guard.record(fail('alice', lone(i)));
  advance(2000);
  assert.deepEqual((await guard.check({ account: 'alice', ip: lone(999) })).reasons, ['account-failures']);
  await guard.record(fail('alice', lone(99)));
  advance(2000);
  const stranger = await guard.check({ account: 'alice', ip: lone(999) });
  assert.equal(stranger.action, 'block');
  assert.deepEqual(stranger.reasons, ['account-hard-stop', 'account-failures']);
  assert.equal(stranger.retryAfterMs, 86_400_000 - 2000, 'until the failures are forgotten (failureMemory 1 d)');
  const owner = await guard.check({ account: 'alice', ip: v4(7) });
  assert.equal(owner.action, 'mfa');
  assert.deepEqual(owner.reasons, ['account-hard-stop']);
  // The owner's success (after MFA) does not forgive the strangers: they stay blocked until the failures are
  // forgotten, and the owner keeps stepping up while they stand at the hard stop.
  assert.equal((await guard.record({ account: 'alice', ip: v4(7), success: true })).consecutiveFailures, 100);
  assert.equal((await guard.check({ account: 'alice', ip: lone(999) })).action, 'block');
  assert.equal((await guard.check({ account: 'alice', ip: v4(7) })).action, 'mfa');
  advance(86_400_000);
  assert.equal((await guard.check({ account: 'alice', ip: lone(999) })).action, 'allow');
  assert.equal((await guard.check({ account: 'alice', ip: v4(7) })).action, 'allow');
});

test("a stranger's success (the right password from somewhere new) forgets every failure", async () => {
  const { guard } = makeGuard();
  await guard.record({ account: 'alice', ip: v4(7), success: true });
  for (let i = 0; i < 6; i++) await guard.record(fail('alice', lone(i)));
  assert.equal(
    (await guard.record({ account: 'alice', ip: v4(7), success: true })).consecutiveFailures,
    6,
    'the owner at home forgives nobody',
  );
  assert.equal((await guard.record({ account: 'alice', ip: lone(50), success: true })).consecutiveFailures, 0);
  assert.equal((await guard.check({ account: 'alice', ip: lone(60) })).action, 'allow');
});

test('failures are forgotten failureMemory after the last one', async () => {
  const { guard, advance } = makeGuard({ failureMemory: '1h' });
  for (let i = 0; i < 8; i++) await guard.record(fail('alice', lone(i)));
  advance(3_600_000);
  assert.equal((await guard.check({ account: 'alice', ip: lone(99) })).action, 'allow');
  await guard.record(fail('alice', lone(50)));
  assert.equal((await guard.record(fail('alice', lone(51)))).consecutiveFailures, 2);
});

test('per-address bucket: 100 failures a day, then blocked until one refills (14.4 min)', async () => {
  const { guard, advance } = makeGuard({
    ipDistinctAccounts: 1000,
    ipDistinctAccountsLong: 1000,
    subnetDistinctAccounts: 1000,
    ratioMinFailures: 10_000,
  });
  for (let i = 0; i < 99; i++) await guard.record(fail(`user${i}`, v4(1)));
  assert.equal((await guard.check({ account: 'new', ip: v4(1) })).action, 'allow');
  await guard.record(fail('user99', v4(1)));
  const v = await guard.check({ account: 'new', ip: v4(1) });
  assert.equal(v.action, 'block');
  assert.deepEqual(v.reasons, ['ip-failures']);
  assert.equal(v.retryAfterMs, 864_000);
  assert.equal((await guard.check({ account: 'new', ip: v4(2) })).action, 'allow', 'a neighbour is not blocked');
  advance(864_000);
  assert.equal((await guard.check({ account: 'new', ip: v4(1) })).action, 'allow');
});

test('per-subnet bucket: addresses rotated within one IPv6 /64 share it', async () => {
  // Addresses counted apart (/128), so that only the subnet's bucket sees them all.
  const { guard } = makeGuard({
    ipv6AddressPrefix: 128,
    subnetFailuresPerDay: 50,
    ipDistinctAccounts: 1000,
    subnetDistinctAccounts: 1000,
    ratioMinFailures: 10_000,
  });
  for (let i = 0; i < 50; i++) await guard.record(fail(`user${i}`, v6(i)));
  const v = await guard.check({ account: 'new', ip: v6(999) });
  assert.deepEqual([v.action, v.reasons], ['block', ['subnet-failures']]);
  assert.equal(
    (await guard.check({ account: 'new', ip: '2001:db8:1:3::1' })).action,
    'allow',
    'the next /64 is another subnet',
  );
});

test('the subnet prefix is configurable (IPv4 /16 here)', async () => {
  const { guard } = makeGuard({
    ipv4Subnet: 16,
    subnetFailuresPerDay: 5,
    ipDistinctAccounts: 1000,
    subnetDistinctAccounts: 1000,
    ratioMinFailures: 10_000,
  });
  for (let i = 0; i < 5; i++) await guard.record(fail(`user${i}`, `10.9.${i}.1`));
  assert.deepEqual((await guard.check({ account: 'x', ip: '10.9.200.200' })).reasons, ['subnet-failures']);
  assert.deepEqual((await guard.check({ account: 'x', ip: '10.8.0.1' })).reasons, []);
});

test('pair lane: 10 failures for one account from one address block that pair; a success forgets them', async () => {
  const { guard } = makeGuard({ freeFailures: 1000, accountChallengeFailures: 1000, ratioMinFailures: 10_000 });
  for (let i = 0; i < 10; i++) await guard.record(fail('alice', v4(1)));
  const v = await guard.check({ account: 'alice', ip: v4(1) });
  assert.deepEqual([v.action, v.reasons, v.retryAfterMs], ['block', ['pair-failures'], 360_000]);
  assert.equal((await guard.check({ account: 'alice', ip: v4(2) })).action, 'allow', 'another address is another pair');
  assert.equal((await guard.check({ account: 'bob', ip: v4(1) })).action, 'allow', 'another account is another pair');
  await guard.record({ account: 'alice', ip: v4(1), success: true });
  assert.equal((await guard.check({ account: 'alice', ip: v4(1) })).action, 'allow');
});

test('repeating one of the last three wrong passwords does not count', async () => {
  const { guard } = makeGuard();
  const counts: number[] = [];
  for (const pw of ['a', 'a', 'a', 'b', 'c', 'a', 'd', 'a', 'b']) {
    counts.push(
      (await guard.record({ account: 'alice', ip: v4(1), success: false, password: pw })).consecutiveFailures,
    );
  }
  // a; a, a repeat; b; c; a is still among (c, b, a); d pushes a out; so a counts again; b is among (a, d, c)? no: counts.
  assert.deepEqual(counts, [1, 1, 1, 2, 3, 3, 4, 5, 6]);
  // A repeat changes nothing else either: the pair lane and the address bucket were charged 6 times, not 9.
  const again = await guard.record({ account: 'alice', ip: v4(1), success: false, password: 'b' });
  assert.deepEqual(again, { counted: false, consecutiveFailures: 6, action: 'allow', reasons: [] });
});

test('a failure without a password always counts', async () => {
  const { guard } = makeGuard();
  await guard.record({ account: 'alice', ip: v4(1), success: false });
  assert.equal((await guard.record({ account: 'alice', ip: v4(1), success: false })).consecutiveFailures, 2);
});

test('an unknown account follows the same path as a known one seen from a stranger', async () => {
  const { guard } = makeGuard();
  await guard.record({ account: 'alice', ip: v4(7), success: true });
  for (const account of ['alice', 'nobody-by-this-name']) {
    for (let i = 0; i < 5; i++) await guard.record(fail(account, lone(i)));
  }
  const known = await guard.check({ account: 'alice', ip: lone(99) });
  const unknown = await guard.check({ account: 'nobody-by-this-name', ip: lone(99) });
  assert.deepEqual(known, unknown);
});

test("the owner's own run of failures challenges the owner's path, on its own counter", async () => {
  const { guard } = makeGuard();
  await guard.record({ account: 'alice', ip: v4(7), success: true });
  for (let i = 0; i < 20; i++) await guard.record(fail('alice', lone(i)));
  assert.equal(
    (await guard.check({ account: 'alice', ip: v4(7) })).action,
    'allow',
    "strangers' failures do not count",
  );
  for (let i = 0; i < 5; i++) await guard.record(fail('alice', v4(7)));
  const v = await guard.check({ account: 'alice', ip: v4(7) });
  assert.deepEqual([v.action, v.reasons], ['challenge', ['account-backoff', 'account-failures']]);
});
