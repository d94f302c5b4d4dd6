// Issue 38, "nothing fails without saying why": a config the nginx endpoint cannot use is warned about at
// start, on reload and by check-config; an answer no rule decided says `matched: false` (no limit, no
// `remaining: 0` that reads as a limit hit); the dashboard's first hint is a request the running config
// matches, on the address the page was served from, and limits read in words.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { startService } from './serve.js';
import { DEFAULTS } from './config/settings.js';
import { parseConfig } from './config/config.js';
import { configNotes } from './config/config-notes.js';
import { exampleCheckBody, windowInWords } from './operator/example-request.js';
import { runCli } from '../cli/cli.js';

// The README's config: no http_descriptors.
const README_CONFIG = `domain: api
descriptors:
  - key: remote_address
    rate_limit: { unit: minute, requests_per_unit: 100 }
  - key: api_key
    rate_limit: { unit: second, requests_per_unit: 5, algorithm: token-bucket, burst: 10 }
`;
const WITH_NGINX = `${README_CONFIG}http_descriptors:
  - [{ key: remote_address, header: X-Real-IP }]
`;

async function serving(
  yaml: string,
  body: (
    svc: Awaited<ReturnType<typeof startService>>,
    logs: () => Record<string, unknown>[],
    file: string,
  ) => Promise<void>,
) {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-noop-'));
  const config = join(dir, 'policies.yaml');
  writeFileSync(config, yaml);
  let text = '';
  const logStream = new Writable({ write: (c, _e, done) => ((text += c), done()) });
  const svc = await startService(
    { ...DEFAULTS, config, port: 0, grpcPort: -1, adminPort: 0, watch: false, logLevel: 'info' },
    { logStream },
  );
  const logs = () =>
    text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  try {
    await body(svc, logs, config);
  } finally {
    await svc.close(0);
    rmSync(dir, { recursive: true, force: true });
  }
}

const post = async (port: number, path: string, body: unknown) => {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', body: JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as Record<string, any> };
};

const nginxWarnings = (logs: Record<string, unknown>[]) =>
  logs.filter((l) => l.level === 40 && /no http_descriptors/.test(String(l.msg)));

test('a domain with no http_descriptors is warned about at start and on reload: /nginx/<domain> would pass every request', async () => {
  await serving(README_CONFIG, async (svc, logs, file) => {
    const atStart = nginxWarnings(logs());
    assert.equal(atStart.length, 1, JSON.stringify(logs()));
    assert.match(
      String(atStart[0]!.msg),
      /^policies\.yaml: domain 'api' has no http_descriptors, so the nginx endpoint \/nginx\/api passes every request/,
    );
    assert.equal(atStart[0]!.domain, 'api');
    // And it does pass: the warning is about what happens.
    assert.equal(
      (await fetch(`http://127.0.0.1:${svc.httpPort}/nginx/api`, { headers: { 'x-real-ip': '1.2.3.4' } })).status,
      200,
    );
    assert.equal(await svc.reload('test'), true);
    const afterReload = nginxWarnings(logs());
    assert.equal(afterReload.length, 2);
    assert.equal(afterReload[1]!.reason, 'test');
    // Fixed by the reload that adds them: no new warning.
    writeFileSync(file, WITH_NGINX);
    assert.equal(await svc.reload('fixed'), true);
    assert.equal(nginxWarnings(logs()).length, 2);
  });
});

test('check-config says when a domain has no http_descriptors, and still exits 0 (the config is valid)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-noop-cli-'));
  try {
    for (const [name, yaml, warned] of [
      ['readme.yaml', README_CONFIG, true],
      ['nginx.yaml', WITH_NGINX, false],
    ] as const) {
      writeFileSync(join(dir, name), yaml);
      let out = '';
      let err = '';
      const code = await runCli(['check-config', '--config', join(dir, name)], {
        out: (t) => (out += t),
        err: (t) => (err += t),
      });
      assert.equal(code, 0);
      assert.equal(out, 'ok: 1 file(s), 1 domain(s), 2 rule(s)\n');
      if (warned)
        assert.match(
          err,
          new RegExp(
            `^warning: ${name.replace('.', '\\.')}: domain 'api' has no http_descriptors, so the nginx endpoint /nginx/api passes every request;.*\\n$`,
          ),
        );
      else assert.equal(err, '');
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an answer whose request matched no rule says matched: false, with no limit and no remaining, in /v1/check and /json', async () => {
  await serving(README_CONFIG, async (svc) => {
    // docs/service.md's old quick start: descriptor key `key`, which this config has no rule for.
    const none = await post(svc.httpPort, '/v1/check', { key: 'user:42' });
    assert.equal(none.status, 200);
    assert.equal(none.json.allowed, true);
    assert.equal(none.json.matched, false);
    assert.deepEqual(none.json.statuses, [{ rule: null, matched: false, allowed: true, shadow: false }]);
    assert.ok(!('remaining' in none.json.statuses[0]) && !('limit' in none.json.statuses[0]));
    const hit = await post(svc.httpPort, '/v1/check', { domain: 'api', descriptors: [{ api_key: 'k1' }] });
    assert.equal(hit.json.matched, true);
    assert.equal(hit.json.statuses[0].matched, true);
    assert.equal(hit.json.statuses[0].limit, 5);
    assert.equal(hit.json.statuses[0].remaining, 9);
    // Envoy's JSON: a status no rule decided says so; a decided one is Envoy's DescriptorStatus as before.
    const rls = await post(svc.httpPort, '/json', {
      domain: 'api',
      descriptors: [{ entries: [{ key: 'nope', value: 'x' }] }, { entries: [{ key: 'api_key', value: 'k2' }] }],
    });
    assert.deepEqual(rls.json.statuses[0], { code: 'OK', matched: false });
    assert.equal('matched' in rls.json.statuses[1], false);
    assert.equal(rls.json.statuses[1].limitRemaining, 9);
  });
});

