// Bad input is a SluiceError naming the field and quoting the value; the secret rules.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { makeGuard, SECRET } from '../test/support/guard-kit.js';
import { Guard } from './guard.js';
import { resolveOptions } from './options.js';

test('check() and record() name the bad field and quote the value', async () => {
  const { guard } = makeGuard();
  await assert.rejects(guard.check({ account: '', ip: '1.2.3.4' }), {
    code: 'ERR_SLUICE_INVALID_ATTEMPT',
    message: `[sluice] guard.check(): 'account' must be a non-empty string of at most 1024 characters, got ""`,
  });
  await assert.rejects(guard.check({ account: 'a', ip: '1.2.3' }), {
    code: 'ERR_SLUICE_INVALID_IP',
    message: `[sluice] guard.check(): 'ip' must be an IPv4 or IPv6 address, got "1.2.3"`,
  });
  await assert.rejects(guard.check({ account: 'a', ip: 42 as unknown as string }), {
    code: 'ERR_SLUICE_INVALID_ATTEMPT',
    message: /'ip' .* got 42$/,
  });
  await assert.rejects(guard.check({ account: 'a', ip: '1.2.3.4', fingerprint: '' }), {
    code: 'ERR_SLUICE_INVALID_ATTEMPT',
    message: /'fingerprint'/,
  });
  await assert.rejects(guard.check(null as never), { code: 'ERR_SLUICE_INVALID_ATTEMPT', message: /got null/ });
  await assert.rejects(guard.record({ account: 'a', ip: '1.2.3.4', success: 'no' as unknown as boolean }), {
    code: 'ERR_SLUICE_INVALID_ATTEMPT',
    message: `[sluice] guard.record(): 'success' must be true or false, got "no"`,
  });
});

test('a too-long password is rejected without echoing it', async () => {
  const { guard } = makeGuard();
  const password = 'x'.repeat(5000);
  await assert.rejects(guard.record({ account: 'a', ip: '1.2.3.4', success: false, password }), (e: Error) => {
    assert.match(e.message, /'password' must be a string of at most 4096 characters, got "<5000 characters>"/);
    assert.ok(!e.message.includes('xxxx'));
    return true;
  });
});

test('the secret is required in production and must be at least 16 bytes', () => {
  assert.throws(() => resolveOptions({}, 'production'), {
    code: 'ERR_SLUICE_GUARD_SECRET',
    message: /required when NODE_ENV=production, got undefined/,
  });
  assert.throws(() => resolveOptions({ secret: 'short' }, 'production'), {
    code: 'ERR_SLUICE_GUARD_SECRET',
    message: /at least 16 bytes, got 5 bytes/,
  });
  assert.throws(() => resolveOptions({ secret: 42 as never }, undefined), {
    code: 'ERR_SLUICE_GUARD_SECRET',
    message: /got 42/,
  });
  assert.equal(resolveOptions({ secret: SECRET }, 'production').secretIsEphemeral, false);
  const dev = resolveOptions({}, 'development');
  assert.equal(dev.secretIsEphemeral, true);
  assert.equal(dev.secret.length, 32);
});

test('options are checked with no silent default', () => {
  const bad: [object, RegExp][] = [
    [{ ipFailuresPerDay: 0 }, /'ipFailuresPerDay' must be an integer from 1 to .*, got 0/],
    [{ ipv6Subnet: 129 }, /'ipv6Subnet' must be an integer from 1 to 128, got 129/],
    [{ backoffBase: 'soon' }, /'backoffBase' must be milliseconds or a duration .*, got "soon"/],
    [{ backoffBase: '1m', backoffMax: '1s' }, /'backoffMax' \(1000 ms\) must be at least 'backoffBase' \(60000 ms\)/],
    [{ failureRatio: 1.5 }, /'failureRatio' must be a number from 0 to 1, got 1.5/],
    [{ challenge: 'puzzle' }, /'challenge' must be 'pow' or 'captcha', got "puzzle"/],
    [{ mfaAt: 1 }, /ladder steps must rise/],
    [{ weights: { typo: 1 } }, /unknown 'weights.typo'/],
    [{ hardStop: 100 }, /has no option 'hardStop'/],
    [{ denyList: '10.0.0.0/8' }, /'denyList' must be an array of CIDR ranges, got "10.0.0.0\/8"/],
  ];
  for (const [options, message] of bad) {
    assert.throws(
      () => new Guard({ secret: SECRET, ...options }),
      { code: 'ERR_SLUICE_INVALID_OPTION', message },
      JSON.stringify(options),
    );
  }
  assert.throws(() => new Guard({ secret: SECRET, hostingRanges: ['10.0.0.0/40'] }), {
    code: 'ERR_SLUICE_INVALID_IP',
    message: /'hostingRanges\[0\]' .* got "10.0.0.0\/40"/,
  });
});

test('the low-and-slow options: defaults, and bad values named', () => {
  const c = resolveOptions({ secret: SECRET }, undefined);
  assert.deepEqual(
    [
      c.longSourceWindowMs,
      c.ipDistinctAccountsLong,
      c.strangerAnomalyBucketMs,
      c.strangerAnomalyBaselineBuckets,
      c.strangerAnomalyWarmupBuckets,
      c.strangerAnomalySigma,
      c.strangerAnomalyMinFailures,
      c.weights.ipDistinctAccountsLong,
      c.weights.strangerAnomaly,
    ],
    [7 * 86_400_000, 2, 3_600_000, 24, 12, 3, 10, 1, 1],
  );
  assert.throws(() => resolveOptions({ secret: SECRET, ipDistinctAccountsLong: 1 }, undefined), {
    code: 'ERR_SLUICE_INVALID_OPTION',
    message: /'ipDistinctAccountsLong' must be an integer from 2 to 1000, got 1/,
  });
  assert.throws(() => resolveOptions({ secret: SECRET, longSourceWindow: '10m' }, undefined), {
    code: 'ERR_SLUICE_INVALID_OPTION',
    message: /'longSourceWindow' \(600000 ms\) must be at least 'sourceWindow'/,
  });
  assert.throws(() => resolveOptions({ secret: SECRET, strangerAnomalyBucket: 'soon' }, undefined), {
    code: 'ERR_SLUICE_INVALID_OPTION',
    message: /'strangerAnomalyBucket'/,
  });
  assert.throws(() => resolveOptions({ secret: SECRET, strangerAnomalyWarmupBuckets: 241 }, undefined), {
    code: 'ERR_SLUICE_INVALID_OPTION',
    message: /'strangerAnomalyWarmupBuckets' must be at most 10/,
  });
  assert.throws(() => resolveOptions({ secret: SECRET, weights: { strangerAnomaly: -1 } }, undefined), {
    code: 'ERR_SLUICE_INVALID_OPTION',
    message: /'weights.strangerAnomaly'/,
  });
});
