// End to end over HTTP: POST /json (Envoy's proto3-JSON form), POST /v1/check, bad requests, body limits,
// health, metrics, hot reload that keeps counter state, an invalid reload that keeps the old config, and
// `sluice serve` refusing an invalid config.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { post, start, TempConfig, variants } from './serve-helpers.js';
import type { LogSink } from './serve-helpers.js';
import type { RunningService } from '../../src/server/serve.js';

const CONFIG = (limit: number) => `domain: web
descriptors:
  - key: key
    rate_limit: { unit: hour, requests_per_unit: 3, algorithm: token-bucket }
  - key: user
    rate_limit: { unit: hour, requests_per_unit: ${limit} }
  - key: client
    detailed_metric: true
    rate_limit: { unit: hour, requests_per_unit: 2 }
`;

const { run, skipped } = await variants();
if (skipped) test(skipped, { skip: skipped }, () => {});

for (const variant of run) {
  describe(`HTTP API (${variant.name})`, () => {
    const cfg = new TempConfig(CONFIG(2));
    let svc: RunningService;
    let logs: LogSink;
    let port: number;
    const u = (s: string) => `${s}-${variant.name.split(' ')[0]}-${process.pid}`;
    before(async () => {
      ({ svc, logs } = await start(cfg.path, variant, { maxBodyBytes: 1024, watch: true, maxDetailedSeries: 3 }));
      port = svc.httpPort;
    });
    after(async () => {
      await svc.close();
      cfg.remove();
    });

    test('POST /json answers in proto3 JSON: 200 while OK, 429 once over, either field-name form', async () => {
      const body = { domain: 'web', descriptors: [{ entries: [{ key: 'user', value: u('ann') }] }] };
      const a = await post(port, '/json', body);
      assert.equal(a.status, 200);
      assert.deepEqual(a.json, {
        overallCode: 'OK',
        statuses: [
          {
            code: 'OK',
            currentLimit: { requestsPerUnit: 2, unit: 'HOUR' },
            limitRemaining: 1,
            durationUntilReset: a.json.statuses[0].durationUntilReset,
          },
        ],
        responseHeadersToAdd: [
          { key: 'RateLimit-Limit', value: '2, 2;w=3600' },
          { key: 'RateLimit-Remaining', value: '1' },
          { key: 'RateLimit-Reset', value: String(Math.ceil(parseFloat(a.json.statuses[0].durationUntilReset))) },
        ],
      });
      assert.match(a.json.statuses[0].durationUntilReset, /^\d+(\.\d+)?s$/);
      const b = await post(port, '/json', {
        domain: 'web',
        descriptors: [{ entries: [{ key: 'user', value: u('ann') }] }],
        hits_addend: 1,
      });
      assert.equal(b.status, 200);
      const c = await post(port, '/json', {
        domain: 'web',
        descriptors: [{ entries: [{ key: 'user', value: u('ann') }] }],
        hitsAddend: 1,
      });
      assert.equal(c.status, 429);
      assert.equal(c.json.overallCode, 'OVER_LIMIT');
      assert.ok(Number(c.headers.get('retry-after')) >= 1);
    });

    test('POST /v1/check: {key, cost} and {domain, descriptors} get the decision', async () => {
      const a = await post(port, '/v1/check', { key: u('k1'), cost: 2 });
      assert.equal(a.status, 200);
      assert.deepEqual(a.json, {
        allowed: true,
        matched: true,
        retryAfterMs: 0,
        statuses: [
          {
            rule: 'web.key',
            matched: true,
            allowed: true,
            limit: 3,
            remaining: 1,
            resetAfterMs: a.json.statuses[0].resetAfterMs,
            shadow: false,
          },
        ],
      });
      const b = await post(port, '/v1/check', { key: u('k1'), cost: 2 });
      assert.equal(b.status, 429);
      assert.equal(b.json.allowed, false);
      assert.ok(b.json.retryAfterMs > 0 && b.json.retryAfterMs <= 3_600_000);
      assert.equal(b.json.statuses[0].retryAfterMs, b.json.retryAfterMs);
      const c = await post(port, '/v1/check', { domain: 'web', descriptors: [{ user: u('bob') }] });
      assert.deepEqual([c.status, c.json.statuses[0].rule, c.json.statuses[0].remaining], [200, 'web.user', 1]);
    });

    test('bad requests get a 4xx naming the problem, and the service keeps answering', async () => {
      const cases: [string, string | object, number, string][] = [
        ['/json', '{"domain": "web", ', 400, 'the body is not valid JSON: '],
        ['/json', { domain: 'web' }, 400, `'descriptors' must not be empty`],
        [
          '/json',
          { domain: 'web', descriptors: [{ entries: [{ key: 'user', value: 'x' }] }], hits_addend: -1 },
          400,
          `'hits_addend' must be a whole number from 0 to 4294967295, got -1`,
        ],
        [
          '/json',
          { domain: 'web', descriptors: [{ entries: [{ key: 'user' }] }] },
          400,
          `'descriptors[0].entries[0].value' must be a non-empty string, got undefined`,
        ],
        [
          '/json',
          { domain: 'web', descriptors: [], extra: 1 },
          400,
          `unknown field 'extra'; known fields: domain, descriptors, hits_addend, hitsAddend`,
        ],
        ['/v1/check', { cost: 1 }, 400, `give exactly one of 'key' or 'descriptors'`],
        ['/v1/check', { key: 'a', cost: -2 }, 400, `'cost' must be a whole number from 0 to 4294967295, got -2`],
        ['/json', 'x'.repeat(2000), 413, 'the body is larger than 1024 bytes'],
      ];
      for (const [path, body, status, message] of cases) {
        const r = await post(port, path, body);
        assert.equal(r.status, status, `${path} ${JSON.stringify(body).slice(0, 80)}`);
        assert.ok(r.json.error.startsWith(message), `${r.json.error} should start with ${message}`);
      }
      const wrongMethod = await fetch(`http://127.0.0.1:${port}/json`);
      assert.equal(wrongMethod.status, 405);
      assert.equal((await fetch(`http://127.0.0.1:${port}/nowhere`)).status, 404);
      assert.equal((await fetch(`http://127.0.0.1:${port}/nginx/%E0%A4%A`)).status, 400, 'malformed percent-encoding');
      // An unknown domain is OK, as envoyproxy/ratelimit answers it (--strict-domains refuses it).
      assert.equal((await fetch(`http://127.0.0.1:${port}/nginx/nope`)).status, 200, 'unknown domain');
      const unknown = await post(port, '/json', {
        domain: 'nope',
        descriptors: [{ entries: [{ key: 'a', value: 'b' }] }],
      });
      assert.deepEqual([unknown.status, unknown.json.overallCode, unknown.json.statuses.length], [200, 'OK', 1]);
      assert.equal((await post(port, '/v1/check', { key: u('still-alive') })).status, 200);
    });

    test('POST /json and /v1/check on one raw connection: pipelined, chunked, oversized and split bodies each get their answer, in order', async () => {
      const json = (user: string) =>
        JSON.stringify({ domain: 'web', descriptors: [{ entries: [{ key: 'user', value: u(user) }] }] });
      const req = (path: string, body: string, framing = `content-length: ${Buffer.byteLength(body)}`) =>
        `POST ${path} HTTP/1.1\r\nhost: x\r\n${framing}\r\n\r\n${body}`;
      const big = JSON.stringify({ domain: 'web', pad: 'x'.repeat(1100) });
      const chunked = (body: string) => `${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`;
      const split = req('/json', json('split'));
      const check = req('/v1/check', JSON.stringify({ key: u('split') }));
      const s = connect(port, '127.0.0.1');
      await new Promise((r) => s.once('connect', r));
      s.setNoDelay(true);
      let text = '';
      s.on('data', (d) => (text += d.toString()));
      s.write(
        req('/json', json('pipe')) +
          req('/json', chunked(json('pipe')), 'transfer-encoding: chunked') +
          req('/json', big) +
          req('/json', chunked(big), 'transfer-encoding: chunked') +
          check.slice(0, check.length - 20),
      );
      // The last two requests arrive over several writes, cut inside their bodies.
      for (const part of [check.slice(-20, -10), check.slice(-10)]) {
        await new Promise((r) => setImmediate(r));
        s.write(part);
      }
      s.write(split.slice(0, split.length - 5));
      await new Promise((r) => setImmediate(r));
      s.write(split.slice(split.length - 5));
      const answers = async () => {
        for (;;) {
          const found = [...text.matchAll(/HTTP\/1\.1 (\d+)[^]*?content-length: (\d+)\r\n[^]*?\r\n\r\n/gi)];
          if (found.length === 6) {
            const last = found[5]!;
            if (text.length >= last.index! + last[0].length + Number(last[2]))
              return found
                .map((m) => JSON.parse(text.substr(m.index! + m[0].length, Number(m[2]))) as any)
                .map((b, i) => [Number(found[i]![1]), b]);
          }
          await new Promise((r) => s.once('data', r));
        }
      };
      const got = await answers();
      s.destroy();
      assert.deepEqual(
        got.map(([status]) => status),
        [200, 200, 413, 413, 200, 200],
      );
      assert.deepEqual(
        [got[0]![1].statuses[0].limitRemaining, got[1]![1].statuses[0].limitRemaining],
        [1, undefined],
        'both pipelined decisions were charged, in order (proto3 JSON leaves out a zero)',
      );
      assert.equal(got[2]![1].error, 'the body is larger than 1024 bytes');
      assert.equal(got[4]![1].allowed, true);
      assert.equal(got[5]![1].statuses[0].limitRemaining, 1);
    });

    test('/healthz, /readyz and /metrics answer', async () => {
      assert.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
      assert.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200);
      const metrics = await (await fetch(`http://127.0.0.1:${svc.adminPort}/metrics`)).text();
      assert.match(metrics, /sluice_rule_hits_total\{domain="web",rule="web.user"\} [1-9]/);
      assert.match(metrics, /sluice_rule_over_limit_total\{domain="web",rule="web.user"\} [1-9]/);
      assert.match(metrics, /sluice_rule_decision_seconds_bucket\{domain="web",rule="web.user",le="\+Inf"\} [1-9]/);
      assert.match(metrics, /process_cpu_user_seconds_total/);
    });

    test('detailed_metric: each descriptor value gets its own series, up to --max-detailed-series, then "(other)"', async () => {
      const client = (v: string) =>
        post(port, '/json', { domain: 'web', descriptors: [{ entries: [{ key: 'client', value: v }] }] });
      await client(u('c1'));
      await client(u('c1'));
      await client(u('c1')); // over its limit of 2
      await client(u('c2'));
      for (let i = 3; i <= 7; i++) await client(u(`c${i}`)); // c3 takes the last series; c4..c7 fold into "(other)"
      const metrics = await (await fetch(`http://127.0.0.1:${svc.adminPort}/metrics`)).text();
      const series = (name: string, d: string) =>
        new RegExp(
          `${name}\\{domain="web",rule="web.client",descriptor="${d.replace(/[.()]/g, '\\$&')}"\\} (\\d+)`,
        ).exec(metrics)?.[1];
      assert.equal(series('sluice_rule_hits_total', `web.client_${u('c1')}`), '3');
      assert.equal(series('sluice_rule_over_limit_total', `web.client_${u('c1')}`), '1');
      assert.equal(series('sluice_rule_hits_total', `web.client_${u('c2')}`), '1');
      assert.equal(series('sluice_rule_hits_total', `web.client_${u('c3')}`), '1');
      assert.equal(series('sluice_rule_hits_total', `web.client_${u('c4')}`), undefined, 'past the cap');
      assert.equal(series('sluice_rule_hits_total', '(other)'), '4');
      assert.doesNotMatch(metrics, /rule="web.user",descriptor=/, 'a rule without detailed_metric keeps one series');
    });

    test('hot reload on file change keeps the state of unchanged rules and applies new limits', async () => {
      const key = u('reload');
      await post(port, '/v1/check', { key, cost: 2 }); // web.key: 1 left
      const user = u('carol');
      await post(port, '/v1/check', { domain: 'web', descriptors: [{ user }] }); // web.user (limit 2): 1 left
      const applied = waitForLog(logs, 'config reloaded');
      cfg.write(CONFIG(5)); // web.user's limit changes; web.key's does not
      await applied;
      const k = await post(port, '/v1/check', { key });
      assert.deepEqual([k.status, k.json.statuses[0].remaining], [200, 0], 'web.key kept its counter');
      const v = await post(port, '/v1/check', { domain: 'web', descriptors: [{ user }] });
      assert.equal(v.json.statuses[0].limit, 5, 'web.user has its new limit');
    });

    test('an invalid reload keeps the old config and logs every problem', async () => {
      const ok = await svc.reload('test');
      assert.equal(ok, true);
      cfg.write(CONFIG(5).replace('unit: hour', 'unit: fortnight'));
      assert.equal(await svc.reload('test'), false);
      const line = [...logs.lines]
        .reverse()
        .find((l) => l.msg === 'config reload rejected; the previous config stays in force')!;
      assert.deepEqual(line.problems, [
        `policies.yaml:4:25: descriptors[0].rate_limit.unit: invalid rate limit unit 'fortnight'; use second, minute, hour, day, week, month or year`,
      ]);
      assert.equal((await post(port, '/v1/check', { key: u('after-bad-reload') })).status, 200);
      cfg.write(CONFIG(5));
    });
  });
}

