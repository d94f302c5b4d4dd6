// envoy-wire.ts field by field against envoyproxy/ratelimit's service (src/service/ratelimit.go,
// src/limiter/base_limiter.go, utils.CalculateReset): what each kind of status becomes on the wire.
// (rls-proto.test.ts holds the encoder, which writes these fields, to the bytes of the answer as a whole.)
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { envoyCode, envoyDurationMs, envoyHeaders, envoyRemaining, envoyResetMs } from './envoy-wire.js';
import type { CurrentLimit, DescriptorStatus } from './rls-types.js';

const NOW = 1_800_000_123_456; // 1_800_000_123 s: 3 s into a minute, 123 s into an hour
const minute: CurrentLimit = { name: '', requestsPerUnit: 10, unit: 'MINUTE', header: '10, 10;w=60' };
const hour: CurrentLimit = { name: 'h', requestsPerUnit: 100, unit: 'HOUR', header: '100, 100;w=3600' };
const status = (s: Partial<DescriptorStatus>): DescriptorStatus => ({
  code: 'OK',
  currentLimit: minute,
  limitRemaining: 5,
  durationUntilResetMs: 56_544,
  rule: 'r',
  shadow: false,
  ...s,
});
const HEADERS = { limit: 'RateLimit-Limit', remaining: 'RateLimit-Remaining', reset: 'RateLimit-Reset' };

test("duration_until_reset is Envoy's unit − now % unit, in whole seconds, for any status with a limit", () => {
  assert.equal(envoyResetMs(status({}), NOW), 57_000);
  assert.equal(envoyResetMs(status({ currentLimit: hour }), NOW), 3_477_000);
  assert.equal(envoyResetMs(status({}), 1_800_000_000_000), 60_000, 'on the boundary: the whole unit, as Envoy');
  assert.equal(envoyResetMs(status({ currentLimit: undefined }), NOW), 0);
  assert.equal(envoyDurationMs(status({ durationUntilResetMs: 1234 }), NOW), 57_000);
  assert.deepEqual(envoyHeaders([status({})], { headers: undefined }, NOW), [], 'no headers unless asked');
});

test('over its limit: OVER_LIMIT with 0 remaining; a quota over stays OVER_LIMIT in its status; a shadow rule answers OK with 0', () => {
  const statuses = [
    status({ code: 'OVER_LIMIT', limitRemaining: 3 }),
    status({ quota: 'over', limitRemaining: 0 }),
    status({ shadow: true, limitRemaining: 2 }),
    status({ currentLimit: undefined, limitRemaining: 4_294_967_295, durationUntilResetMs: 0 }),
  ];
  assert.deepEqual(
    statuses.map((s) => [envoyCode(s), envoyRemaining(s)]),
    [
      ['OVER_LIMIT', 0],
      ['OVER_LIMIT', 0],
      ['OK', 0],
      ['OK', 4_294_967_295],
    ],
  );
  assert.equal(envoyDurationMs(statuses[3]!, NOW), 0, 'unlimited and unmatched carry no duration, as Envoy');
});

test('LIMIT_RESPONSE_HEADERS_ENABLED: the status with the least remaining; a denial by an enforced limit wins', () => {
  const least = envoyHeaders(
    [status({ limitRemaining: 5 }), status({ currentLimit: hour, limitRemaining: 2 })],
    { headers: HEADERS },
    NOW,
  );
  assert.deepEqual(least, [
    ['RateLimit-Limit', '100'],
    ['RateLimit-Remaining', '2'],
    ['RateLimit-Reset', '3477'],
  ]);
  const denied = envoyHeaders(
    [
      status({ currentLimit: hour, limitRemaining: 1 }),
      status({ code: 'OVER_LIMIT', limitRemaining: 0 }),
      status({ limitRemaining: 0 }),
    ],
    { headers: HEADERS },
    NOW,
  );
  assert.deepEqual(denied, [
    ['RateLimit-Limit', '10'],
    ['RateLimit-Remaining', '0'],
    ['RateLimit-Reset', '57'],
  ]);
  const none = envoyHeaders([status({ currentLimit: undefined })], { headers: HEADERS }, NOW);
  assert.deepEqual(none, [], 'no status with a limit: no headers');
});
