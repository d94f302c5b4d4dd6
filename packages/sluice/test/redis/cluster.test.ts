// RedisStore on a Redis Cluster this test starts itself (3 masters + 3 replicas on spare ports, torn down
// afterwards): the conformance suite unchanged through ioredis's Cluster and node-redis's cluster, keys of
// every identity in one slot (no CROSSSLOT), and a master killed under load.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import { Cluster, Redis } from 'ioredis';
import { Limiter } from '../../src/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { escapeId, keyOf, slotOf } from '../../src/stores/redis/keys.js';
import { storeConformance } from '../contracts/store-conformance.js';
import { banConformance } from '../contracts/ban-conformance.js';
import { calendarConformance } from '../contracts/calendar-conformance.js';
import { overrideConformance, overrideSeveralConformance } from '../contracts/override-conformance.js';
import { severalFixedConformance } from '../contracts/several-conformance.js';
import { runPrefix, useCluster } from '../../../testing/src/harness.js';

const ctx = useCluster();
const cluster = ctx.cluster;
const prefix = runPrefix('cluster');

const runs = Number(process.env.CONF_RUNS ?? 15);
storeConformance(
  'redis cluster (ioredis)',
  () => new RedisStore({ client: ctx.io, prefix, clock: 'client', timeoutMs: 2000 }),
  { runs },
);
overrideConformance(
  'redis cluster (ioredis)',
  () => new RedisStore({ client: ctx.io, prefix, clock: 'client', timeoutMs: 2000 }),
  runs,
);
banConformance(
  'redis cluster (ioredis)',
  () => new RedisStore({ client: ctx.io, prefix, clock: 'client', timeoutMs: 2000 }),
  runs,
);
calendarConformance(
  'redis cluster (ioredis)',
  () => new RedisStore({ client: ctx.io, prefix, clock: 'client', timeoutMs: 2000 }),
  10,
);
overrideSeveralConformance(
  'redis cluster (ioredis)',
  () => new RedisStore({ client: ctx.io, prefix, clock: 'client', timeoutMs: 2000 }),
);
severalFixedConformance(
  'redis cluster (ioredis)',
  () => new RedisStore({ client: ctx.io, prefix, clock: 'client', timeoutMs: 2000 }),
);
storeConformance(
  'redis cluster (node-redis)',
  () => new RedisStore({ client: ctx.nr, prefix, clock: 'client', timeoutMs: 2000 }),
  { runs },
);

test('redis cluster: the slot computed for a key is the one the cluster computes', async () => {
  for (const id of ['user:42', 'ключ', '🔑', 'a{b}c', '}{', '\\', 'x'.repeat(300)]) {
    const e = escapeId(id);
    assert.equal(slotOf(e), await ctx.io.cluster('KEYSLOT', keyOf(prefix, e, 'p')), id);
  }
});

test('redis cluster: one batch spans many slots, each decided exactly', async () => {
  const store = new RedisStore({ client: ctx.io, prefix, timeoutMs: 2000, onError: 'closed' });
  const l = new Limiter({
    policies: [
      { name: 'a', algorithm: 'gcra', limit: 2, window: '1h' },
      { name: 'b', algorithm: 'sliding-log', limit: 3, window: '1h' },
    ],
    store,
  });
  const keys = Array.from({ length: 200 }, (_, i) => `slots:${i}:{${i}}`);
  const first = await Promise.all(keys.flatMap((k) => [l.limit(k), l.limit(k), l.limit(k)]));
  assert.equal(first.filter((d) => d.reason !== undefined).length, 0);
  assert.deepEqual(
    first.map((d) => d.allowed),
    keys.flatMap(() => [true, true, false]),
  );
});

