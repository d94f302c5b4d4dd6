// A reload builds its rules from what the config worker sends, made small on the way (placedSpec): the
// rules must be the config's own, field for field, whatever the config uses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryStore } from 'sluice/kit';
import { loadConfig } from './config.js';
import type { RuleSpec } from './config.js';
import { loadRulesOffThread } from './config-reload.js';

const FIXTURES = new URL('../../../test/fixtures/config/', import.meta.url);

/** Every rule option a spec carries, in one domain. */
const EVERYTHING = `domain: everything
descriptors:
  - key: tenant
    value: a
    rate_limit: { name: first, unit: minute, requests_per_unit: 3 }
    shadow_mode: true
    metadata: { team: payments, level: 2 }
    descriptors:
      - key: user
        detailed_metric: true
        rate_limit: { unit: second, requests_per_unit: 4, algorithm: gcra, burst: 8 }
  - key: tenant
    value: b
    rate_limit: { unit: hour, requests_per_unit: 5, replaces: [{ name: first }] }
    quota_mode: true
  - key: open
    rate_limit: { unlimited: true }
  - key: closed
    rate_limit: { unit: second, requests_per_unit: 0 }
  - key: path
    value: /api/*
    value_to_metric: true
    rate_limit: { unit: day, requests_per_unit: 6 }
`;

const byId = (specs: Iterable<RuleSpec>) => [...specs].sort((a, b) => a.id.localeCompare(b.id));

test('a reload built off the thread has the config’s rules field for field: policies, names, replaces, metadata, metrics, shares', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-reload-specs-'));
  try {
    cpSync(new URL('envoy/', FIXTURES), dir, { recursive: true });
    cpSync(new URL('sluice_extensions.yaml', FIXTURES), join(dir, 'sluice_extensions.yaml'));
    writeFileSync(join(dir, 'everything.yaml'), EVERYTHING);
    const options = { mergeDomains: true };
    const config = loadConfig(dir, options);
    const rules = await loadRulesOffThread(dir, options, { store: new MemoryStore() }, undefined);
    const expected = byId([...config.domains.values()].flatMap((d) => d.rules));
    assert.ok(expected.length > 20, `${expected.length} rules`);
    assert.deepStrictEqual(byId([...rules.rules.values()].map((r) => r.spec)), expected);
    for (const d of config.domains.values())
      assert.deepStrictEqual(byId(rules.domain(d.domain)!.rules), byId(d.rules), d.domain);
    // Each rule's policy is its own (named after the rule, frozen as compiled), whatever was shared on the way.
    for (const r of rules.rules.values()) {
      if (r.spec.policy === undefined) continue;
      assert.equal(r.spec.policy.name, r.spec.id);
      assert.ok(Object.isFrozen(r.spec.policy));
      assert.equal(r.limiter?.policies[0]?.name, r.spec.id);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
