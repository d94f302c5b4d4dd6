// The service's Envoy-compatible switches: global shadow mode (SHADOW_MODE) and the near-limit ratio
// (NEAR_LIMIT_RATIO), decided and counted in process. End to end through `sluice serve`: serve-http.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MemoryStore } from '../../../sluice/src/stores/memory.js';
import { parseConfig } from './config/config.js';
import { createMetrics } from './operator/metrics.js';
import { RuleSet } from './config/rules.js';
import { RateLimitService } from './service.js';
import type { ServiceOptions } from './service.js';
import type { RlsResponse } from './codecs/rls-types.js';

const CONFIG = `domain: d
descriptors:
  - key: user
    rate_limit: { unit: minute, requests_per_unit: 10 }
  - key: shadowed
    shadow_mode: true
    rate_limit: { unit: minute, requests_per_unit: 1 }
`;

function service(options: Partial<ServiceOptions> = {}) {
  const store = new MemoryStore();
  const svc = new RateLimitService(new RuleSet(parseConfig([{ file: 'd.yaml', text: CONFIG }]), { store }), {
    store,
    localCache: false,
    ...options,
  });
  const metrics = createMetrics(() => svc.allStats(), {
    reloads: () => ({ ok: 0, failed: 0 }),
    globalShadowOverrides: () => svc.globalShadowOverrides,
  });
  const hit = (key: string, value: string, hits = 1) =>
    svc.shouldRateLimit({ domain: 'd', descriptors: [{ entries: [{ key, value }] }], hitsAddend: hits }) as RlsResponse;
  return { svc, metrics, hit };
}

test('global shadow mode: an over-limit request is answered OK without Retry-After, its status still OVER_LIMIT, and counted once per request', async () => {
  const { svc, metrics, hit } = service({ globalShadowMode: true });
  hit('user', 'ann', 10);
  const over = hit('user', 'ann');
  assert.equal(over.overallCode, 'OK');
  assert.equal(over.statuses[0]!.code, 'OVER_LIMIT');
  assert.equal(over.retryAfterMs, 0);
  assert.deepEqual(
    over.headers.map(([name]) => name),
    ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'],
  );
  // Two over-limit descriptors in one request are one overridden request.
  const both = svc.shouldRateLimit({
    domain: 'd',
    descriptors: [{ entries: [{ key: 'user', value: 'ann' }] }, { entries: [{ key: 'user', value: 'ann' }] }],
    hitsAddend: 1,
  }) as RlsResponse;
  assert.deepEqual([both.overallCode, both.statuses.map((s) => s.code)], ['OK', ['OVER_LIMIT', 'OVER_LIMIT']]);
  assert.equal(hit('user', 'bob').overallCode, 'OK', 'within the limit: nothing to override');
  assert.equal(svc.globalShadowOverrides, 2);
  const text = await metrics.metrics();
  assert.match(text, /^sluice_global_shadow_mode_total 2$/m);
  assert.match(text, /sluice_rule_over_limit_total\{domain="d",rule="d.user"\} 3/);
});

test('without global shadow mode the same request is OVER_LIMIT with Retry-After; a rule in shadow_mode alone is not counted as global', () => {
  const { svc, hit } = service();
  hit('user', 'ann', 10);
  const over = hit('user', 'ann');
  assert.equal(over.overallCode, 'OVER_LIMIT');
  assert.ok(over.headers.some(([name]) => name === 'Retry-After'));
  hit('shadowed', 'x');
  assert.equal(hit('shadowed', 'x').overallCode, 'OK', 'per-rule shadow_mode');
  assert.equal(svc.globalShadowOverrides, 0);
});

test('nearLimitRatio: hits within the limit count as near once that share of it is used (Envoy NEAR_LIMIT_RATIO, default 0.8)', async () => {
  for (const [ratio, near] of [
    [undefined, 2],
    [0.5, 5],
    [1, 0],
  ] as const) {
    const { svc, hit } = service(ratio === undefined ? {} : { nearLimitRatio: ratio });
    for (let i = 0; i < 10; i++) hit('user', 'ann');
    const stats = svc.allStats().find((s) => s.rule === 'd.user')!;
    assert.deepEqual([stats.withinLimit, stats.nearLimit], [10, near], `ratio ${ratio ?? 'default'}`);
  }
});