test('with a burst above the rate, RateLimit-Limit is the burst, so RateLimit-Remaining never exceeds it (the README config: 5 a second, burst 10)', async () => {
  await serving(README_CONFIG, async (svc) => {
    const res = await fetch(`http://127.0.0.1:${svc.httpPort}/v1/check`, {
      method: 'POST',
      body: JSON.stringify({ domain: 'api', descriptors: [{ api_key: 'burst' }] }),
    });
    assert.equal(res.headers.get('ratelimit-limit'), '10, 5;w=1;burst=10');
    assert.equal(res.headers.get('ratelimit-remaining'), '9');
    // A rule without a burst of its own keeps Envoy's header.
    const plain = await fetch(`http://127.0.0.1:${svc.httpPort}/v1/check`, {
      method: 'POST',
      body: JSON.stringify({ domain: 'api', descriptors: [{ remote_address: '198.51.100.7' }] }),
    });
    assert.equal(plain.headers.get('ratelimit-limit'), '100, 100;w=60');
  });
});

test("the dashboard's empty-state hint is a request the running config matches, on the service's decision port", async () => {
  await serving(README_CONFIG, async (svc) => {
    const page = await (await fetch(`http://127.0.0.1:${svc.adminPort}/`)).text();
    assert.doesNotMatch(page, /localhost:8080/);
    assert.match(
      page,
      /<link rel="icon" href="data:,">/,
      'no icon named: the browser asks /favicon.ico and logs a 404',
    );
    // The page is on the admin port; its example request goes to the decision port /config names.
    assert.match(page, /location\.protocol \+ '\/\/' \+ location\.hostname \+ ':' \+ cfg\.decisionPort/);
    assert.match(page, /'curl -XPOST ' \+ decisions \+ "\/v1\/check -d '" \+ cfg\.exampleCheck/);
    const view = (await (await fetch(`http://127.0.0.1:${svc.adminPort}/config`)).json()) as {
      exampleCheck: string;
      decisionPort: number;
      domains: { rules: { limit: string }[] }[];
    };
    assert.equal(view.decisionPort, svc.httpPort);
    const example = await post(svc.httpPort, '/v1/check', JSON.parse(view.exampleCheck));
    assert.equal(example.json.matched, true, view.exampleCheck);
    assert.equal(example.json.statuses[0].rule, 'api.remote_address');
    assert.deepEqual(
      view.domains[0]!.rules.map((r) => r.limit),
      ['100 per minute (fixed-window)', '5 per second (token-bucket, burst 10)'],
    );
  });
  // The shipped example's first rule is on the descriptor key `key`: the short form.
  const shipped = parseConfig([
    {
      file: 'p.yaml',
      text: 'domain: d\ndescriptors:\n  - key: key\n    rate_limit: { unit: second, requests_per_unit: 10 }\n',
    },
  ]);
  assert.equal(exampleCheckBody(shipped), '{"key":"demo"}');
  // A first rule that limits nothing is passed over for one that does.
  const nested = parseConfig([
    {
      file: 'p.yaml',
      text: 'domain: d\ndescriptors:\n  - key: ip\n    value: 10.0.0.1\n    rate_limit: { unlimited: true }\n  - key: user\n    descriptors:\n      - key: route\n        value: /search*\n        rate_limit: { unit: hour, requests_per_unit: 3 }\n',
    },
  ]);
  assert.equal(exampleCheckBody(nested), '{"domain":"d","descriptors":[{"user":"demo","route":"/searchdemo"}]}');
  assert.equal(configNotes(nested).length, 1);
  assert.deepEqual([1000, 60_000, 90_000, 1500, 86_400_000 * 7].map(windowInWords), [
    'second',
    'minute',
    '90 seconds',
    '1500 ms',
    '7 days',
  ]);
});
