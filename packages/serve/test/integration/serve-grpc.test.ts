// End to end over gRPC: a @grpc/grpc-js client built from sluice's .proto calls ShouldRateLimit against an
// Envoy-format config (nested descriptors, key+value before key, replaces, shadow mode, unlimited,
// hits_addend, the per-descriptor limit override) and gets Envoy's answers.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { rlsClient, start, TempConfig, variants } from './serve-helpers.js';
import type { RunningService } from '../../src/server/serve.js';

// Counting rules use unit: hour so no window edge falls inside a test run.
const CONFIG = `domain: e2e
descriptors:
  - key: message_type
    value: marketing
    descriptors:
      - key: to_number
        rate_limit: { unit: hour, requests_per_unit: 2 }
  - key: to_number
    rate_limit: { unit: hour, requests_per_unit: 100 }
  - key: remote_address
    rate_limit: { unit: hour, requests_per_unit: 10 }
  - key: remote_address
    value: 50.0.0.5
    rate_limit: { unit: second, requests_per_unit: 0 }
  - key: path
    value: /api/*
    rate_limit: { unit: hour, requests_per_unit: 3, algorithm: token-bucket }
  - key: ldap
    rate_limit: { unlimited: true }
  - key: service
    descriptors:
      - key: user
        value: user-a
        shadow_mode: true
        rate_limit: { unit: hour, requests_per_unit: 1 }
  - key: key_1
    value: value_1
    descriptors:
      - key: user
        value: bkthomps
        rate_limit: { name: specific_limit, unit: hour, requests_per_unit: 5 }
  - key: key_2
    value: value_2
    descriptors:
      - key: user
        value: bkthomps
        rate_limit:
          replaces: [{ name: specific_limit }]
          unit: hour
          requests_per_unit: 10
  - key: bucket
    rate_limit: { unit: hour, requests_per_unit: 5, algorithm: gcra }
`;

const d = (...pairs: string[]) => {
  const entries = [];
  for (let i = 0; i < pairs.length; i += 2) entries.push({ key: pairs[i], value: pairs[i + 1] });
  return { entries };
};

const { run, skipped } = await variants();
if (skipped) test(skipped, { skip: skipped }, () => {});

