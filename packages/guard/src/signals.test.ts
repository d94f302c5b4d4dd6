// The guard's signals beyond frequency, and the ladder they climb: distinct accounts per address, subnet and
// fingerprint; failure ratio; IP reputation; the global failure-rate anomaly.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { lone, makeGuard, SECRET, T0, v4, v6 } from '../test/support/guard-kit.js';
import { Guard } from './guard.js';
import { MemoryGuardState } from './memory-state.js';
import type { GuardState } from './state.js';
import { MemoryStore } from '../../sluice/src/stores/memory.js';

const fail = (account: string, ip: string, fingerprint?: string) =>
  fingerprint === undefined ? { account, ip, success: false } : { account, ip, fingerprint, success: false };

test('ten distinct accounts failing from one address within 30 min: challenged, harder than the base', async () => {
  const { guard, advance } = makeGuard({ ratioMinFailures: 10_000 });
  for (let i = 0; i < 9; i++) await guard.record(fail(`user${i}`, v4(1)));
  // Nine are below the short threshold; the week's count (two or more) is the weaker long signal.
  assert.deepEqual((await guard.check({ account: 'next', ip: v4(1) })).reasons, ['ip-distinct-accounts-long']);
  await guard.record(fail('user9', v4(1)));
  assert.deepEqual(await guard.check({ account: 'next', ip: v4(1) }), {
    action: 'challenge',
    delayMs: 0,
    retryAfterMs: 0,
    challenge: 18,
    risk: 3,
    reasons: ['ip-distinct-accounts'],
  });
  // The same account failing again is not another distinct account.
  advance(60 * 60_000 + 1000);
  assert.deepEqual(
    (await guard.check({ account: 'next', ip: v4(1) })).reasons,
    ['ip-distinct-accounts-long'],
    'the short window forgot them; the week has not',
  );
  advance(7 * 86_400_000);
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

test('twenty distinct accounts failing within one /64 flag the subnet though each address is new (addresses counted apart)', async () => {
  const { guard } = makeGuard({ ratioMinFailures: 10_000, ipv6AddressPrefix: 128 });
  for (let i = 0; i < 20; i++) await guard.record(fail(`user${i}`, v6(i)));
  const v = await guard.check({ account: 'next', ip: v6(100) });
  assert.deepEqual([v.action, v.reasons, v.challenge], ['challenge', ['subnet-distinct-accounts'], 16]);
});

test('twenty distinct accounts failing within one /64 flag it as one address too (the default ipv6AddressPrefix 64)', async () => {
  const { guard } = makeGuard({ ratioMinFailures: 10_000 });
  for (let i = 0; i < 20; i++) await guard.record(fail(`user${i}`, v6(i)));
  const v = await guard.check({ account: 'next', ip: v6(100) });
  assert.deepEqual([v.action, v.reasons], ['mfa', ['ip-distinct-accounts', 'subnet-distinct-accounts']]);
});

test('one fingerprint failing on five accounts is fingerprint reuse', async () => {
  const { guard } = makeGuard({ ratioMinFailures: 10_000 });
  for (let i = 0; i < 5; i++) await guard.record(fail(`user${i}`, lone(i), 'headless-1'));
  assert.deepEqual((await guard.check({ account: 'x', ip: lone(50), fingerprint: 'headless-1' })).reasons, [
    'fingerprint-reuse',
  ]);
  assert.deepEqual((await guard.check({ account: 'x', ip: lone(50), fingerprint: 'phone-2' })).reasons, []);
});

test('failure ratio: ten failures and no success from a source within a day; successes dilute it', async () => {
  const { guard, advance } = makeGuard({
    freeFailures: 100,
    accountChallengeFailures: 100,
    ipDistinctAccountsLong: 1000,
  });
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
    action: 'challenge',
    delayMs: 0,
    retryAfterMs: 0,
    challenge: 16,
    risk: 2,
    reasons: ['hosting-provider'],
  });
  assert.deepEqual((await guard.check({ account: 'a', ip: '2001:db8:ffff:1::1' })).reasons, ['hosting-provider']);
  assert.deepEqual((await guard.check({ account: 'a', ip: '203.0.114.9' })).reasons, []);
  const captcha = makeGuard({ hostingRanges: ranges, challenge: 'captcha' }).guard;
  assert.equal((await captcha.check({ account: 'a', ip: '203.0.113.9' })).challenge, 'captcha');
});

