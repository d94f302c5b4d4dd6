// DurableObjectStore and the Durable Object's engine on Node, over a fake namespace (fake.ts): the
// conformance suite, state across an eviction, expiry by alarm, sharding, concurrent first requests, and
// the options' errors. miniflare.test.ts runs the same store in workerd.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DurableObjectStore } from '../../src/cloudflare/store.js';
import { SWEEP_GAP_MS } from '../../src/cloudflare/engine.js';
import { Limiter, SluiceError } from '../../src/index.js';
import { storeConformance } from '../contracts/store-conformance.js';
import { banConformance } from '../contracts/ban-conformance.js';
import { calendarConformance } from '../contracts/calendar-conformance.js';
import { FakeNamespace } from './fake.js';

const shared = new FakeNamespace();
storeConformance(
  'durable-object (fake namespace)',
  () => new DurableObjectStore({ namespace: shared, clock: 'client' }),
  { runs: 40 },
);
banConformance(
  'durable-object (fake namespace)',
  () => new DurableObjectStore({ namespace: shared, clock: 'client' }),
  30,
);
calendarConformance(
  'durable-object (fake namespace)',
  () => new DurableObjectStore({ namespace: shared, clock: 'client' }),
  30,
  { perCallLimits: false },
);
storeConformance(
  'durable-object, 4 shards (fake namespace)',
  () => new DurableObjectStore({ namespace: shared, shards: 4, clock: 'client' }),
  { runs: 10 },
);

test('durable-object: state survives the eviction of every object', async () => {
  const ns = new FakeNamespace();
  let now = 5_000_000;
  const make = () =>
    new Limiter({
      policies: [
        { name: 'log', algorithm: 'sliding-log', limit: 3, window: '1m' },
        { name: 'tb', algorithm: 'token-bucket', limit: 10, window: '1m' },
      ],
      store: new DurableObjectStore({ namespace: ns, clock: 'client' }),
      clock: () => now,
    });
  const l = make();
  for (let i = 0; i < 3; i++) assert.equal((await l.limit('alice')).allowed, true);
  ns.evictAll();
  const again = make();
  const d = await again.limit('alice');
  assert.deepEqual([d.allowed, d.policy, d.remaining], [false, 'log', 0]);
  now += 60_000;
  assert.equal((await again.limit('alice')).allowed, true);
});

test('durable-object: an alarm deletes idle rows, keeps live ones, and is not set again once none is left', async () => {
  const ns = new FakeNamespace();
  const l = new Limiter({
    policy: { algorithm: 'sliding-log', limit: 5, window: '10s' },
    store: new DurableObjectStore({ namespace: ns, shards: 1 }),
  });
  // The object's own clock ('object'): the fake wall clock.
  await l.limit('a');
  const storage = ns.storages.get('shard:0')!;
  assert.equal(storage.data.size, 1);
  assert.ok(
    storage.alarm !== null && storage.alarm <= ns.wall + 10_000,
    `an alarm by the row's idle time, got ${storage.alarm}`,
  );
  ns.wall += 9_000;
  await l.limit('b'); // idle 10 s after now: 9 s after 'a'
  ns.wall += 1_500; // 'a' is idle, 'b' not
  await ns.fireAlarm('shard:0');
  assert.deepEqual(
    [...storage.data.keys()].map((k) => k.split(':').pop()),
    ['b'],
  );
  assert.ok(storage.alarm! >= ns.wall + SWEEP_GAP_MS, 'the next sweep waits the sweep gap');
  ns.wall = storage.alarm!;
  await ns.fireAlarm('shard:0');
  assert.equal(storage.data.size, 0, 'every row idle: nothing stored');
  assert.equal(storage.alarm, null, 'and no alarm left');
  assert.equal(ns.engine('shard:0').cachedRows, 0);
  assert.equal((await l.get('b')).remaining, 5);
});

test('durable-object: a key changed during a sweep keeps its newer expiry', async () => {
  const ns = new FakeNamespace();
  const l = new Limiter({
    policy: { algorithm: 'gcra', limit: 1, window: '1s' },
    store: new DurableObjectStore({ namespace: ns }),
  });
  await l.limit('k');
  ns.wall += 2_000;
  const sweep = ns.fireAlarm('key:k');
  await l.limit('k'); // lands while the sweep lists
  await sweep;
  assert.equal((await l.limit('k')).allowed, false, 'the fresh state was not swept');
});