for (const variant of run) {
  describe(`gRPC ShouldRateLimit (${variant.name})`, () => {
    const cfg = new TempConfig(CONFIG);
    let svc: RunningService;
    let client: ReturnType<typeof rlsClient>;
    // Each variant counts on its own keys, so both can share the config and (for Redis) the server.
    const u = (s: string) => `${s}-${variant.name.split(' ')[0]}-${process.pid}`;
    before(async () => {
      svc = (await start(cfg.path, variant)).svc;
      client = rlsClient(svc.grpcPort!);
    });
    after(async () => {
      client.close();
      await svc.close();
      cfg.remove();
    });

    test('nested descriptors: the marketing limit per number, then OVER_LIMIT with a reset time', async () => {
      const req = { domain: 'e2e', descriptors: [d('message_type', 'marketing', 'to_number', u('2061111111'))] };
      const a = await client.call(req);
      const b = await client.call(req);
      const c = await client.call(req);
      assert.deepEqual([a.overall_code, b.overall_code, c.overall_code], ['OK', 'OK', 'OVER_LIMIT']);
      assert.deepEqual(a.statuses[0].current_limit, { requests_per_unit: 2, unit: 'HOUR' });
      assert.deepEqual(
        [a.statuses[0].limit_remaining, b.statuses[0].limit_remaining ?? 0, c.statuses[0].limit_remaining ?? 0],
        [1, 0, 0],
      );
      const reset = Number(c.statuses[0].duration_until_reset.seconds);
      assert.ok(reset > 0 && reset <= 3600, `duration_until_reset ${reset}s`);
      // The same number alone matches the top-level to_number rule, a different counter.
      const alone = await client.call({ domain: 'e2e', descriptors: [d('to_number', u('2061111111'))] });
      assert.equal(alone.statuses[0].limit_remaining, 99);
    });

    test('key+value is matched before key alone; a wildcard value matches by prefix', async () => {
      const r = await client.call({
        domain: 'e2e',
        descriptors: [d('remote_address', '50.0.0.5'), d('remote_address', u('50.0.0.1'))],
      });
      assert.equal(r.overall_code, 'OVER_LIMIT');
      assert.deepEqual(
        r.statuses.map((s: any) => [s.code, s.current_limit.requests_per_unit ?? 0]),
        [
          ['OVER_LIMIT', 0],
          ['OK', 10],
        ],
      );
      const p1 = await client.call({ domain: 'e2e', descriptors: [d('path', `/api/${u('x')}`)] });
      assert.deepEqual([p1.statuses[0].current_limit.requests_per_unit, p1.statuses[0].limit_remaining], [3, 2]);
      const none = await client.call({ domain: 'e2e', descriptors: [d('path', '/other')] });
      assert.equal(none.statuses[0].code, 'OK');
      assert.equal(none.statuses[0].current_limit, undefined);
    });

    test('a descriptor deeper than the config matches nothing (Envoy README, example 4)', async () => {
      const r = await client.call({ domain: 'e2e', descriptors: [d('remote_address', u('1.1.1.1'), 'extra', 'x')] });
      assert.equal(r.overall_code, 'OK');
      assert.equal(r.statuses[0].current_limit, undefined);
    });

    test('replaces: the replacing limit applies and the replaced one is neither applied nor charged', async () => {
      const user = 'bkthomps';
      const both = await client.call({
        domain: 'e2e',
        descriptors: [d('key_1', 'value_1', 'user', user), d('key_2', 'value_2', 'user', user)],
      });
      assert.equal(both.statuses[0].current_limit, undefined);
      assert.deepEqual(both.statuses[1].current_limit, { requests_per_unit: 10, unit: 'HOUR' });
      const replaced = await client.call({ domain: 'e2e', descriptors: [d('key_1', 'value_1', 'user', user)] });
      assert.deepEqual(replaced.statuses[0].current_limit, {
        name: 'specific_limit',
        requests_per_unit: 5,
        unit: 'HOUR',
      });
      assert.equal(replaced.statuses[0].limit_remaining, 4, 'the replaced rule was not charged by the first call');
    });

    test('shadow mode answers OK over the limit and counts it', async () => {
      const req = { domain: 'e2e', descriptors: [d('service', 'auth', 'user', 'user-a')] };
      const first = await client.call(req);
      const second = await client.call(req);
      assert.deepEqual([first.overall_code, second.overall_code], ['OK', 'OK']);
      const metrics = await (await fetch(`http://127.0.0.1:${svc.adminPort}/metrics`)).text();
      assert.match(metrics, /sluice_rule_shadow_mode_total\{domain="e2e",rule="e2e\.service\.user_user-a"\} [1-9]/);
    });

    test('unlimited answers OK with remaining 2^32-1', async () => {
      const r = await client.call({ domain: 'e2e', descriptors: [d('ldap', 'x')] });
      assert.deepEqual([r.statuses[0].code, r.statuses[0].limit_remaining], ['OK', 4294967295]);
    });

    test('hits_addend charges several hits; a per-descriptor hits_addend overrides it', async () => {
      const key = u('hits');
      const a = await client.call({ domain: 'e2e', descriptors: [d('bucket', key)], hits_addend: 3 });
      assert.deepEqual([a.overall_code, a.statuses[0].limit_remaining], ['OK', 2]);
      const b = await client.call({ domain: 'e2e', descriptors: [d('bucket', key)], hits_addend: 3 });
      assert.equal(b.overall_code, 'OVER_LIMIT');
      const c = await client.call({
        domain: 'e2e',
        descriptors: [{ ...d('bucket', key), hits_addend: { value: 2 } }],
        hits_addend: 3,
      });
      assert.deepEqual([c.overall_code, c.statuses[0].limit_remaining ?? 0], ['OK', 0]);
    });

    test('a descriptor limit override replaces the configured limit', async () => {
      const req = {
        domain: 'e2e',
        descriptors: [{ ...d('remote_address', u('9.9.9.9')), limit: { requests_per_unit: 1, unit: 'HOUR' } }],
      };
      const a = await client.call(req);
      const b = await client.call(req);
      assert.deepEqual(a.statuses[0].current_limit, { requests_per_unit: 1, unit: 'HOUR' });
      assert.deepEqual([a.overall_code, b.overall_code], ['OK', 'OVER_LIMIT']);
    });

    test('responses carry no headers for Envoy to add, as envoyproxy/ratelimit sends none by default (LIMIT_RESPONSE_HEADERS_ENABLED: test/issues/envoy-drop-in.test.ts)', async () => {
      const r = await client.call({ domain: 'e2e', descriptors: [d('remote_address', u('7.7.7.7'))] });
      assert.deepEqual(r.response_headers_to_add ?? [], []);
      assert.equal(r.statuses[0].duration_until_reset.nanos ?? 0, 0, 'whole seconds');
    });

    test('bad requests get INVALID_ARGUMENT naming the problem', async () => {
      const code = async (p: Promise<unknown>) =>
        p.then(
          () => assert.fail('expected an error'),
          (e: grpc.ServiceError) => [e.code, e.details],
        );
      // An unknown domain is OK, as envoyproxy/ratelimit answers it (--strict-domains refuses it).
      assert.equal((await client.call({ domain: 'nope', descriptors: [d('a', 'b')] })).overall_code, 'OK');
      assert.deepEqual(await code(client.call({ domain: 'e2e', descriptors: [] })), [
        grpc.status.INVALID_ARGUMENT,
        `'descriptors' must not be empty`,
      ]);
      assert.deepEqual(await code(client.call({ domain: 'e2e', descriptors: [d('k', '')] })), [
        grpc.status.INVALID_ARGUMENT,
        `descriptors[0].entries[0]: 'value' must not be empty`,
      ]);
      const [c, details] = (await code(client.raw(Buffer.from([0x0a, 0xff, 0xff, 0xff])))) as [number, string];
      assert.equal(c, grpc.status.INVALID_ARGUMENT);
      assert.match(details, /^malformed RateLimitRequest: /);
      const [big] = (await code(client.call({ domain: 'e2e', descriptors: [d('k', 'x'.repeat(70_000))] }))) as [number];
      assert.equal(big, grpc.status.RESOURCE_EXHAUSTED, 'a message over --max-body-bytes (64 KiB)');
      // ...and the service is still answering.
      assert.equal((await client.call({ domain: 'e2e', descriptors: [d('ldap', 'x')] })).overall_code, 'OK');
    });
  });
}