test('deny list blocks; allow list skips the per-source throttles but not the account ones', async () => {
  const { guard } = makeGuard({
    denyList: ['192.0.2.0/24'],
    allowList: ['198.51.100.0/24', '192.0.2.1'],
    ipFailuresPerDay: 3,
  });
  const denied = await guard.check({ account: 'a', ip: '192.0.2.1' });
  assert.deepEqual([denied.action, denied.reasons, denied.retryAfterMs], ['block', ['ip-deny-list'], 900_000]);
  for (let i = 0; i < 12; i++) await guard.record(fail(`user${i}`, v4(1)));
  assert.deepEqual(
    (await guard.check({ account: 'x', ip: v4(1) })).reasons,
    [],
    'no bucket, no distinct-accounts signal',
  );
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
  assert.equal(
    (await guard.check({ account: 'alice', ip: v4(7) })).action,
    'allow',
    'the owner at home is not bothered',
  );
});

test('signals add up the ladder: delay, challenge, mfa, block', async () => {
  const weights = { hostingProvider: 1, failureRatio: 2, ipDistinctAccounts: 2, accountFailures: 1 };
  const { guard } = makeGuard({
    weights,
    hostingRanges: ['203.0.113.0/24'],
    freeFailures: 1000,
    ipDistinctAccountsLong: 1000,
  });
  const ip = '203.0.113.5';
  const at = async () => {
    const v = await guard.check({ account: 'alice', ip });
    return [v.action, v.risk, v.delayMs, v.retryAfterMs];
  };
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
  for (let i = 0; i < 9; i++)
    assert.equal((await guard.check({ account: `user${i}`, ip: '203.0.113.9' })).action, 'challenge');
  assert.deepEqual((await guard.check({ account: 'user9', ip: '203.0.113.9' })).reasons, ['hosting-provider']);
  // Ten distinct accounts refused from the address within the window, and ten failures with no success.
  assert.deepEqual((await guard.check({ account: 'user10', ip: '203.0.113.9' })).reasons, [
    'ip-distinct-accounts',
    'failure-ratio',
    'hosting-provider',
  ]);
});

test('ip-distinct-accounts-long: a slow sprayer failing on two accounts a week from one address; alone a delay', async () => {
  const { guard, advance } = makeGuard({ ratioMinFailures: 10_000 });
  await guard.record(fail('user0', v4(1)));
  advance(3 * 3_600_000); // hours apart: the 30-minute window never holds two
  assert.deepEqual((await guard.check({ account: 'x', ip: v4(1) })).reasons, []);
  await guard.record(fail('user1', v4(1)));
  advance(3 * 3_600_000);
  assert.deepEqual(await guard.check({ account: 'x', ip: v4(1) }), {
    action: 'delay',
    delayMs: 1000,
    retryAfterMs: 0,
    challenge: undefined,
    risk: 1,
    reasons: ['ip-distinct-accounts-long'],
  });
  assert.deepEqual((await guard.check({ account: 'x', ip: v4(2) })).reasons, [], 'a neighbour has its own count');
  advance(7 * 86_400_000 - 3 * 3_600_000 + 1000); // user0 leaves the week
  assert.deepEqual((await guard.check({ account: 'x', ip: v4(1) })).reasons, []);
});

test('ip-distinct-accounts-long is configurable and is not counted on top of the short signal', async () => {
  const { guard, advance } = makeGuard({
    ratioMinFailures: 10_000,
    longSourceWindow: '6h',
    ipDistinctAccountsLong: 3,
    weights: { ipDistinctAccountsLong: 2 },
  });
  for (let i = 0; i < 3; i++) {
    await guard.record(fail(`user${i}`, v4(1)));
    advance(3_600_000);
  }
  assert.deepEqual((await guard.check({ account: 'x', ip: v4(1) })).reasons, ['ip-distinct-accounts-long']);
  assert.equal((await guard.check({ account: 'x', ip: v4(1) })).action, 'challenge');
  for (let i = 3; i < 13; i++) {
    await guard.record(fail(`user${i}`, v4(1)));
    advance(10_000); // six a minute: below the global anomaly's ten
  }
  const v = await guard.check({ account: 'x', ip: v4(1) });
  assert.deepEqual([v.reasons, v.risk], [['ip-distinct-accounts'], 3]);
  advance(6 * 3_600_000 + 1000);
  assert.deepEqual((await guard.check({ account: 'x', ip: v4(1) })).reasons, []);
});

