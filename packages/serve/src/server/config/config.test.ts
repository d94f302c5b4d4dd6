// Config validation: each failure has a fixture named after it and an exact-string test of the message,
// as envoyproxy/ratelimit pins its own (test/config/*.yaml).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig, parseConfig } from './config.js';

const fixture = (name: string) => fileURLToPath(new URL(`../../../test/fixtures/config/${name}.yaml`, import.meta.url));

function problems(name: string): readonly string[] {
  try {
    loadConfig(fixture(name));
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  assert.fail(`${name}.yaml validated, but it should not`);
}

const EXPECTED: Record<string, string[]> = {
  bad_limit_unit: [
    `bad_limit_unit.yaml:5:13: descriptors[0].rate_limit.unit: invalid rate limit unit 'fortnight'; use second, minute, hour, day, week, month or year`,
  ],
  misspelled_key: [`misspelled_key.yaml:4:5: descriptors[0]: unknown key 'ratelimit'; did you mean 'rate_limit'?`],
  duplicate_key: [
    `duplicate_key.yaml:8:10: descriptors[1]: duplicate descriptor composite key 'test-domain.key1_value1'`,
  ],
  bad_yaml: [
    `bad_yaml.yaml:5:3: invalid YAML: Flow map in block collection must be sufficiently indented and end with a }`,
  ],
  empty_domain: [`empty_domain.yaml:1:9: domain: must be a non-empty string, got ''`],
  unknown_replaces: [
    `unknown_replaces.yaml:6:11: descriptors[0].rate_limit.replaces[0]: replaces 'nowhere', but no rate_limit in domain 'test-domain' has that name`,
  ],
  many_errors: [
    `many_errors.yaml:6:26: descriptors[0].rate_limit.requests_per_unit: must be a whole number from 0 to 4294967295, got '-3'`,
    `many_errors.yaml:7:5: descriptors[1].key: 'key' is required`,
    `many_errors.yaml:9:18: descriptors[2].shadow_mode: must be true or false, got 'yes please'`,
    `many_errors.yaml:14:14: descriptors[2].rate_limit: 'burst' applies to token-bucket, gcra and leaky-bucket, not fixed-window`,
    `many_errors.yaml:18:13: descriptors[3].rate_limit.unit: 'unit' cannot be set on an unlimited rate limit`,
    `many_errors.yaml:22:18: descriptors[4].rate_limit.algorithm: unknown algorithm 'leaky'; use fixed-window, sliding-log, sliding-window, token-bucket, gcra, leaky-bucket`,
    `many_errors.yaml:23:15: descriptors[4].rate_limit.window: 'window' must be milliseconds or a duration such as '500ms', '1s', '1m', '1h' or '1d', got "1 fortnight"`,
  ],
};

for (const [name, expected] of Object.entries(EXPECTED)) {
  test(`config error: ${name}.yaml`, () => {
    assert.deepEqual(problems(name), expected);
  });
}

test('every problem in a file is reported, in file order, not only the first', () => {
  assert.equal(problems('many_errors').length, 7);
});

test('sluice extensions compile to sluice policies; Envoy units stay reported as Envoy units', () => {
  const cfg = loadConfig(fixture('sluice_extensions'));
  const rules = cfg.domains.get('extended')!.rules;
  assert.deepEqual(
    rules.map((r) => [r.id, r.unit, r.policy?.algorithm, r.policy?.limit, r.policy?.windowMs, r.policy?.burst]),
    [
      ['extended.user', 'MINUTE', 'token-bucket', 100, 60_000, 20],
      ['extended.ip', 'UNKNOWN', 'sliding-log', 30, 10_000, 30],
    ],
  );
});

test('Envoy configs load as they are: fixed windows, numbers as values, 0 and unlimited', () => {
  const cfg = parseConfig([
    {
      file: 'envoy.yaml',
      text: `domain: mongo_cps
descriptors:
  - key: database
    value: 500
    rate_limit: { unit: second, requests_per_unit: 500 }
  - key: remote_address
    value: 50.0.0.5
    rate_limit: { unit: second, requests_per_unit: 0 }
  - key: ldap
    rate_limit: { unlimited: true }
  - key: message_type
    value: marketing
    detailed_metric: true
    descriptors:
      - key: to_number
        rate_limit: { unit: day, requests_per_unit: 5, name: marketing }
`,
    },
  ]);
  const ids = cfg.domains
    .get('mongo_cps')!
    .rules.map((r) => `${r.id}:${r.policy?.algorithm ?? (r.unlimited ? 'unlimited' : 'blocked')}`);
  assert.deepEqual(ids, [
    'mongo_cps.database_500:fixed-window',
    'mongo_cps.remote_address_50.0.0.5:blocked',
    'mongo_cps.ldap:unlimited',
    'mongo_cps.message_type_marketing.to_number:fixed-window',
  ]);
});

test('two files with one domain are a problem naming both files', () => {
  const text = 'domain: same\ndescriptors: []\n';
  assert.throws(
    () =>
      parseConfig([
        { file: 'a.yaml', text },
        { file: 'b.yaml', text },
      ]),
    (e: unknown) =>
      e instanceof ConfigError &&
      e.problems[0] === `b.yaml: duplicate domain 'same', also in a.yaml (--merge-domain-config merges them)`,
  );
});

test('mergeDomains (Envoy MERGE_DOMAIN_CONFIG): files naming one domain add up, and a top-level descriptor defined twice is still a problem naming both files', () => {
  const a = `domain: api
descriptors:
  - key: user
    rate_limit: { unit: minute, requests_per_unit: 5 }
  - key: path
    value: /v1/*
    rate_limit: { unit: minute, requests_per_unit: 7 }
http_descriptors:
  - [{ key: user, header: x-user }]
`;
  const b = `domain: api
descriptors:
  - key: tenant
    value: acme
    descriptors:
      - key: user
        rate_limit: { unit: second, requests_per_unit: 1 }
http_descriptors:
  - [{ key: tenant, header: x-tenant }]
`;
  const cfg = parseConfig(
    [
      { file: 'a.yaml', text: a },
      { file: 'b.yaml', text: b },
    ],
    { mergeDomains: true },
  );
  const d = cfg.domains.get('api')!;
  assert.deepEqual(
    d.rules.map((r) => r.id),
    ['api.user', 'api.path_/v1/*', 'api.tenant_acme.user'],
  );
  assert.deepEqual(
    [d.root.byKey.has('user'), d.root.exact.has('tenant\u0000acme'), d.root.wildcards.length],
    [true, true, 1],
  );
  assert.equal(d.httpDescriptors.length, 2);
  assert.equal(d.file, 'a.yaml, b.yaml');
  const again = `domain: api
descriptors:
  - key: user
    rate_limit: { unit: hour, requests_per_unit: 1 }
  - key: path
    value: /v1/*
    rate_limit: { unit: hour, requests_per_unit: 1 }
`;
  assert.throws(
    () =>
      parseConfig(
        [
          { file: 'a.yaml', text: a },
          { file: 'b.yaml', text: b },
          { file: 'c.yaml', text: again },
        ],
        { mergeDomains: true },
      ),
    (e: unknown) =>
      e instanceof ConfigError &&
      e.problems.includes(`c.yaml: domain 'api': descriptor key 'user' (no value) is also defined in a.yaml, b.yaml`) &&
      e.problems.includes(
        `c.yaml: domain 'api': descriptor key 'path' value '/v1/*' is also defined in a.yaml, b.yaml`,
      ),
  );
});

test('mergeDomains: a replaces may name a rule of another file of the domain; a name no file has is a problem at its place', () => {
  const a = `domain: api
descriptors:
  - key: ip
    rate_limit: { name: per_ip, unit: minute, requests_per_unit: 100 }
`;
  const b = `domain: api
descriptors:
  - key: user
    rate_limit:
      unit: minute
      requests_per_unit: 10
      replaces: [{ name: per_ip }]
`;
  const cfg = parseConfig(
    [
      { file: 'a.yaml', text: a },
      { file: 'b.yaml', text: b },
    ],
    { mergeDomains: true },
  );
  assert.deepEqual(cfg.domains.get('api')!.rules.find((r) => r.id === 'api.user')!.replaces, ['per_ip']);
  // Either file order: b's replaces is resolved once every file of the domain is read.
  parseConfig(
    [
      { file: 'b.yaml', text: b },
      { file: 'a.yaml', text: a },
    ],
    { mergeDomains: true },
  );
  const typo = b.replace('name: per_ip', 'name: per_ipp');
  assert.throws(
    () =>
      parseConfig(
        [
          { file: 'a.yaml', text: a },
          { file: 'b.yaml', text: typo },
        ],
        { mergeDomains: true },
      ),
    (e: unknown) =>
      e instanceof ConfigError &&
      e.problems.length === 1 &&
      e.problems[0] ===
        `b.yaml:7:18: descriptors[0].rate_limit.replaces[0]: replaces 'per_ipp', but no rate_limit in domain 'api' has that name`,
  );
  // Without merging, each file stands alone (and the second one's domain clashes).
  assert.throws(
    () => parseConfig([{ file: 'b.yaml', text: b }]),
    (e: unknown) =>
      e instanceof ConfigError &&
      e.problems[0] ===
        `b.yaml:7:18: descriptors[0].rate_limit.replaces[0]: replaces 'per_ip', but no rate_limit in domain 'api' has that name`,
  );
});

test('sluice check-config exits 1 and lists the problems; 0 on a valid file', () => {
  const main = fileURLToPath(new URL('../../cli/main.ts', import.meta.url));
  const bad = spawnSync(
    process.execPath,
    ['--import', 'tsx', main, 'check-config', '--config', fixture('bad_limit_unit')],
    { encoding: 'utf8' },
  );
  assert.equal(bad.status, 1);
  assert.equal(bad.stderr, `${EXPECTED.bad_limit_unit![0]}\n1 problem(s) found\n`);
  const good = spawnSync(
    process.execPath,
    ['--import', 'tsx', main, 'check-config', '--config', fixture('sluice_extensions')],
    { encoding: 'utf8' },
  );
  assert.equal(good.status, 0, good.stderr);
  assert.equal(good.stdout, 'ok: 1 file(s), 1 domain(s), 2 rule(s)\n');
});

test('sluice check-config --merge-domain-config validates a folder whose files share a domain', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-merge-'));
  try {
    writeFileSync(
      join(dir, 'a.yaml'),
      'domain: web\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: 1 }\n',
    );
    writeFileSync(
      join(dir, 'b.yaml'),
      'domain: web\ndescriptors:\n  - key: team\n    rate_limit: { unit: hour, requests_per_unit: 2 }\n',
    );
    const main = fileURLToPath(new URL('../../cli/main.ts', import.meta.url));
    const apart = spawnSync(process.execPath, ['--import', 'tsx', main, 'check-config', '--config', dir], {
      encoding: 'utf8',
    });
    assert.equal(apart.status, 1);
    assert.match(apart.stderr, /b\.yaml: duplicate domain 'web', also in a\.yaml/);
    const merged = spawnSync(
      process.execPath,
      ['--import', 'tsx', main, 'check-config', '--config', dir, '--merge-domain-config', 'true'],
      { encoding: 'utf8' },
    );
    assert.equal(merged.status, 0, merged.stderr);
    assert.equal(merged.stdout, 'ok: 2 file(s), 1 domain(s), 2 rule(s)\n');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