function waitForLog(logs: LogSink, msg: string): Promise<void> {
  const seen = logs.lines.filter((l) => l.msg === msg).length;
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + 5000;
    const poll = setInterval(() => {
      if (logs.lines.filter((l) => l.msg === msg).length > seen) {
        clearInterval(poll);
        resolve();
      } else if (Date.now() > deadline) {
        clearInterval(poll);
        reject(new Error(`no '${msg}' log within 5 s`));
      }
    }, 20);
  });
}

describe('sluice serve as a process', () => {
  const main = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

  test('an invalid config is refused with every problem and exit code 1', () => {
    const bad = fileURLToPath(new URL('../fixtures/config/many_errors.yaml', import.meta.url));
    const r = spawnSync(
      process.execPath,
      ['--import', 'tsx', main, 'serve', '--config', bad, '--port', '0', '--grpc-port', '-1'],
      { encoding: 'utf8', timeout: 20_000 },
    );
    assert.equal(r.status, 1);
    assert.match(r.stderr, /^sluice serve: the config is invalid:\n {2}many_errors\.yaml:6:26: /);
    assert.equal(r.stderr.trim().split('\n').length, 8);
  });

  test('SIGHUP reloads, SIGTERM drains and exits 0; settings come from the environment too', async () => {
    const cfg = new TempConfig(CONFIG(2));
    const child = spawn(process.execPath, ['--import', 'tsx', main, 'serve', '--grpc-port', '-1'], {
      env: { ...process.env, SLUICE_CONFIG: cfg.path, SLUICE_PORT: '0', SLUICE_ADMIN_PORT: '0', SLUICE_WATCH: 'false' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines: Record<string, unknown>[] = [];
    const seen = (msg: string) =>
      new Promise<Record<string, unknown>>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`no '${msg}' from the child`)), 15_000);
        const check = () => {
          const l = lines.find((x) => x.msg === msg);
          if (l) {
            clearTimeout(t);
            resolve(l);
          } else setTimeout(check, 20);
        };
        check();
      });
    let buf = '';
    child.stdout.on('data', (c: Buffer) => {
      buf += c.toString();
      const parts = buf.split('\n');
      buf = parts.pop()!;
      for (const p of parts) if (p) lines.push(JSON.parse(p) as Record<string, unknown>);
    });
    const listening = await seen('sluice serve listening');
    const port = listening.http as number;
    assert.equal((await post(port, '/v1/check', { key: 'x' })).status, 200);
    child.kill('SIGHUP');
    assert.equal((await seen('config reloaded')).reason, 'SIGHUP');
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
    assert.ok(lines.some((l) => l.msg === 'stopped'));
    cfg.remove();
  });
});