/** Logs in `users` accounts at home, then `hours` hours of `perHour` typos each from home (familiar) and `strangers` failures an hour from new addresses. */
async function hourlyBaseline(
  guard: { record(o: object): Promise<unknown> },
  advance: (ms: number) => void,
  hours: number,
  strangersPerHour: number,
): Promise<void> {
  await guard.record({ account: 'alice', ip: v4(7), success: true });
  for (let h = 0; h < hours; h++) {
    for (let i = 0; i < 4; i++) {
      // A strangers' failure every 15 min when strangersPerHour is 4, fewer otherwise; familiar typos never count.
      if (i < strangersPerHour) await guard.record(fail(`roamer${h}-${i}`, lone(h * 4 + i)));
      await guard.record(fail('alice', v4(7)));
      await guard.record({ account: 'alice', ip: v4(7), success: true });
      advance(15 * 60_000);
    }
  }
}

test('stranger-failure-anomaly: unfamiliar failures per hour beyond 3 sigma of their baseline; familiar sources untouched', async () => {
  const { guard, advance } = makeGuard();
  await hourlyBaseline(guard, advance, 24, 1);
  const quiet = await guard.check({ account: 'bob', ip: lone(9000) });
  assert.deepEqual(quiet.reasons, []);
  // Slow stuffing: one failure a minute, each on its own account from its own address. The baseline is
  // one an hour (threshold max(10 - 1, 1 + 3·1) = 9), so the tenth within the hour fires it.
  for (let i = 0; i < 9; i++) {
    await guard.record(fail(`leak${i}`, lone(5000 + i)));
    advance(60_000);
  }
  assert.deepEqual((await guard.check({ account: 'bob', ip: lone(9001) })).reasons, []);
  await guard.record(fail('leak9', lone(5009)));
  assert.equal(guard.anomalous(), false, 'ten a bucket of a minute is not the global anomaly');
  const v = await guard.check({ account: 'bob', ip: lone(9002) });
  assert.deepEqual([v.action, v.reasons, v.risk], ['delay', ['stranger-failure-anomaly'], 1]);
  assert.deepEqual(
    (await guard.check({ account: 'alice', ip: v4(7) })).reasons,
    [],
    'the owner at home is not bothered',
  );
  // The anomaly holds through the next hour, then ends when the failures stop.
  advance(3_600_000);
  assert.deepEqual((await guard.check({ account: 'bob', ip: lone(9003) })).reasons, ['stranger-failure-anomaly']);
  advance(2 * 3_600_000);
  assert.deepEqual((await guard.check({ account: 'bob', ip: lone(9004) })).reasons, []);
});

test('stranger-failure-anomaly with a weak per-source signal climbs to a challenge; refused strangers keep it up', async () => {
  const { guard, advance } = makeGuard({ ratioMinFailures: 10_000 });
  await hourlyBaseline(guard, advance, 24, 1);
  for (let i = 0; i < 10; i++) {
    await guard.record(fail(`spray${i}`, lone(6000 + (i % 2))));
    advance(2 * 60_000); // slow: never a global (per-minute) anomaly
  }
  const v = await guard.check({ account: 'carol', ip: lone(6000) });
  assert.deepEqual([v.action, v.reasons], ['challenge', ['ip-distinct-accounts-long', 'stranger-failure-anomaly']]);
  // Nothing more reaches record(): every later attempt is refused, and counted, so the next hour stays anomalous.
  advance(3_600_000 - 24 * 60_000);
  for (let i = 0; i < 12; i++) {
    const { action } = await guard.check({ account: `next${i}`, ip: lone(6000) });
    assert.ok(action === 'challenge' || action === 'mfa' || action === 'block', action);
    advance(2 * 60_000);
  }
  advance(3_600_000);
  assert.deepEqual((await guard.check({ account: 'dave', ip: lone(6001) })).reasons, [
    'ip-distinct-accounts-long',
    'stranger-failure-anomaly',
  ]);
});

test('stranger-failure-anomaly needs its warm-up and is configurable', async () => {
  const { guard, advance } = makeGuard({
    strangerAnomalyBucket: '10m',
    strangerAnomalyBaselineBuckets: 2,
    strangerAnomalyWarmupBuckets: 3,
    strangerAnomalyMinFailures: 3,
    weights: { strangerAnomaly: 2 },
  });
  for (let i = 0; i < 3; i++) await guard.record(fail(`early${i}`, lone(i)));
  assert.deepEqual((await guard.check({ account: 'bob', ip: lone(500) })).reasons, [], 'no baseline yet');
  // Three quiet buckets after the first are learnt (the baseline falls to 0.1 a bucket), so three fire it.
  advance(40 * 60_000);
  for (let i = 0; i < 2; i++) await guard.record(fail(`late${i}`, lone(100 + i)));
  assert.deepEqual((await guard.check({ account: 'bob', ip: lone(501) })).reasons, []);
  await guard.record(fail('late2', lone(102)));
  const v = await guard.check({ account: 'bob', ip: lone(502) });
  assert.deepEqual([v.action, v.reasons], ['challenge', ['stranger-failure-anomaly']]);
});

