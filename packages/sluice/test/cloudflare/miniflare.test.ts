// DurableObjectStore in workerd through Miniflare: the conformance suite inside a Worker, several hundred
// concurrent requests on one key for every algorithm, and state that outlives the objects (a restart of
// the runtime on the same persisted storage).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { Miniflare } from 'miniflare';
import { bundleForRuntimes } from '../../../../test/runtimes/bundle.js';

const root = resolve(import.meta.dirname, '../..');
const work = mkdtempSync(join(tmpdir(), 'sluice-miniflare-'));

function start(persist?: string): Miniflare {
  return new Miniflare({
    modules: true,
    scriptPath: join(work, 'worker.mjs'),
    modulesRoot: work,
    compatibilityDate: '2025-04-01',
    durableObjects: { SLUICE: { className: 'SluiceDurableObject', useSQLite: true } },
    ...(persist === undefined ? {} : { durableObjectsPersist: persist }),
  });
}

let mf: Miniflare;
before(async () => {
  await bundleForRuntimes(join(root, 'test/cloudflare/worker.ts'), join(work, 'worker.mjs'));
  mf = start();
});
after(async () => {
  await mf?.dispose();
  rmSync(work, { recursive: true, force: true });
});

test('durable-object in workerd: the conformance suite, per key and sharded', async () => {
  const res = await mf.dispatchFetch('http://localhost/run');
  const outcomes = (await res.json()) as { name: string; ok: boolean; error?: string }[];
  assert.deepEqual(
    outcomes.filter((o) => !o.ok).map((o) => `${o.name}: ${o.error}`),
    [],
  );
  assert.ok(outcomes.length >= 48, `ran ${outcomes.length} tests`);
});

const ALGORITHMS = [
  'fixed-window',
  'sliding-log',
  'sliding-window',
  'token-bucket',
  'gcra',
  'leaky-bucket',
  'concurrency',
];

for (const algorithm of ALGORITHMS) {
  test(`durable-object in workerd: 400 concurrent requests on one key admit exactly the limit (${algorithm})`, async () => {
    const key = `burst:${algorithm}:${Math.random()}`;
    const url = `http://localhost/limit?algorithm=${algorithm}&limit=150&window=1d&key=${encodeURIComponent(key)}`;
    const ds = await Promise.all(
      Array.from({ length: 400 }, () => mf.dispatchFetch(url).then((r) => r.json() as Promise<{ allowed: boolean }>)),
    );
    assert.equal(ds.filter((d) => d.allowed).length, 150);
  });
}

test('durable-object in workerd: 400 concurrent requests over 16 shards admit exactly the limit per key', async () => {
  const keys = Array.from({ length: 8 }, (_, i) => `sharded:${i}:${Math.random()}`);
  const ds = await Promise.all(
    Array.from({ length: 400 }, (_, i) =>
      mf
        .dispatchFetch(
          `http://localhost/limit?algorithm=sliding-log&limit=20&window=1d&shards=16&key=${encodeURIComponent(keys[i % 8]!)}`,
        )
        .then((r) => r.json() as Promise<{ allowed: boolean }>),
    ),
  );
  for (let k = 0; k < 8; k++) assert.equal(ds.filter((d, i) => i % 8 === k && d.allowed).length, 20, keys[k]);
});

test('regression: a DurableObjectStore made in one request decides in the next (a stub belongs to the request that made it)', async () => {
  const key = `shared:${Math.random()}`;
  const statuses = [];
  const allowed = [];
  for (let i = 0; i < 2; i++) {
    const res = await mf.dispatchFetch(`http://localhost/shared?key=${encodeURIComponent(key)}`);
    statuses.push(res.status);
    allowed.push(((await res.json()) as { allowed: boolean }).allowed);
  }
  assert.deepEqual(
    [statuses, allowed],
    [
      [200, 200],
      [true, false],
    ],
  );
});

test('durable-object in workerd: state survives the objects (a restart on the same storage)', async () => {
  const persist = join(work, 'persist');
  const url = 'http://localhost/limit?algorithm=fixed-window&limit=3&window=1d&key=persisted';
  const first = start(persist);
  try {
    for (let i = 0; i < 3; i++)
      assert.equal(((await (await first.dispatchFetch(url)).json()) as { allowed: boolean }).allowed, true);
  } finally {
    await first.dispose();
  }
  const second = start(persist);
  try {
    const d = (await (await second.dispatchFetch(url)).json()) as { allowed: boolean; remaining: number };
    assert.deepEqual([d.allowed, d.remaining], [false, 0]);
  } finally {
    await second.dispose();
  }
});

test('the Worker example (examples/cloudflare-worker): Hono with limits per client and per account in Durable Objects', async () => {
  await bundleForRuntimes(join(root, 'examples/cloudflare-worker/worker.ts'), join(work, 'example.mjs'));
  const example = new Miniflare({
    modules: true,
    scriptPath: join(work, 'example.mjs'),
    modulesRoot: work,
    compatibilityDate: '2025-04-01',
    durableObjects: { SLUICE: { className: 'SluiceDurableObject', useSQLite: true } },
  });
  try {
    const hello = (ip: string) =>
      example.dispatchFetch('http://localhost/api/hello', { headers: { 'cf-connecting-ip': ip } });
    const burst = [];
    for (let i = 0; i < 6; i++) burst.push(await hello('203.0.113.9'));
    assert.deepEqual(
      burst.map((r) => r.status),
      [200, 200, 200, 200, 200, 429],
    );
    assert.equal(burst[5]!.headers.get('retry-after'), '6');
    assert.equal((await hello('203.0.113.10')).status, 200, 'another client has its own budget');
    const login = () =>
      example.dispatchFetch('http://localhost/login', {
        method: 'POST',
        body: JSON.stringify({ account: 'alice' }),
        headers: { 'content-type': 'application/json' },
      });
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await login()).status);
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429]);
  } finally {
    await example.dispose();
  }
});
