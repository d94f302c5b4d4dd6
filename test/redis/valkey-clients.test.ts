// RedisStore and the guard's Redis state through Valkey's Node clients, iovalkey (an ioredis fork) and
// valkey-glide (GlideClient, GlideClusterClient), on the shared standalone server and on a Redis Cluster
// this file starts (Valkey speaks the same protocol): the store, ban and guard conformance suites
// unchanged, the adapter's byte-exact values() and create(), and NOSCRIPT and a missing function reloaded
// once through glide (on a cluster on every master), whose errors do not carry the server's codes as
// ioredis's do.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { GlideClient, GlideClusterClient, Logger } from '@valkey/valkey-glide';
import { Cluster as ValkeyCluster, Redis as Valkey } from 'iovalkey';
import { Limiter } from '../../packages/sluice/src/index.js';
import { Guard, type RedisGuardState } from '../../packages/guard/src/index.js';
import { RedisStore } from '../../packages/sluice/src/stores/redis/index.js';
import { adapt, redisCommand } from '../../packages/sluice/src/stores/redis/adapter.js';
import { RedisSpentStore } from '../../packages/pow/src/index.js';
import { storeConformance } from '../../packages/sluice/test/contracts/store-conformance.js';
import { banConformance } from '../../packages/sluice/test/contracts/ban-conformance.js';
import { guardConformance } from '../../packages/guard/test/contracts/guard-conformance.js';
import { freePort, OwnRedis, redisUrl, runPrefix, useCluster } from '../../packages/testing/src/harness.js';

// glide logs every server error reply (a NOSCRIPT included) at WARN to the console by default.
Logger.setLoggerConfig('error');

const base = runPrefix('valkey-clients');
let n = 0;
const fresh = () => `${base}:${n++}`;
const runs = Number(process.env.CONF_RUNS ?? 15);
const url = new URL(redisUrl());
const address = { host: url.hostname, port: Number(url.port || 6379) };

const clients = {} as {
  iovalkey: Valkey;
  glide: GlideClient;
  iovalkeyCluster: ValkeyCluster;
  glideCluster: GlideClusterClient;
};
const ctx = useCluster();
before(async () => {
  clients.iovalkey = new Valkey(redisUrl(), { maxRetriesPerRequest: 1 });
  clients.glide = await GlideClient.createClient({ addresses: [address], requestTimeout: 2000 });
  const nodes = ctx.cluster.ports.map((port) => ({ host: '127.0.0.1', port }));
  clients.iovalkeyCluster = new ValkeyCluster(nodes, { redisOptions: { maxRetriesPerRequest: 1 } });
  clients.iovalkeyCluster.on('error', () => {});
  clients.glideCluster = await GlideClusterClient.createClient({ addresses: nodes, requestTimeout: 2000 });
});
after(async () => {
  for (const k of await clients.iovalkey.keys(`${base}:*`)) await clients.iovalkey.unlink(k);
  clients.iovalkey.disconnect();
  clients.iovalkeyCluster.disconnect();
  clients.glide.close();
  clients.glideCluster.close();
});

type Name = keyof typeof clients;
const store = (name: Name, onError: 'closed' | 'open' = 'closed') =>
  new RedisStore({ client: clients[name], prefix: fresh(), clock: 'client', timeoutMs: 2000, onError });

for (const name of ['iovalkey', 'glide', 'iovalkeyCluster', 'glideCluster'] as const) {
  storeConformance(`redis (${name})`, () => store(name), { runs });
  banConformance(`redis (${name})`, () => store(name), runs);
  guardConformance(`guard on redis (${name})`, { makeStore: () => store(name) });
}

test('the adapter tells Valkey clients apart: iovalkey as ioredis, glide as glide, cluster or not', () => {
  assert.deepEqual(
    (['iovalkey', 'glide', 'iovalkeyCluster', 'glideCluster'] as const).map((name) => [
      name,
      adapt(clients[name]).kind,
      adapt(clients[name]).cluster,
      adapt(clients[name]).functions !== undefined,
    ]),
    [
      ['iovalkey', 'ioredis', false, true],
      ['glide', 'glide', false, true],
      ['iovalkeyCluster', 'ioredis', true, true],
      ['glideCluster', 'glide', true, true],
    ],
  );
});

const BYTES = Uint8Array.from({ length: 256 }, (_, i) => 255 - i);

test('plain commands (SET NX of bytes, MGET as bytes) are byte-exact through iovalkey and glide, standalone and cluster', async () => {
  const SET = redisCommand('SET');
  const MGET_BYTES = redisCommand('MGET', { readonly: true, bytes: true });
  for (const name of ['iovalkey', 'glide', 'iovalkeyCluster', 'glideCluster'] as const) {
    const reader = name.endsWith('Cluster') ? ctx.io : clients.iovalkey;
    const key = `${base}:{${name}}:bytes`;
    const adapter = adapt(clients[name]);
    assert.equal(
      await adapter.command(SET, [key], [Buffer.from(BYTES), 'PX', '60000', 'NX']),
      'OK',
      `${name}: created`,
    );
    assert.equal(
      await adapter.command(SET, [key], ['other', 'PX', '60000', 'NX']),
      null,
      `${name}: a second create refused`,
    );
    assert.deepEqual([...(await reader.getBuffer(key))!], [...BYTES], `${name}: every byte written as itself`);
    const ttl = await reader.pttl(key);
    assert.ok(ttl > 50_000 && ttl <= 60_000, `${name}: PX set, got ${ttl}`);
    const values = (await adapter.command(MGET_BYTES, [key, `${base}:{${name}}:none`], [])) as (Uint8Array | null)[];
    assert.deepEqual(
      values.map((v) => (v === null ? null : [...v])),
      [[...BYTES], null],
      `${name}: every byte back, no value as null`,
    );
  }
});