test("anomalyScope 'fleet': two guards on one state count the fleet's failures, and see a shift that neither sees alone", async () => {
  let now = T0;
  const pair = (scope: 'process' | 'fleet') => {
    const state = new MemoryGuardState();
    const options = {
      secret: SECRET,
      state,
      clock: () => now,
      random: () => 0,
      anomalyScope: scope,
      anomalySyncEvery: 0,
      anomalyBaselineBuckets: 20,
      anomalyWarmupBuckets: 10,
    } as const;
    return [
      new Guard({ ...options, store: new MemoryStore() }),
      new Guard({ ...options, store: new MemoryStore() }),
    ] as const;
  };
  const fleet = pair('fleet');
  const alone = pair('process');
  let n = 0;
  const failures = async (guard: Guard, count: number) => {
    for (let i = 0; i < count; i++, n++) await guard.record(fail(`user${n}`, lone(n)));
  };
  const sync = async ([a, b]: readonly [Guard, Guard]) => {
    await a.syncAnomaly();
    await b.syncAnomaly();
    await a.syncAnomaly(); // a reads b's additions too
  };
  // Fifteen minutes of baseline: three failures a minute on each server, six in the fleet.
  for (let m = 0; m < 15; m++) {
    for (const g of [...fleet, ...alone]) await failures(g, 3);
    await sync(fleet);
    assert.deepEqual(
      [fleet[0].failuresThisBucket(), fleet[1].failuresThisBucket(), alone[0].failuresThisBucket()],
      [6, 6, 3],
    );
    now += 60_000;
  }
  // Then eight a minute on each: sixteen in the fleet, against a baseline of six (threshold 13.3); eight
  // on a server is below its own threshold (the minimum of ten failures).
  for (const g of [...fleet, ...alone]) await failures(g, 8);
  assert.deepEqual(
    [fleet[0].anomalous(), fleet[1].anomalous()],
    [false, false],
    'before sharing, each knows its own eight',
  );
  await sync(fleet);
  assert.deepEqual([fleet[0].failuresThisBucket(), fleet[1].failuresThisBucket()], [16, 16]);
  assert.deepEqual([fleet[0].anomalous(), fleet[1].anomalous()], [true, true], 'the fleet sees the shift');
  assert.deepEqual([alone[0].anomalous(), alone[1].anomalous()], [false, false], 'per process, neither does');
});

test("anomalyScope 'fleet': a state that cannot share counts is refused; a failing share keeps the counts for the next", async () => {
  // A state of its own kind, as a user might write, that keeps no shared counts.
  const inner = new MemoryGuardState();
  const noShare: GuardState = { loginPort: (store, config) => inner.loginPort(store, config) };
  assert.throws(
    () => new Guard({ secret: SECRET, state: noShare, anomalyScope: 'fleet' }),
    /'anomalyScope' 'fleet' needs a state that shares failure counts/,
  );
  assert.throws(
    () => new Guard({ secret: SECRET, anomalyScope: 'fleets' as 'fleet' }),
    /'anomalyScope' must be 'process' or 'fleet', got "fleets"/,
  );
  assert.throws(
    () => new Guard({ secret: SECRET, anomalyScope: 'fleet', anomalySyncEvery: '2m' }),
    /'anomalySyncEvery' must be at most 'anomalyBucket' \(60000 ms\), got "2m"/,
  );
  let now = T0;
  const state = new MemoryGuardState();
  let down = true;
  const flaky = Object.assign(Object.create(state) as MemoryGuardState, {
    shareFailures: (...args: Parameters<MemoryGuardState['shareFailures']>) =>
      down ? Promise.reject(new Error('Redis is down')) : state.shareFailures(...args),
  });
  const a = new Guard({ secret: SECRET, state: flaky, clock: () => now, anomalyScope: 'fleet', anomalySyncEvery: 0 });
  const b = new Guard({ secret: SECRET, state, clock: () => now, anomalyScope: 'fleet', anomalySyncEvery: 0 });
  for (let i = 0; i < 4; i++) await a.record(fail(`u${i}`, lone(i)));
  await a.syncAnomaly();
  assert.equal(a.failuresThisBucket(), 4, 'its own count while the state fails');
  down = false;
  await a.syncAnomaly();
  await b.syncAnomaly();
  assert.equal(b.failuresThisBucket(), 4, 'the four were shared once the state answered');
  now += 1;
  a.close();
});