test("grpc.health.v1 Check and Watch answer SERVING; shutdown with a client's connection and a Watch still open (as Envoy and gRPC clients keep them) ends them at once instead of waiting out the grace period", async () => {
  const cfg = new TempConfig(CONFIG);
  const { svc } = await start(cfg.path, { name: 'memory', settings: {} });
  const client = rlsClient(svc.grpcPort!);
  const health = new grpc.Client(`127.0.0.1:${svc.grpcPort!}`, grpc.credentials.createInsecure());
  try {
    assert.equal((await client.call({ domain: 'e2e', descriptors: [d('ldap', 'x')] })).overall_code, 'OK');
    // HealthCheckRequest {service: ''} is empty on the wire; HealthCheckResponse {status: SERVING} is 08 01.
    const status = await new Promise<Buffer>((resolve, reject) =>
      health.makeUnaryRequest(
        '/grpc.health.v1.Health/Check',
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.alloc(0),
        (e, r) => (e ? reject(e) : resolve(r!)),
      ),
    );
    assert.deepEqual(status, Buffer.from([0x08, 0x01]));
    // A Watch, as a gRPC client's own health checking holds one open: SERVING at once, NOT_SERVING at shutdown.
    const watched: Buffer[] = [];
    const watch = health.makeServerStreamRequest(
      '/grpc.health.v1.Health/Watch',
      (b: Buffer) => b,
      (b: Buffer) => b,
      Buffer.alloc(0),
    );
    const watchEnded = new Promise<number>((resolve) => {
      watch.on('data', (b: Buffer) => watched.push(b));
      watch.on('error', (e: grpc.ServiceError) => resolve(e.code));
      watch.on('end', () => resolve(grpc.status.OK));
    });
    await new Promise((resolve) => watch.once('data', resolve));
    const t0 = performance.now();
    await svc.close(30_000);
    assert.ok(
      performance.now() - t0 < 5_000,
      `close() took ${Math.round(performance.now() - t0)} ms with an idle gRPC connection and a Watch open`,
    );
    assert.equal(await watchEnded, grpc.status.UNAVAILABLE);
    assert.deepEqual(watched, [Buffer.from([0x08, 0x01]), Buffer.from([0x08, 0x02])]);
    await assert.rejects(
      client.call({ domain: 'e2e', descriptors: [d('ldap', 'x')] }),
      (e: grpc.ServiceError) => e.code === grpc.status.UNAVAILABLE,
    );
  } finally {
    client.close();
    health.close();
    cfg.remove();
  }
});

