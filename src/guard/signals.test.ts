// The guard's signals beyond frequency, and the ladder they climb: distinct accounts per address, subnet and
// fingerprint; failure ratio; IP reputation; the global failure-rate anomaly.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { lone, makeGuard, T0, v4, v6 } from '../../test/support/guard-kit.js';

const fail = (account: string, ip: string, fingerprint?: string) =>
  fingerprint === undefined ? { account, ip, success: false } : { account, ip, fingerprint, success: false };

test('ten distinct accounts failing from one address within 30 min: challenged, harder than the base', async () => {
  const { guard, advance } = makeGuard({ ratioMinFailures: 10_000 });
  for (let i = 0; i < 9; i++) await guard.record(fail(`user${i}`, v4(1)));
  // Nine are below the short threshold; the day's count (two or more) is the weaker long signal.
  assert.deepEqual((await guard.check({ account: 'next', ip: v4(1) })).reasons, ['ip-distinct-accounts-long']);
  await guard.record(fail('user9', v4(1)));
  assert.deepEqual(await guard.check({ account: 'next', ip: v4(1) }), {
    action: 'challenge', delayMs: 0, retryAfterMs: 0, challenge: 18, risk: 3, reasons: ['ip-distinct-accounts'],
  });
  // The same account failing again is not another distinct account.
  advance(60 * 60_000 + 1000);
  assert.deepEqual((await guard.check({ account: 'next', ip: v4(1) })).reasons, ['ip-distinct-accounts-long'], 'the short window forgot them; the day has not');
  advance(86_400_000);
  assert.deepEqual((await guard.check({ account: 'next', ip: v4(1) })).reasons, [], 'forgotten after the long window');
});

test('distinct accounts are counted exactly within a sliding window', async () => {
  const { guard, advance } = makeGuard({ ratioMinFailures: 10_000, sourceWindow: '10m', ipDistinctAccountsLong: 1000 });
  for (let i = 0; i < 5; i++) await guard.record(fail(`early${i}`, v4(1)));
  advance(6 * 60_000);
  for (let i = 0; i < 5; i++) await guard.record(fail(`late${i}`, v4(1)));
  assert.deepEqual((await guard.check({ account: 'x', ip: v4(1) })).reasons, ['ip-distinct-accounts']);
  advance(4 * 60_000 + 1000); // the early five leave the window
  assert.deepEqual((await guard.check({ account: 'x', ip: v4(1) })).reasons, []);
});

test('twenty distinct accounts failing within one /64 flag the subnet though each address is new', async () => {
  const { guard } = makeGuard({ ratioMinFailures: 10_000 });
  for (let i = 0; i < 20; i++) await guard.record(fail(`user${i}`, v6(i)));
  const v = await guard.check({ account: 'next', ip: v6(100) });
  assert.deepEqual([v.action, v.reasons, v.challenge], ['challenge', ['subnet-distinct-accounts'], 16]);
});

test('one fingerprint failing on five accounts is fingerprint reuse', async () => {
  const { guard } = makeGuard({ ratioMinFailures: 10_000 });
  for (let i = 0; i < 5; i++) await guard.record(fail(`user${i}`, lone(i), 'headless-1'));
  assert.deepEqual((await guard.check({ account: 'x', ip: lone(50), fingerprint: 'headless-1' })).reasons, ['fingerprint-reuse']);
  assert.deepEqual((await guard.check({ account: 'x', ip: lone(50), fingerprint: 'phone-2' })).reasons, []);
});

test('failure ratio: ten failures and no success from a source within a day; successes dilute it', async () => {
  const { guard, advance } = makeGuard({ freeFailures: 100, accountChallengeFailures: 100, ipDistinctAccountsLong: 1000 });
  // Start on a day boundary: the ratio window is a two-generation estimate over epoch-aligned days, so
  // within one day the counts are exact (across a boundary the older day's share fades linearly).
  advance(86_400_000 - (T0 % 86_400_000));
  for (let i = 0; i < 9; i++) {
    await guard.record(fail(i % 2 ? 'alice' : 'bob', v4(1)));
    advance(2 * 3_600_000); // low and slow: far apart, so no short window sees them together
  }
  assert.deepEqual((await guard.check({ account: 'carol', ip: v4(1) })).reasons, []);
  await guard.record(fail('bob', v4(1)));
  assert.deepEqual((await guard.check({ account: 'carol', ip: v4(1) })).reasons, ['failure-ratio']);
  for (let i = 0; i < 3; i++) await guard.record({ account: `ok${i}`, ip: v4(1), success: true });
  assert.deepEqual((await guard.check({ account: 'carol', ip: v4(1) })).reasons, [], 'below 0.8 with three successes');
});