test('durable-object: 300 concurrent first requests on one key admit exactly the limit', async () => {
  const ns = new FakeNamespace();
  const l = new Limiter({
    policy: { algorithm: 'sliding-window', limit: 120, window: '1m' },
    store: new DurableObjectStore({ namespace: ns }),
  });
  const ds = await Promise.all(Array.from({ length: 300 }, () => l.limit('hot')));
  assert.equal(ds.filter((d) => d.allowed).length, 120);
  assert.equal(ns.storages.get('key:hot')!.gets, 1, 'one load shared by every request');
});

test('durable-object: one object per key by default, shards by a hash of the key, or named by the caller', () => {
  const ns = new FakeNamespace();
  assert.equal(new DurableObjectStore({ namespace: ns }).nameOf('user:1'), 'key:user:1');
  const sharded = new DurableObjectStore({ namespace: ns, shards: 8 });
  const names = new Set(Array.from({ length: 200 }, (_, i) => sharded.nameOf(`user:${i}`)));
  assert.equal(names.size, 8);
  assert.equal(sharded.nameOf('user:1'), sharded.nameOf('user:1'));
  assert.equal(
    new DurableObjectStore({ namespace: ns, objectName: (k) => k.split(':')[0]! }).nameOf('tenant:42'),
    'tenant',
  );
});

test('durable-object: limiters with different policies on one key keep separate state', async () => {
  const ns = new FakeNamespace();
  const store = new DurableObjectStore({ namespace: ns });
  const a = new Limiter({ policy: { algorithm: 'fixed-window', limit: 1, window: '1m' }, store });
  const b = new Limiter({ policy: { algorithm: 'fixed-window', limit: 2, window: '1m' }, store });
  assert.equal((await a.limit('k')).allowed, true);
  assert.equal((await a.limit('k')).allowed, false);
  assert.equal((await b.limit('k')).remaining, 1);
});

test('durable-object: bad options name the field and the value', () => {
  const ns = new FakeNamespace();
  const code = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      return `${(e as { code: string }).code} ${(e as Error).message}`;
    }
    return 'no error';
  };
  assert.match(
    code(() => new DurableObjectStore({ namespace: {} as never })),
    /ERR_SLUICE_INVALID_OPTION .*'namespace'/,
  );
  assert.match(
    code(() => new DurableObjectStore({ namespace: ns, shards: 0 })),
    /'shards' must be a positive integer, got 0/,
  );
  assert.match(
    code(() => new DurableObjectStore({ namespace: ns, shards: 2, objectName: (k) => k })),
    /not both/,
  );
  assert.match(
    code(() => new DurableObjectStore({ namespace: ns, clock: 'server' as never })),
    /'clock' must be 'object' or 'client', got "server"/,
  );
  assert.match(
    code(() => new DurableObjectStore({ namespace: ns, prefix: 'x' } as never)),
    /unknown option 'prefix'/,
  );
});

test('durable-object: an object that fails rejects with ERR_SLUICE_STORE_UNAVAILABLE naming the object', async () => {
  const broken = {
    idFromName: (n: string) => n,
    get: () => ({
      decide: async () => {
        throw new Error('Durable Object reset because its code was updated');
      },
    }),
  };
  const l = new Limiter({
    policy: { algorithm: 'gcra', limit: 1, window: '1s' },
    store: new DurableObjectStore({ namespace: broken as never }),
  });
  await assert.rejects(
    l.limit('k'),
    (e: { code?: string; message: string }) =>
      e.code === 'ERR_SLUICE_STORE_UNAVAILABLE' &&
      e.message.includes('"key:k"') &&
      e.message.includes('code was updated'),
  );
});

test('durable-object: per-call limits are refused, not ignored', async () => {
  const l = new Limiter({
    policy: { name: 'p', algorithm: 'fixed-window', limit: 5, window: '1m' },
    store: new DurableObjectStore({ namespace: shared, clock: 'client' }),
  });
  await assert.rejects(
    l.limit(`refuse:${Math.random()}`, { limits: { p: 50 } }),
    (e: unknown) =>
      e instanceof SluiceError && e.code === 'ERR_SLUICE_INVALID_OPTION' && /per-call 'limits' need/.test(e.message),
  );
});
