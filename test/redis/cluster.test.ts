// RedisStore on a Redis Cluster this test starts itself (3 masters + 3 replicas on spare ports, torn down
// afterwards): the conformance suite unchanged through ioredis's Cluster and node-redis's cluster, keys of
// every identity in one slot (no CROSSSLOT), and a master killed under load.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Limiter } from '../../src/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { escapeId, keyOf, slotOf } from '../../src/stores/redis/keys.js';
import { storeConformance } from '../contracts/store-conformance.js';
import { banConformance } from '../contracts/ban-conformance.js';
import { calendarConformance } from '../contracts/calendar-conformance.js';
import { overrideConformance, overrideSeveralConformance } from '../contracts/override-conformance.js';
import { runPrefix, useCluster } from './harness.js';

const ctx = useCluster();
const cluster = ctx.cluster;
const prefix = runPrefix('cluster');


const runs = Number(process.env.CONF_RUNS ?? 15);
storeConformance('redis cluster (ioredis)', () => new RedisStore({ client: ctx.io, prefix, clock: 'client', timeoutMs: 2000 }), { runs });
overrideConformance('redis cluster (ioredis)', () => new RedisStore({ client: ctx.io, prefix, clock: 'client', timeoutMs: 2000 }), runs);
banConformance('redis cluster (ioredis)', () => new RedisStore({ client: ctx.io, prefix, clock: 'client', timeoutMs: 2000 }), runs);
calendarConformance('redis cluster (ioredis)', () => new RedisStore({ client: ctx.io, prefix, clock: 'client', timeoutMs: 2000 }), 10);
overrideSeveralConformance('redis cluster (ioredis)', () => new RedisStore({ client: ctx.io, prefix, clock: 'client', timeoutMs: 2000 }));
storeConformance('redis cluster (node-redis)', () => new RedisStore({ client: ctx.nr, prefix, clock: 'client', timeoutMs: 2000 }), { runs });

test('redis cluster: the slot computed for a key is the one the cluster computes', async () => {
  for (const id of ['user:42', 'ключ', '🔑', 'a{b}c', '}{', '\\', 'x'.repeat(300)]) {
    const e = escapeId(id);
    assert.equal(slotOf(e), await ctx.io.cluster('KEYSLOT', keyOf(prefix, e, 'p')), id);
  }
});

test('redis cluster: one batch spans many slots, each decided exactly', async () => {
  const store = new RedisStore({ client: ctx.io, prefix, timeoutMs: 2000, onError: 'closed' });
  const l = new Limiter({ policies: [{ name: 'a', algorithm: 'gcra', limit: 2, window: '1h' }, { name: 'b', algorithm: 'sliding-log', limit: 3, window: '1h' }], store });
  const keys = Array.from({ length: 200 }, (_, i) => `slots:${i}:{${i}}`);
  const first = await Promise.all(keys.flatMap((k) => [l.limit(k), l.limit(k), l.limit(k)]));
  assert.equal(first.filter((d) => d.reason !== undefined).length, 0);
  assert.deepEqual(first.map((d) => d.allowed), keys.flatMap(() => [true, true, false]));
});

test('redis cluster: a master killed under load; deciding goes on through the failover', async () => {
  const store = new RedisStore({ client: ctx.io, prefix, timeoutMs: 100, onError: 'open' });
  const l = new Limiter({ policy: { name: 'p', algorithm: 'token-bucket', limit: 1_000_000, window: '1h' }, store });
  let decided = 0;
  let fellBack = 0;
  let slowest = 0;
  let stop = false;
  const loop = async (w: number) => {
    for (let i = 0; !stop; i++) {
      const t = performance.now();
      const d = await l.limit(`load:${w}:${i % 500}`);
      slowest = Math.max(slowest, performance.now() - t);
      decided++;
      if (d.reason !== undefined) fellBack++;
      if (d.reason !== undefined) await new Promise((r) => setTimeout(r, 5)); // a client backing off
    }
  };
  const loops = Array.from({ length: 16 }, (_, w) => loop(w));
  let atKill = 0;
  try {
    await new Promise((r) => setTimeout(r, 300));
    const victim = cluster.nodes.find((n) => n.port === cluster.masters()[0])!;
    await victim.stop();
    atKill = decided;
    await cluster.waitFailover(victim.port, 30_000);
    // After the failover, decisions on keys of every slot come from Redis again.
    const deadline = Date.now() + 20_000;
    for (;;) {
      const probes = await Promise.all(Array.from({ length: 64 }, () => l.limit(`after:${Math.random()}`)));
      if (probes.every((d) => d.reason === undefined)) break;
      assert.ok(Date.now() < deadline, 'decisions came back from Redis after the failover');
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    stop = true;
    await Promise.all(loops);
  }
  assert.ok(decided > atKill, `decisions kept flowing while the master was down (${atKill} before, ${decided} after, ${fellBack} fell back, stats ${JSON.stringify(store.stats)})`);
  assert.ok(fellBack > 0, 'some decisions fell back while the slot had no master');
  assert.ok(slowest < 1000, `no decision waited more than the timeout by far (slowest ${slowest.toFixed(0)} ms)`);
  // And they are exact again.
  const exact = new Limiter({ policy: { name: 'q', algorithm: 'fixed-window', limit: 3, window: '1h' }, store });
  const key = `exact:${Math.random()}`;
  const got = [];
  for (let i = 0; i < 5; i++) {
    const d = await exact.limit(key);
    got.push(d.reason ?? d.allowed);
  }
  assert.deepEqual(got, [true, true, true, false, false]);
});