test('hosting-provider ranges are challenged; CAPTCHA mode asks for a CAPTCHA instead of work', async () => {
  const ranges = ['203.0.113.0/24', '2001:db8:ffff::/48'];
  const { guard } = makeGuard({ hostingRanges: ranges });
  assert.deepEqual(await guard.check({ account: 'a', ip: '203.0.113.9' }), {
    action: 'challenge', delayMs: 0, retryAfterMs: 0, challenge: 16, risk: 2, reasons: ['hosting-provider'],
  });
  assert.deepEqual((await guard.check({ account: 'a', ip: '2001:db8:ffff:1::1' })).reasons, ['hosting-provider']);
  assert.deepEqual((await guard.check({ account: 'a', ip: '203.0.114.9' })).reasons, []);
  const captcha = makeGuard({ hostingRanges: ranges, challenge: 'captcha' }).guard;
  assert.equal((await captcha.check({ account: 'a', ip: '203.0.113.9' })).challenge, 'captcha');
});

test('deny list blocks; allow list skips the per-source throttles but not the account ones', async () => {
  const { guard } = makeGuard({ denyList: ['192.0.2.0/24'], allowList: ['198.51.100.0/24', '192.0.2.1'], ipFailuresPerDay: 3 });
  const denied = await guard.check({ account: 'a', ip: '192.0.2.1' });
  assert.deepEqual([denied.action, denied.reasons, denied.retryAfterMs], ['block', ['ip-deny-list'], 900_000]);
  for (let i = 0; i < 12; i++) await guard.record(fail(`user${i}`, v4(1)));
  assert.deepEqual((await guard.check({ account: 'x', ip: v4(1) })).reasons, [], 'no bucket, no distinct-accounts signal');
  for (let i = 0; i < 4; i++) await guard.record(fail('alice', v4(2)));
  assert.deepEqual((await guard.check({ account: 'alice', ip: v4(3) })).reasons, ['account-backoff']);
});

test('a global failure-rate shift beyond 3 sigma challenges unfamiliar sources only', async () => {
  const { guard, advance } = makeGuard();
  await guard.record({ account: 'alice', ip: v4(7), success: true });
  // One hour of baseline: two failures a minute from scattered sources.
  for (let m = 0; m < 60; m++) {
    await guard.record(fail(`u${m}`, lone(2 * m)));
    advance(30_000);
    await guard.record(fail(`w${m}`, lone(2 * m + 1)));
    advance(30_000);
  }
  assert.equal(guard.anomalous(), false);
  // A stuffing burst: 30 failures within seconds, each from its own address on its own account.
  for (let i = 0; i < 30; i++) await guard.record(fail(`victim${i}`, lone(1000 + i)));
  assert.equal(guard.anomalous(), true);
  const stranger = await guard.check({ account: 'bob', ip: lone(5000) });
  assert.deepEqual([stranger.action, stranger.reasons], ['challenge', ['global-failure-anomaly']]);
  assert.equal((await guard.check({ account: 'alice', ip: v4(7) })).action, 'allow', 'the owner at home is not bothered');
});

test('signals add up the ladder: delay, challenge, mfa, block', async () => {
  const weights = { hostingProvider: 1, failureRatio: 2, ipDistinctAccounts: 2, accountFailures: 1 };
  const { guard } = makeGuard({ weights, hostingRanges: ['203.0.113.0/24'], freeFailures: 1000, ipDistinctAccountsLong: 1000 });
  const ip = '203.0.113.5';
  const at = async () => { const v = await guard.check({ account: 'alice', ip }); return [v.action, v.risk, v.delayMs, v.retryAfterMs]; };
  assert.deepEqual(await at(), ['delay', 1, 1000, 0]);
  for (let i = 0; i < 10; i++) await guard.record(fail(`u${i % 2}`, ip));
  assert.deepEqual(await at(), ['challenge', 3, 0, 0]); // + failure ratio
  for (let i = 2; i < 10; i++) await guard.record(fail(`u${i}`, ip));
  assert.deepEqual(await at(), ['mfa', 5, 0, 0]); // + ten distinct accounts
  for (let i = 0; i < 5; i++) await guard.record(fail('alice', ip));
  assert.deepEqual(await at(), ['block', 6, 0, 900_000]); // + alice's own failures
});

test('a refused stranger counts as a failure of its sources, so refusing an attack does not end its signals', async () => {
  const { guard } = makeGuard({ hostingRanges: ['203.0.113.0/24'], ipDistinctAccountsLong: 1000 });
  // Nothing is ever recorded: every attempt is challenged (hosting provider) and never solved.
  for (let i = 0; i < 9; i++) assert.equal((await guard.check({ account: `user${i}`, ip: '203.0.113.9' })).action, 'challenge');
  assert.deepEqual((await guard.check({ account: 'user9', ip: '203.0.113.9' })).reasons, ['hosting-provider']);
  // Ten distinct accounts refused from the address within the window, and ten failures with no success.
  assert.deepEqual((await guard.check({ account: 'user10', ip: '203.0.113.9' })).reasons, ['ip-distinct-accounts', 'failure-ratio', 'hosting-provider']);
});