test('--grpc-tls-cert, --grpc-tls-key and --grpc-tls-client-ca: a @grpc/grpc-js client with a certificate from the CA is served over mutual TLS, one without is refused; a missing file is named at start', async () => {
  const tlsFile = (name: string) => fileURLToPath(new URL(`../fixtures/tls/${name}`, import.meta.url));
  const cfg = new TempConfig(CONFIG);
  const tls = {
    grpcTlsCert: tlsFile('server.pem'),
    grpcTlsKey: tlsFile('server.key'),
    grpcTlsClientCa: tlsFile('ca.pem'),
  };
  const { svc, logs } = await start(cfg.path, { name: 'memory', settings: {} }, tls);
  const ca = readFileSync(tlsFile('ca.pem'));
  const trusted = rlsClient(
    svc.grpcPort!,
    grpc.credentials.createSsl(ca, readFileSync(tlsFile('client.key')), readFileSync(tlsFile('client.pem'))),
  );
  const anonymous = rlsClient(svc.grpcPort!, grpc.credentials.createSsl(ca));
  try {
    assert.equal((await trusted.call({ domain: 'e2e', descriptors: [d('ldap', 'x')] })).overall_code, 'OK');
    await assert.rejects(
      anonymous.call({ domain: 'e2e', descriptors: [d('ldap', 'x')] }),
      (e: grpc.ServiceError) => e.code === grpc.status.UNAVAILABLE,
    );
    assert.equal(await svc.reload('SIGHUP'), true, 'a reload re-reads the TLS files and the config');
    assert.ok(logs.lines.some((l) => l.msg === 'gRPC TLS files re-read'));
    assert.equal((await trusted.call({ domain: 'e2e', descriptors: [d('ldap', 'x')] })).overall_code, 'OK');
  } finally {
    trusted.close();
    anonymous.close();
    await svc.close();
  }
  await assert.rejects(
    start(cfg.path, { name: 'memory', settings: {} }, { ...tls, grpcTlsKey: '/nonexistent/server.key' }),
    /--grpc-tls-key \/nonexistent\/server\.key: cannot read it: ENOENT/,
  );
  await assert.rejects(
    start(cfg.path, { name: 'memory', settings: {} }, { ...tls, grpcTlsKey: tlsFile('client.key') }),
    /--grpc-tls-cert .* with --grpc-tls-key .*client\.key.*: not a usable certificate, key and CA: /,
  );
  cfg.remove();
});