describe('an unreachable Redis with failure mode closed', async () => {
  const { redisAvailable } = await import('../../src/server/config/store-from-settings.js');
  const skip = (await redisAvailable()) ? false : 'this build has no sluice/redis + ioredis yet (branch redis)';
  test('/readyz is 503, /healthz is 200, and decisions are denied and counted as store errors', { skip }, async () => {
    const cfg = new TempConfig(CONFIG(2));
    // Port 1 on loopback: nothing listens there, so every connection attempt is refused at once.
    const { svc } = await start(
      cfg.path,
      { name: 'dead redis', settings: {} },
      { redis: 'redis://127.0.0.1:1', failureMode: 'closed', redisConnectTimeoutMs: 200, grpcPort: -1 },
    );
    try {
      assert.equal((await fetch(`http://127.0.0.1:${svc.httpPort}/readyz`)).status, 503);
      assert.equal(
        (await fetch(`http://127.0.0.1:${svc.httpPort}/healthcheck`)).status,
        503,
        "envoyproxy/ratelimit's path for the same question",
      );
      assert.equal((await fetch(`http://127.0.0.1:${svc.httpPort}/healthz`)).status, 200);
      const r = await post(svc.httpPort, '/v1/check', { key: 'k' });
      assert.equal(r.status, 429);
      const metrics = await (await fetch(`http://127.0.0.1:${svc.adminPort}/metrics`)).text();
      assert.match(metrics, /sluice_rule_store_errors_total\{domain="web",rule="web.key"\} 1/);
    } finally {
      await svc.close();
      cfg.remove();
    }
  });
});