for (const [name, client] of [
  ['ioredis', () => ctx.io],
  ['node-redis', () => ctx.nr],
] as const) {
  test(`redis cluster (${name}): a turn's decisions on keys of many slots go as one call per master, each decided exactly`, async () => {
    // By slot, 300 keys of 300 slots were 300 script calls of one decision each (issue 40).
    const store = new RedisStore({ client: client(), prefix, timeoutMs: 2000, onError: 'closed' });
    const l = new Limiter({ policy: { name: 'p', algorithm: 'gcra', limit: 2, window: '1h' }, store });
    const keys = Array.from({ length: 300 }, (_, i) => `bynode:${name}:${i}`);
    const slots = new Set(keys.map((k) => slotOf(escapeId(k))));
    assert.ok(slots.size > 250, `${slots.size} slots`);
    const decided = await Promise.all(keys.flatMap((k) => [l.limit(k), l.limit(k), l.limit(k)]));
    assert.equal(decided.filter((d) => d.reason !== undefined).length, 0);
    assert.deepEqual(
      decided.map((d) => d.allowed),
      keys.flatMap(() => [true, true, false]),
    );
    // 900 operations on 3 masters, at most 64 a call: 15 calls, whatever the split.
    assert.ok(store.stats.calls <= 18, `${store.stats.calls} calls`);
    assert.equal(store.stats.errors, 0);
  });
}

test('redis cluster: a call across slots sent on a stale slot map goes again by slot, and nothing is applied twice', async () => {
  // A client whose map says every slot is on one master, as after a resharding it has not seen yet.
  const stale = new Cluster(
    cluster.ports.map((port) => ({ host: '127.0.0.1', port })),
    { redisOptions: { maxRetriesPerRequest: 1 }, slotsRefreshInterval: 3_600_000 },
  );
  stale.on('error', () => {});
  await once(stale, 'ready');
  try {
    const slotsMap = (stale as unknown as { slots: string[][] }).slots;
    const one = slotsMap[0]!;
    for (let s = 0; s < slotsMap.length; s++) slotsMap[s] = one;
    const store = new RedisStore({ client: stale, prefix, timeoutMs: 2000, onError: 'closed' });
    const l = new Limiter({ policy: { name: 'p', algorithm: 'fixed-window', limit: 2, window: '1h' }, store });
    const keys = Array.from({ length: 60 }, (_, i) => `stale:${i}`);
    const decided = await Promise.all(keys.flatMap((k) => [l.limit(k), l.limit(k), l.limit(k)]));
    assert.equal(decided.filter((d) => d.reason !== undefined).length, 0, 'no decision from the failure policy');
    assert.deepEqual(
      decided.map((d) => d.allowed),
      keys.flatMap(() => [true, true, false]),
    );
    assert.ok(store.stats.errors >= 1, 'the call across slots was refused and sent again');
    assert.equal(store.stats.fallbacks, 0);
    const after = await Promise.all(keys.map((k) => l.get(k)));
    assert.deepEqual(
      after.map((d) => d.remaining),
      keys.map(() => 0),
    );
  } finally {
    stale.disconnect();
  }
});

