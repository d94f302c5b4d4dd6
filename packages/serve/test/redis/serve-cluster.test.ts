// `sluice serve --redis-cluster` end to end: two service instances share one Redis Cluster that this file
// starts on spare ports (test/redis/harness.ts), so a fleet of services behind a load balancer enforces one
// limit per descriptor, over HTTP and gRPC, whichever instance a request reaches and whichever slot its key
// hashes to.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { redisUrl, useCluster } from '../../../testing/src/harness.js';
import { post, rlsClient, start, TempConfig, untilReady } from '../integration/serve-helpers.js';

const CONFIG = `domain: api
descriptors:
  - key: user
    rate_limit: { unit: hour, requests_per_unit: 5, algorithm: gcra }
  - key: tenant
    descriptors:
      - key: route
        rate_limit: { unit: minute, requests_per_unit: 3 }
`;

describe('sluice serve --redis-cluster: a fleet of two services sharing one Redis Cluster', () => {
  const ctx = useCluster();
  const run = `${process.pid}-${Date.now().toString(36)}`;

  test('each user gets exactly its limit across both instances, for keys in many hash slots', async () => {
    const cfg = new TempConfig(CONFIG);
    const seeds = ctx.cluster.ports
      .slice(0, 2)
      .map((p) => `127.0.0.1:${p}`)
      .join(',');
    // Closed, with a wait no loaded CI machine reaches: a decision that failed open would hide a lost count.
    const settings = {
      redisCluster: seeds,
      redisPrefix: `sluice-serve-cluster-${run}`,
      failureMode: 'closed' as const,
      redisTimeoutMs: 5000,
    };
    const a = await start(cfg.path, { name: 'cluster a', settings }, { grpcPort: -1 });
    const b = await start(cfg.path, { name: 'cluster b', settings }, { grpcPort: -1 });
    try {
      for (const s of [a, b]) await untilReady(s.svc.httpPort);
      // 40 users spread over the cluster's three masters; 8 requests each, alternating between the instances.
      const users = Array.from({ length: 40 }, (_, i) => `u${i}-${run}`);
      const admitted = new Map<string, number>();
      await Promise.all(
        users.map(async (user) => {
          let n = 0;
          for (let i = 0; i < 8; i++) {
            const port = (i % 2 === 0 ? a : b).svc.httpPort;
            const r = await post(port, '/v1/check', { domain: 'api', descriptors: [{ user }] });
            assert.ok(r.status === 200 || r.status === 429, `status ${r.status}`);
            if (r.status === 200) n++;
          }
          admitted.set(user, n);
        }),
      );
      for (const user of users) assert.equal(admitted.get(user), 5, `${user} admitted ${admitted.get(user)}`);
      const ready = await fetch(`http://127.0.0.1:${b.svc.httpPort}/readyz`);
      assert.equal(ready.status, 200);
    } finally {
      await a.svc.close();
      await b.svc.close();
      cfg.remove();
    }
  });

  test('gRPC ShouldRateLimit on one instance and /json on the other count against the same nested rule', async () => {
    const cfg = new TempConfig(CONFIG);
    const settings = {
      redisCluster: `127.0.0.1:${ctx.cluster.ports[2]}`,
      redisPrefix: `sluice-serve-cluster-${run}`,
      failureMode: 'closed' as const,
      redisTimeoutMs: 5000,
    };
    const a = await start(cfg.path, { name: 'cluster grpc', settings }, { grpcPort: 0 });
    const b = await start(cfg.path, { name: 'cluster json', settings }, { grpcPort: -1 });
    const rls = rlsClient(a.svc.grpcPort!);
    try {
      for (const s of [a, b]) await untilReady(s.svc.httpPort);
      const descriptors = [
        {
          entries: [
            { key: 'tenant', value: `t-${run}` },
            { key: 'route', value: '/orders' },
          ],
        },
      ];
      const first = await rls.call({ domain: 'api', descriptors, hits_addend: 2 });
      assert.equal(first.overall_code, 'OK');
      assert.equal(first.statuses[0].limit_remaining, 1);
      const second = await post(b.svc.httpPort, '/json', { domain: 'api', descriptors });
      assert.equal(second.status, 200, JSON.stringify(second.json));
      assert.equal(second.json.statuses[0].limitRemaining ?? 0, 0, 'proto3 JSON leaves a zero out');
      const third = await rls.call({ domain: 'api', descriptors });
      assert.equal(third.overall_code, 'OVER_LIMIT');
    } finally {
      rls.close();
      await a.svc.close();
      await b.svc.close();
      cfg.remove();
    }
  });

  test("Envoy's token-quota pattern on a cluster (issue 49, finding 1): cost-0 checks and debits alternate between two instances, the debit past the limit is counted and the next check refused", async () => {
    // Per hour, so that no window edge falls inside the test.
    const cfg = new TempConfig(
      'domain: api\ndescriptors:\n  - key: tenant\n    descriptors:\n      - key: route\n        rate_limit: { unit: hour, requests_per_unit: 3 }\n',
    );
    const settings = {
      redisCluster: `127.0.0.1:${ctx.cluster.ports[0]}`,
      redisPrefix: `sluice-serve-cluster-quota-${run}`,
      failureMode: 'closed' as const,
      redisTimeoutMs: 5000,
    };
    const a = await start(cfg.path, { name: 'cluster quota a', settings });
    const b = await start(cfg.path, { name: 'cluster quota b', settings });
    const clients = [rlsClient(a.svc.grpcPort!), rlsClient(b.svc.grpcPort!)];
    try {
      for (const s of [a, b]) await untilReady(s.svc.httpPort);
      // Quotas of 3 per hour on keys spread over the cluster's masters: 4 requests pass (the check of the
      // 4th sees 3, not over 3), the 5th check sees 4 > 3.
      const tenants = Array.from({ length: 12 }, (_, i) => `q${i}-${run}`);
      await Promise.all(
        tenants.map(async (tenant, t) => {
          const descriptors = (hits: number) => [
            {
              entries: [
                { key: 'tenant', value: tenant },
                { key: 'route', value: '/tokens' },
              ],
              hits_addend: { value: hits },
            },
          ];
          const served = [];
          for (let i = 0; i < 6; i++) {
            const check = await clients[(i + t) % 2]!.call({ domain: 'api', descriptors: descriptors(0) });
            served.push(check.overall_code === 'OK');
            if (check.overall_code === 'OK')
              await clients[(i + t + 1) % 2]!.call({ domain: 'api', descriptors: descriptors(1) });
          }
          assert.deepEqual(served, [true, true, true, true, false, false], tenant);
        }),
      );
    } finally {
      for (const c of clients) c.close();
      await a.svc.close();
      await b.svc.close();
      cfg.remove();
    }
  });
  test('--region on --redis-cluster: a region whose home is the Cluster decides by slot and pushes to its peer', async () => {
    // One region, eu, on the Cluster; its peer us is the shared Redis, with no service of its own: eu never
    // hears from us, so counts it at its share (15 of 30) and admits the other 15, for users of many slots.
    const cfg = new TempConfig(`domain: api
descriptors:
  - key: user
    rate_limit: { unit: hour, requests_per_unit: 30 }
`);
    const prefix = `sluice-serve-cluster-regions-${run}`;
    const settings = {
      redisCluster: `127.0.0.1:${ctx.cluster.ports[0]}`,
      redisPrefix: prefix,
      failureMode: 'closed' as const,
      redisTimeoutMs: 5000,
      region: 'eu',
      regionPeers: `us=${redisUrl()}`,
      regionExchangeMs: 20,
    };
    const eu = await start(cfg.path, { name: 'cluster eu', settings }, { grpcPort: -1 });
    const us = new Redis(redisUrl());
    try {
      await untilReady(eu.svc.httpPort);
      const users = Array.from({ length: 10 }, (_, i) => `r${i}-${run}`);
      for (const user of users) {
        let n = 0;
        for (let i = 0; i < 20; i++) {
          const r = await post(eu.svc.httpPort, '/v1/check', { domain: 'api', descriptors: [{ user }] });
          assert.ok(r.status === 200 || r.status === 429, `status ${r.status}`);
          if (r.status === 200) n++;
        }
        assert.equal(n, 15, `${user} admitted ${n}`);
      }
      // eu's counts reach us's Redis: a push from a Cluster home to a single-server peer.
      const end = Date.now() + 5000;
      let counts: string[] = [];
      while (Date.now() < end) {
        const keys = await us.keys(`${prefix}:*:rg`);
        counts = (await Promise.all(keys.map((k) => us.hgetall(k)))).map(
          (h) => Object.entries(h).find(([f]) => f.endsWith(':eu'))?.[1] ?? '',
        );
        if (counts.length === users.length && counts.every((c) => c === '15')) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.deepEqual(
        counts,
        users.map(() => '15'),
      );
    } finally {
      await eu.svc.close();
      const keys = await us.keys(`${prefix}:*`);
      if (keys.length > 0) await us.del(...keys);
      us.disconnect();
      cfg.remove();
    }
  });
});
