// `sluice serve --region --region-peers`: three services in three regions (a redis-server each, every link
// between regions through an 80 ms DelayProxy) share one limit per descriptor: what one region admitted is
// counted against the others once their exchange has carried it, and each decides on its own Redis.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { post, start, TempConfig } from '../integration/serve-helpers.js';
import { World } from '../../../testing/src/regions-kit.js';
import { readSettings } from '../../src/server/config/settings.js';

const CONFIG = `domain: api
descriptors:
  - key: user
    rate_limit: { unit: hour, requests_per_unit: 30 }
`;
const NAMES = ['eu', 'us', 'ap'];
const world = new World(NAMES, 80);
const cfg = new TempConfig(CONFIG);
before(() => world.start());
after(async () => {
  await world.stop();
  cfg.remove();
});

test('three sluice serve in three regions keep one limit per descriptor', async () => {
  const prefix = `sluice-serve-regions-${process.pid}`;
  const services = await Promise.all(
    NAMES.map((name, i) => {
      const peers = NAMES.filter((n) => n !== name)
        .map((n) => `${n}=redis://127.0.0.1:${world.links.get(`${name}>${n}`)!.port}`)
        .join(',');
      const settings = {
        redis: `redis://127.0.0.1:${world.servers[i]!.port}`,
        redisPrefix: prefix,
        redisTimeoutMs: 1000,
        grpcPort: -1,
        region: name,
        regionPeers: peers,
        regionExchangeMs: 20,
      };
      return start(cfg.path, { name, settings }).then((s) => s.svc);
    }),
  );
  const check = (i: number) =>
    post(services[i]!.httpPort, '/v1/check', { domain: 'api', descriptors: [{ user: 'ann' }] }).then((r) => r.status);
  try {
    // 10 in each region: 30 in all, the whole limit.
    for (let i = 0; i < 3; i++) for (let n = 0; n < 10; n++) assert.equal(await check(i), 200);
    // Once the exchange has carried the counts (20 ms + 80 ms each way, with room for a loaded host),
    // every region knows the limit is spent.
    await new Promise((r) => setTimeout(r, 1500));
    assert.deepEqual(await Promise.all([check(0), check(1), check(2)]), [429, 429, 429]);
  } finally {
    await Promise.all(services.map((s) => s.close()));
  }
});

test('regression: a rule regions cannot keep is refused at start, naming its algorithm, and closes the Redis clients it opened (the test process could not exit)', async () => {
  const gcra = new TempConfig(`domain: api
descriptors:
  - key: user
    rate_limit: { unit: second, requests_per_unit: 5, algorithm: gcra }
`);
  const peers = `us=redis://127.0.0.1:${world.links.get('eu>us')!.port},ap=redis://127.0.0.1:${world.links.get('eu>ap')!.port}`;
  const settings = {
    redis: `redis://127.0.0.1:${world.servers[0]!.port}`,
    redisPrefix: `sluice-serve-regions-gcra-${process.pid}`,
    grpcPort: -1,
    region: 'eu',
    regionPeers: peers,
  };
  try {
    await assert.rejects(
      start(gcra.path, { name: 'gcra', settings }),
      /strategy 'regions' cannot keep policy .*\(algorithm "gcra"\) across regions/,
    );
  } finally {
    gcra.remove();
  }
});

test('--region and --region-peers go together, with --redis', () => {
  const peers = 'us=redis://10.0.0.2:6379,ap=rediss://10.0.0.3:6380';
  const s = readSettings(
    ['--config', 'x.yaml', '--redis', 'redis://a:6379', '--region', 'eu', '--region-peers', peers],
    {},
  );
  assert.deepEqual([s.region, s.regionPeers, s.regionExchangeMs], ['eu', peers, 100]);
  assert.throws(
    () => readSettings(['--config', 'x.yaml', '--redis', 'redis://a:6379', '--region', 'eu'], {}),
    /--region and --region-peers go together; only --region was given/,
  );
  assert.throws(
    () => readSettings(['--config', 'x.yaml', '--region', 'eu', '--region-peers', peers], {}),
    /--region needs --redis or --redis-cluster/,
  );
  const cluster = readSettings(
    ['--config', 'x.yaml', '--redis-cluster', 'a:7000,b:7001', '--region', 'eu', '--region-peers', peers],
    {},
  );
  assert.equal(cluster.region, 'eu');
  assert.throws(
    () =>
      readSettings(['--config', 'x.yaml', '--redis', 'redis://a', '--region', 'eu', '--region-peers', 'us:6379'], {}),
    /--region-peers must be name=redis:\/\/host:port/,
  );
  assert.throws(
    () => readSettings(['--config', 'x.yaml', '--redis', 'redis://a', '--region', 'e u', '--region-peers', peers], {}),
    /--region must be a region name/,
  );
});