/** Each master's commands since the last CONFIG RESETSTAT, by name (INFO commandstats: calls inside scripts too). */
async function commandsByMaster(): Promise<Array<Record<string, number>>> {
  return Promise.all(
    ctx.io.nodes('master').map(async (node) => {
      const calls: Record<string, number> = {};
      for (const m of (await node.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
        calls[m[1]!] = Number(m[2]);
      return calls;
    }),
  );
}

/** The names of the function libraries on each master. */
async function librariesByMaster(): Promise<string[][]> {
  return Promise.all(
    ctx.io
      .nodes('master')
      .map(async (node) => ((await node.call('FUNCTION', 'LIST')) as unknown[][]).map((lib) => String(lib[1])).sort()),
  );
}

const onEveryMaster = (command: string) =>
  Promise.all(ctx.io.nodes('master').map((node) => node.call(...(command.split(' ') as [string, ...string[]]))));

for (const [name, client] of [
  ['ioredis', () => ctx.io],
  ['node-redis', () => ctx.nr],
] as const) {
  test(`redis cluster (${name}): decisions go as FCALL, the library is loaded on every master, and a master that lost it (FUNCTION FLUSH) gets it back`, async () => {
    await onEveryMaster('FUNCTION FLUSH');
    await onEveryMaster('CONFIG RESETSTAT');
    const store = new RedisStore({ client: client(), prefix, timeoutMs: 2000, onError: 'closed' });
    const l = new Limiter({ policy: { name: 'p', algorithm: 'gcra', limit: 2, window: '1h' }, store });
    const decideAll = async (keys: string[]) => {
      const decided = await Promise.all(keys.flatMap((k) => [l.limit(k), l.limit(k), l.limit(k)]));
      assert.deepEqual(
        decided.map((d) => d.reason ?? d.allowed),
        keys.flatMap(() => [true, true, false]),
      );
    };
    // Keys of many slots, so every master decides some (calls across slots included).
    await decideAll(Array.from({ length: 300 }, (_, i) => `fcall:${name}:${i}`));
    const libraries = await librariesByMaster();
    assert.equal(libraries.length, 3);
    assert.equal(libraries[0]!.length, 1, "one library, this store's");
    assert.match(libraries[0]![0]!, /^sluice_/);
    assert.deepEqual(libraries, [libraries[0], libraries[0], libraries[0]], 'the same library on every master');
    for (const calls of await commandsByMaster()) {
      assert.ok((calls.fcall ?? 0) > 0, `FCALL on every master: ${JSON.stringify(calls)}`);
      assert.equal(calls.evalsha ?? 0, 0, 'no EVALSHA');
      assert.equal(calls.eval ?? 0, 0, 'no EVAL');
    }
    assert.ok(store.stats.reloads >= 1, 'the first calls found the library missing');
    assert.deepEqual([store.stats.errors, store.stats.fallbacks], [0, 0]);

    // One master loses it: the first call there loads it (everywhere) and is retried, with nothing lost.
    const [flushed] = ctx.io.nodes('master');
    await flushed!.call('FUNCTION', 'FLUSH');
    const reloads = store.stats.reloads;
    await decideAll(Array.from({ length: 300 }, (_, i) => `fcall-flushed:${name}:${i}`));
    assert.ok(store.stats.reloads > reloads, 'reloaded');
    assert.deepEqual(await librariesByMaster(), libraries, 'the flushed master has the library again');
    assert.deepEqual([store.stats.errors, store.stats.fallbacks], [0, 0]);
  });
}

test('redis cluster: a user whose ACL refuses FCALL and FUNCTION gets EVALSHA, with the same decisions', async () => {
  const user = `nofunctions${process.pid}`;
  const nodes = cluster.ports.map((port) => new Redis({ host: '127.0.0.1', port }));
  await Promise.all(
    nodes.map((node) =>
      node.call('ACL', 'SETUSER', user, 'reset', 'on', 'nopass', '~*', '&*', '+@all', '-fcall', '-function'),
    ),
  );
  const refused = new Cluster(
    cluster.ports.map((port) => ({ host: '127.0.0.1', port })),
    { redisOptions: { username: user, password: 'any', maxRetriesPerRequest: 1 } },
  );
  refused.on('error', () => {});
  try {
    await once(refused, 'ready');
    await onEveryMaster('CONFIG RESETSTAT');
    const store = new RedisStore({ client: refused, prefix, timeoutMs: 2000, onError: 'closed' });
    const l = new Limiter({ policy: { name: 'p', algorithm: 'fixed-window', limit: 2, window: '1h' }, store });
    const keys = Array.from({ length: 100 }, (_, i) => `noperm:${i}`);
    for (let round = 0; round < 2; round++) {
      const decided = await Promise.all(keys.flatMap((k) => [l.limit(k), l.limit(k), l.limit(k)]));
      assert.deepEqual(
        decided.map((d) => d.reason ?? d.allowed),
        keys.flatMap(() => (round === 0 ? [true, true, false] : [false, false, false])),
      );
    }
    const calls = await commandsByMaster();
    assert.equal(
      calls.reduce((sum, c) => sum + (c.fcall ?? 0), 0),
      0,
      'no FCALL ran',
    );
    assert.ok(
      calls.every((c) => (c.evalsha ?? 0) > 0),
      `EVALSHA on every master: ${JSON.stringify(calls)}`,
    );
    assert.deepEqual([store.stats.errors, store.stats.fallbacks], [0, 0]);
  } finally {
    refused.disconnect();
    await Promise.all(nodes.map((node) => node.call('ACL', 'DELUSER', user)));
    for (const node of nodes) node.disconnect();
  }
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
  assert.ok(
    decided > atKill,
    `decisions kept flowing while the master was down (${atKill} before, ${decided} after, ${fellBack} fell back, stats ${JSON.stringify(store.stats)})`,
  );
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
