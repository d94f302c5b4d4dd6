// `sluice serve` against a Redis that asks for a password and speaks TLS (a managed Redis usually does
// both): a redis-server of this file's own on spare ports, with requirepass, a plain port and a TLS port
// whose certificate a test CA signed (test/fixtures/tls). Two services on the same key share one count,
// which only a shared Redis gives; a wrong password or an untrusted certificate leaves /readyz at 503.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { freePort, OwnRedis } from '../../../testing/src/harness.js';
import { post, start, TempConfig } from '../integration/serve-helpers.js';
import type { Settings } from '../../src/server/config/settings.js';

const tlsFile = (name: string) => fileURLToPath(new URL(`../fixtures/tls/${name}`, import.meta.url));
const PASSWORD = 'test-only-password';
const CONFIG = `domain: api
descriptors:
  - key: user
    rate_limit: { unit: hour, requests_per_unit: 2 }
`;

describe('sluice serve with Redis AUTH and TLS', () => {
  let server: OwnRedis;
  let port: number;
  let tlsPort: number;
  const cfg = new TempConfig(CONFIG);
  before(async () => {
    port = await freePort();
    tlsPort = await freePort();
    const tls = [
      '--tls-port',
      String(tlsPort),
      '--tls-cert-file',
      tlsFile('server.pem'),
      '--tls-key-file',
      tlsFile('server.key'),
      '--tls-ca-cert-file',
      tlsFile('ca.pem'),
      '--tls-auth-clients',
      'no',
    ];
    server = new OwnRedis(port, ['--requirepass', PASSWORD, ...tls], ['-a', PASSWORD, '--no-auth-warning']);
    await server.start();
  });
  after(async () => {
    await server.destroy();
    cfg.remove();
  });

  /** Two services with these settings: the third request for one user is refused by whichever answers it. */
  async function sharedLimit(name: string, settings: Partial<Settings>): Promise<void> {
    const all = {
      redisPrefix: `sluice-auth-tls-${process.pid}-${name}`,
      failureMode: 'closed' as const,
      redisTimeoutMs: 5000,
      grpcPort: -1,
      ...settings,
    };
    const a = await start(cfg.path, { name: `${name} a`, settings: all });
    const b = await start(cfg.path, { name: `${name} b`, settings: all });
    try {
      for (const svc of [a.svc, b.svc])
        assert.equal((await fetch(`http://127.0.0.1:${svc.httpPort}/readyz`)).status, 200, `${name}: ready`);
      const check = (svc: typeof a.svc) =>
        post(svc.httpPort, '/v1/check', { domain: 'api', descriptors: [{ user: 'ann' }] });
      assert.deepEqual(
        [(await check(a.svc)).status, (await check(b.svc)).status, (await check(a.svc)).status],
        [200, 200, 429],
        `${name}: one count across both services`,
      );
    } finally {
      await a.svc.close();
      await b.svc.close();
    }
  }

  test('--redis-password on the plain port', async () => {
    await sharedLimit('auth', { redis: `redis://127.0.0.1:${port}`, redisPassword: PASSWORD });
  });

  test('a password in the URL', async () => {
    await sharedLimit('url', { redis: `redis://:${PASSWORD}@127.0.0.1:${port}` });
  });

  test('--redis-tls-ca with --redis-password on the TLS port: the certificate is checked against that CA', async () => {
    await sharedLimit('tls', {
      redis: `redis://127.0.0.1:${tlsPort}`,
      redisPassword: PASSWORD,
      redisTlsCa: tlsFile('ca.pem'),
    });
  });

  test('a wrong password, or a certificate the system CAs do not know, leaves the service not ready (failure mode closed), never deciding alone', async () => {
    for (const [name, settings] of [
      ['wrong password', { redis: `redis://127.0.0.1:${port}`, redisPassword: 'not-it' }],
      ['untrusted certificate', { redis: `redis://127.0.0.1:${tlsPort}`, redisPassword: PASSWORD, redisTls: true }],
    ] as const) {
      const { svc } = await start(cfg.path, {
        name,
        settings: { failureMode: 'closed', redisConnectTimeoutMs: 300, grpcPort: -1, ...settings },
      });
      try {
        assert.equal((await fetch(`http://127.0.0.1:${svc.httpPort}/readyz`)).status, 503, name);
        assert.equal(
          (await post(svc.httpPort, '/v1/check', { domain: 'api', descriptors: [{ user: 'bob' }] })).status,
          429,
          `${name}: refused, as failing closed says`,
        );
      } finally {
        await svc.close();
      }
    }
  });

  test('a --redis-tls-ca that cannot be read stops the start, naming the setting and the file', async () => {
    await assert.rejects(
      start(cfg.path, {
        name: 'no ca',
        settings: { redis: `redis://127.0.0.1:${tlsPort}`, redisTlsCa: '/nonexistent/ca.pem', grpcPort: -1 },
      }),
      /--redis-tls-ca \/nonexistent\/ca\.pem: cannot read it: ENOENT/,
    );
  });
});