describe('global shadow mode (--shadow-mode, Envoy ratelimit SHADOW_MODE)', () => {
  for (const variant of run) {
    test(`a request over the limit gets 200 on /json and passes /v1/check, its status still OVER_LIMIT, and is counted (${variant.name})`, async () => {
      const cfg = new TempConfig(CONFIG(1));
      const { svc } = await start(cfg.path, variant, { shadowMode: true, grpcPort: -1 });
      try {
        assert.equal((await fetch(`http://127.0.0.1:${svc.httpPort}/healthcheck`)).status, 200);
        const user = `shadow-${variant.name.split(' ')[0]}-${process.pid}`;
        const body = { domain: 'web', descriptors: [{ entries: [{ key: 'user', value: user }] }] };
        assert.equal((await post(svc.httpPort, '/json', body)).status, 200);
        const over = await post(svc.httpPort, '/json', body);
        assert.equal(over.status, 200);
        assert.equal(over.json.overallCode, 'OK');
        assert.equal(over.json.statuses[0].code, 'OVER_LIMIT', 'the rule still says what it decided, as in Envoy');
        assert.equal(over.headers.get('retry-after'), null);
        assert.ok(!over.json.responseHeadersToAdd.some((h: { key: string }) => h.key === 'Retry-After'));
        const check = await post(svc.httpPort, '/v1/check', { domain: 'web', descriptors: [{ user }] });
        assert.equal(check.status, 200);
        assert.deepEqual([check.json.allowed, check.json.statuses[0].allowed], [true, false]);
        const metrics = await (await fetch(`http://127.0.0.1:${svc.adminPort}/metrics`)).text();
        assert.match(metrics, /^sluice_global_shadow_mode_total 2$/m);
        assert.equal(
          (await (await fetch(`http://127.0.0.1:${svc.adminPort}/config`)).json()).globalShadowMode,
          true,
          'the dashboard says so',
        );
        assert.match(
          metrics,
          /sluice_rule_over_limit_total\{domain="web",rule="web.user"\} 2/,
          'the rule counts what it would have limited',
        );
      } finally {
        await svc.close();
        cfg.remove();
      }
    });
  }
});