test('glide: NOSCRIPT and a missing function are reloaded once and the call retried, standalone and cluster', async () => {
  // A server of its own, so flushing its scripts and functions touches nobody else's.
  const own = new OwnRedis(await freePort());
  await own.start();
  const glide = await GlideClient.createClient({
    addresses: [{ host: '127.0.0.1', port: own.port }],
    requestTimeout: 2000,
  });
  try {
    const s = new RedisStore({ client: glide, prefix: fresh(), onError: 'closed', timeoutMs: 2000 });
    const l = new Limiter({ policy: { name: 'g', algorithm: 'gcra', limit: 5, window: '1h' }, store: s });
    assert.equal((await l.limit('a')).remaining, 4);
    assert.equal(s.stats.reloads, 1, 'the first call found its library missing and loaded it');
    await glide.customCommand(['FUNCTION', 'FLUSH']);
    await glide.customCommand(['SCRIPT', 'FLUSH']);
    assert.equal((await l.limit('a')).remaining, 3);
    assert.deepEqual([s.stats.reloads, s.stats.errors], [2, 0]);
  } finally {
    glide.close();
    await own.destroy();
  }
  // On a cluster, library scripts go as FCALL too, each routed by its key to its master, and the first
  // call that finds its library missing loads it on every master.
  const s = new RedisStore({ client: clients.glideCluster, prefix: fresh(), onError: 'closed', timeoutMs: 2000 });
  const l = new Limiter({ policy: { name: 'fresh-on-cluster', algorithm: 'gcra', limit: 5, window: '1h' }, store: s });
  const masters = ctx.io.nodes('master');
  await Promise.all(masters.map(async (m) => [await m.call('FUNCTION', 'FLUSH'), await m.call('CONFIG', 'RESETSTAT')]));
  const ds = await Promise.all(Array.from({ length: 30 }, (_, i) => l.limit(`id-${i}`)));
  assert.deepEqual(new Set(ds.map((d) => [d.remaining, d.reason].join())), new Set(['4,']));
  assert.ok(s.stats.reloads >= 1, `reloads ${s.stats.reloads}`);
  assert.equal(s.stats.errors, 0);
  for (const m of masters) {
    const stats = await m.info('commandstats');
    assert.match(stats, /^cmdstat_fcall:calls=[1-9]/m, 'FCALL on every master');
    assert.doesNotMatch(stats, /^cmdstat_evalsha:/m, 'no EVALSHA');
    assert.equal(((await m.call('FUNCTION', 'LIST')) as unknown[]).length, 1, 'the library on every master');
  }
});

test('a glide server error that is not NOSCRIPT goes to the failure policy, with its text, and is not retried', async () => {
  const s = new RedisStore({ client: clients.glide, prefix: fresh(), onError: 'closed', timeoutMs: 2000 });
  const key = `${s.prefix}:{a}:p`;
  await clients.iovalkey.rpush(key, 'not the state'); // a list where the script reads a string: WRONGTYPE
  const l = new Limiter({ policy: { name: 'p', algorithm: 'gcra', limit: 5, window: '1h' }, store: s });
  assert.equal((await l.limit('b')).reason, undefined); // the script (or library) loaded, if it was not
  const reloads = s.stats.reloads;
  const d = await l.limit('a');
  assert.equal(d.reason, 'store-error');
  assert.deepEqual([s.stats.errors, s.stats.reloads - reloads], [1, 0]);
});

test('the guard takes its Redis state from a RedisStore on glide and iovalkey clusters, each call on one slot', async () => {
  for (const name of ['iovalkeyCluster', 'glideCluster'] as const) {
    const guard = new Guard({ secret: 'valkey-secret-0123456789abcdef', store: store(name) });
    for (let i = 0; i < 10; i++) await guard.record({ account: `user${i}`, ip: `198.51.${i}.7`, success: false });
    const state = guard.state as RedisGuardState;
    assert.equal(state.stats.fallbacks, 0, name);
    assert.equal((await guard.check({ account: 'user0', ip: '198.51.0.7' })).action, 'allow', name);
  }
});

test("RedisSpentStore spends once through glide and iovalkey (one script on Redis's clock, in each client)", async () => {
  for (const name of ['iovalkey', 'glide'] as const) {
    const spent = new RedisSpentStore({ client: clients[name] as never, prefix: `${fresh()}:`, logger: false });
    const expiresAt = Date.now() + 120_000;
    assert.deepEqual(
      [await spent.spend('c1', expiresAt), await spent.spend('c1', expiresAt), await spent.spend('c2', 60_000)],
      [true, false, 'expired'],
      name,
    );
  }
});
