// `sluice serve --redis-per-second` (Envoy ratelimit's REDIS_PERSECOND): two redis-servers of this file's
// own on spare ports. A rule of unit second keeps its keys on the per-second Redis and every other rule on
// the main one; each is decided there; and the service is ready only while both answer.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { freePort, OwnRedis } from '../../../testing/src/harness.js';
import { post, start, TempConfig } from '../integration/serve-helpers.js';

// GCRA (a sluice extension) on the per-second rule: two back to back, the third refused until 0.5 s has
// passed, so the test does not depend on where a fixed window's second boundary falls.
const CONFIG = `domain: api
descriptors:
  - key: user
    rate_limit: { unit: second, requests_per_unit: 2, algorithm: gcra, burst: 2 }
  - key: ip
    rate_limit: { unit: hour, requests_per_unit: 2 }
`;

const keysOn = (port: number, prefix: string) =>
  execFileSync('redis-cli', ['-p', String(port), '--scan', '--pattern', `${prefix}*`], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .filter(Boolean);

describe('sluice serve --redis-per-second', () => {
  let main: OwnRedis;
  let perSecond: OwnRedis;
  const cfg = new TempConfig(CONFIG);
  before(async () => {
    main = new OwnRedis(await freePort());
    perSecond = new OwnRedis(await freePort());
    await main.start();
    await perSecond.start();
  });
  after(async () => {
    await main.destroy();
    await perSecond.destroy();
    cfg.remove();
  });

  test('per-second rules decide on their own Redis, the others on the main one; not ready while either is down', async () => {
    const prefix = `sluice-per-second-${process.pid}`;
    const settings = {
      redis: `redis://127.0.0.1:${main.port}`,
      redisPerSecond: `redis://127.0.0.1:${perSecond.port}`,
      redisPrefix: prefix,
      failureMode: 'closed' as const,
      redisTimeoutMs: 1000,
      grpcPort: -1,
    };
    const { svc } = await start(cfg.path, { name: 'per-second', settings });
    const check = (descriptor: Record<string, string>) =>
      post(svc.httpPort, '/v1/check', { domain: 'api', descriptors: [descriptor] }).then((r) => r.status);
    try {
      assert.equal((await fetch(`http://127.0.0.1:${svc.httpPort}/readyz`)).status, 200);
      assert.deepEqual(
        [await check({ user: 'ann' }), await check({ user: 'ann' }), await check({ user: 'ann' })],
        [200, 200, 429],
        'the per-second rule',
      );
      assert.deepEqual(
        [await check({ ip: '10.0.0.1' }), await check({ ip: '10.0.0.1' }), await check({ ip: '10.0.0.1' })],
        [200, 200, 429],
        'the hourly rule',
      );
      const onPerSecond = keysOn(perSecond.port, prefix);
      const onMain = keysOn(main.port, prefix);
      assert.ok(
        onPerSecond.length > 0 && onPerSecond.every((k) => k.includes('api.user') && !k.includes('api.ip')),
        `per-second Redis holds the per-second rule only: ${onPerSecond}`,
      );
      assert.ok(
        onMain.length > 0 && onMain.every((k) => k.includes('api.ip') && !k.includes('api.user')),
        `main Redis holds the hourly rule only: ${onMain}`,
      );

      await perSecond.stop();
      assert.equal(
        (await fetch(`http://127.0.0.1:${svc.httpPort}/readyz`)).status,
        503,
        'not ready without the per-second Redis',
      );
      assert.equal(await check({ user: 'bob' }), 429, 'the per-second rule fails closed');
      assert.equal(await check({ ip: '10.0.0.2' }), 200, 'the hourly rule still decides on the main Redis');
    } finally {
      await svc.close();
    }
  });
});