test("--merge-domain-config: a folder whose files share a domain serves both files' rules; without it the start is refused naming both files", async () => {
  const cfg = new TempConfig(
    'domain: web\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: 1 }\n',
    'a.yaml',
  );
  writeFileSync(
    join(cfg.dir, 'b.yaml'),
    'domain: web\ndescriptors:\n  - key: team\n    rate_limit: { unit: hour, requests_per_unit: 2 }\n',
  );
  try {
    await assert.rejects(
      start(cfg.dir, { name: 'memory', settings: {} }, { grpcPort: -1 }),
      /b\.yaml: duplicate domain 'web', also in a\.yaml \(--merge-domain-config merges them\)/,
    );
    const { svc } = await start(cfg.dir, { name: 'memory', settings: {} }, { grpcPort: -1, mergeDomainConfig: true });
    try {
      const check = (key: string) =>
        post(svc.httpPort, '/v1/check', { domain: 'web', descriptors: [{ [key]: 'x' }] }).then((r) => r.status);
      assert.deepEqual([await check('user'), await check('user')], [200, 429], 'a.yaml: 1 per hour');
      assert.deepEqual(
        [await check('team'), await check('team'), await check('team')],
        [200, 200, 429],
        'b.yaml: 2 per hour',
      );
    } finally {
      await svc.close();
    }
  } finally {
    cfg.remove();
  }
});
