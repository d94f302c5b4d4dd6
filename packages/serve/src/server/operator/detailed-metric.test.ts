// `detailed_metric`, as envoyproxy/ratelimit does it: the rule's stats key becomes the domain plus
// `key_value` for every entry of the request's descriptor, whether the rule matched by key alone, by a
// wildcard value or by key+value; and a cap on the series per rule, so unique values cannot grow memory.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore } from '../../../../sluice/src/stores/memory.js';
import { parseConfig } from '../config/config.js';
import { createMetrics } from './metrics.js';
import { OVERFLOW } from './rule-stats.js';
import { RuleSet } from '../config/rules.js';
import { RateLimitService } from '../service.js';

const CONFIG = `domain: d
descriptors:
  - key: user
    detailed_metric: true
    rate_limit: { unit: minute, requests_per_unit: 2 }
  - key: path
    value: /api/*
    detailed_metric: true
    rate_limit: { unit: minute, requests_per_unit: 5 }
  - key: tenant
    value: acme
    descriptors:
      - key: ip
        detailed_metric: true
        rate_limit: { unit: minute, requests_per_unit: 5 }
  - key: plain
    rate_limit: { unit: minute, requests_per_unit: 5 }
`;

function service(maxDetailedSeries?: number) {
  const store = new MemoryStore();
  const rules = new RuleSet(parseConfig([{ file: 'd.yaml', text: CONFIG }]), {
    store,
    ...(maxDetailedSeries === undefined ? {} : { maxDetailedSeries }),
  });
  const svc = new RateLimitService(rules, { store, localCache: false });
  const metrics = createMetrics(() => svc.allStats(), { reloads: () => ({ ok: 0, failed: 0 }) });
  const hit = (...kv: string[]) => {
    const entries = [];
    for (let i = 0; i < kv.length; i += 2) entries.push({ key: kv[i]!, value: kv[i + 1]! });
    return svc.shouldRateLimit({ domain: 'd', descriptors: [{ entries }], hitsAddend: 1 });
  };
  return { svc, metrics, hit };
}

test("detailed_metric on a key without value: one series per value, labelled with Envoy's detailed stats key", async () => {
  const { metrics, hit } = service();
  hit('user', 'alice');
  hit('user', 'alice');
  hit('user', 'alice'); // over the limit of 2
  hit('user', 'bob');
  const text = await metrics.metrics();
  assert.match(text, /sluice_rule_hits_total\{domain="d",rule="d.user",descriptor="d.user_alice"\} 3/);
  assert.match(text, /sluice_rule_over_limit_total\{domain="d",rule="d.user",descriptor="d.user_alice"\} 1/);
  assert.match(text, /sluice_rule_hits_total\{domain="d",rule="d.user",descriptor="d.user_bob"\} 1/);
  assert.match(text, /sluice_rule_decision_seconds_count\{domain="d",rule="d.user",descriptor="d.user_bob"\} 1/);
  assert.doesNotMatch(
    text,
    /rule="d.user"\}/,
    "the detailed series replace the rule's own, as in Envoy, so sums stay right",
  );
});

test('detailed_metric on a wildcard and on a nested descriptor: every entry of the request is in the key', async () => {
  const { metrics, hit } = service();
  hit('path', '/api/users');
  hit('path', '/api/orders');
  hit('tenant', 'acme', 'ip', '10.0.0.1');
  const text = await metrics.metrics();
  assert.match(text, /sluice_rule_hits_total\{domain="d",rule="d.path_\/api\/\*",descriptor="d.path_\/api\/users"\} 1/);
  assert.match(
    text,
    /sluice_rule_hits_total\{domain="d",rule="d.path_\/api\/\*",descriptor="d.path_\/api\/orders"\} 1/,
  );
  assert.match(
    text,
    /sluice_rule_hits_total\{domain="d",rule="d.tenant_acme.ip",descriptor="d.tenant_acme.ip_10.0.0.1"\} 1/,
  );
});

test("without detailed_metric, different values share the rule's one series", async () => {
  const { metrics, hit } = service();
  hit('plain', 'x');
  hit('plain', 'y');
  const text = await metrics.metrics();
  assert.match(text, /sluice_rule_hits_total\{domain="d",rule="d.plain"\} 2/);
  assert.doesNotMatch(text, /rule="d.plain",descriptor=/);
});

test('the cap: past maxDetailedSeries values per rule, further values fold into one overflow series', async () => {
  const { svc, metrics, hit } = service(2);
  for (let i = 0; i < 50; i++) hit('user', `attacker-${i}`);
  hit('user', 'attacker-0'); // a value that got a series keeps it
  const users = svc.allStats().filter((s) => s.rule === 'd.user');
  assert.deepEqual(
    users.map((s) => s.descriptor),
    ['d.user_attacker-0', 'd.user_attacker-1', OVERFLOW],
  );
  const text = await metrics.metrics();
  assert.match(text, /sluice_rule_hits_total\{domain="d",rule="d.user",descriptor="d.user_attacker-0"\} 2/);
  assert.match(text, /sluice_rule_hits_total\{domain="d",rule="d.user",descriptor="\(other\)"\} 48/);
  // Each value is still limited on its own: the cap is on metrics, not on decisions.
  assert.equal((hit('user', 'attacker-49') as { overallCode: string }).overallCode, 'OK');
});

test('maxDetailedSeries 0 keeps only the overflow series', () => {
  const { svc, hit } = service(0);
  hit('user', 'a');
  assert.deepEqual(
    svc
      .allStats()
      .filter((s) => s.rule === 'd.user')
      .map((s) => [s.descriptor, s.totalHits]),
    [[OVERFLOW, 1]],
  );
});
