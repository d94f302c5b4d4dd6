// Issue 45, finding 5 at 300,000 rules: the dashboard's sample each second read every rule's stats (an array
// of 300,000 built and walked), which stopped decisions for about 60 ms each second after a big reload. It
// now reads the service's list of stats that have counted, which a reload prunes to the rules it keeps.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore } from '../../../../sluice/src/stores/memory.js';
import { parseConfig } from '../config/config.js';
import { RuleSet } from '../config/rules.js';
import { RateLimitService } from '../service.js';
import type { RlsResponse } from '../codecs/rls-types.js';
import { Dashboard } from './dashboard.js';

const config = (rules: string[], detailed: string) =>
  parseConfig([
    {
      file: 'd.yaml',
      text: `domain: d
descriptors:
${rules.map((k) => `  - key: ${k}\n    rate_limit: { unit: minute, requests_per_unit: 10 }`).join('\n')}
  - key: ${detailed}
    detailed_metric: true
    rate_limit: { unit: minute, requests_per_unit: 10 }
`,
    },
  ]);

test('dashboard sample reads every rule: it samples only the stats that counted, and a reload drops the rules it drops', () => {
  const store = new MemoryStore();
  const keys = Array.from({ length: 1000 }, (_, i) => `k${i}`);
  const svc = new RateLimitService(new RuleSet(config(keys, 'user'), { store }), { store, localCache: false });
  const hit = (key: string, value: string) =>
    svc.shouldRateLimit({ domain: 'd', descriptors: [{ entries: [{ key, value }] }], hitsAddend: 1 }) as RlsResponse;
  // The dashboard must not walk all 1,001 rules' stats to find the few that decided.
  const walked = { allStats: 0 };
  const view = {
    countedStats: () => svc.countedStats(),
    allStats: () => {
      walked.allStats++;
      return svc.allStats();
    },
  };
  const dashboard = new Dashboard(() => view as never, 1000, { now: () => 0 });
  hit('k1', 'a');
  hit('k1', 'b');
  hit('k7', 'a');
  hit('user', 'ann');
  hit('user', 'bob');
  assert.deepEqual(
    svc
      .countedStats()
      .map((s) => `${s.rule}${s.descriptor === undefined ? '' : ` ${s.descriptor}`}`)
      .sort(),
    ['d.k1', 'd.k7', 'd.user d.user_ann', 'd.user d.user_bob'],
    'each stats object once, at its first count',
  );
  dashboard.sample();
  assert.equal(walked.allStats, 0, 'the sample reads only the counted stats');
  assert.deepEqual(dashboard.samples()[0]!.rules, { 'd.k1': [2, 0], 'd.k7': [1, 0], 'd.user': [2, 0] });

  // A reload that drops k7 and keeps k1 (same policy: its stats carry over): k7's stats leave the list.
  const next = new RuleSet(config(['k1', 'k2'], 'user'), { store }, svc.rules);
  svc.replaceRules(next);
  assert.deepEqual(
    svc
      .countedStats()
      .map((s) => s.rule)
      .sort(),
    ['d.k1', 'd.user', 'd.user'],
  );
  hit('k2', 'a');
  assert.deepEqual(
    svc
      .countedStats()
      .map((s) => s.rule)
      .sort(),
    ['d.k1', 'd.k2', 'd.user', 'd.user'],
  );
});
