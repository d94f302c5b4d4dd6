// Atomicity across processes: four Node processes (two on ioredis, two on node-redis), each with hundreds
// of concurrent limit() calls on one key, together admit exactly the limit, for every algorithm and for
// a multi-policy key, on Redis time. Windows are a week long so no refill happens during the test.
import assert from 'node:assert/strict';
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { Limiter, type PolicyOptions } from '../../src/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { redisUrl, runPrefix } from '../../../testing/src/harness.js';

const PROCESSES = 4;
const CALLS = 250;
const L = 100;
const prefix = runPrefix('atomic');
const workers: ChildProcess[] = [];

before(async () => {
  for (let i = 0; i < PROCESSES; i++) {
    const w = fork(
      new URL('./atomicity-worker.ts', import.meta.url),
      [redisUrl(), prefix, i % 2 ? 'node-redis' : 'ioredis'],
      { execArgv: ['--import', 'tsx'] },
    );
    workers.push(w);
  }
  await Promise.all(workers.map((w) => once(w, 'message')));
});

after(() => {
  for (const w of workers) w.send('exit');
});

async function together(policies: PolicyOptions[], key: string): Promise<{ admitted: number; errors: number }> {
  const replies = workers.map((w) => once(w, 'message').then(([m]) => m as { admitted: number; errors: number }));
  for (const w of workers) w.send({ policies, key, calls: CALLS });
  const all = await Promise.all(replies);
  return { admitted: all.reduce((a, r) => a + r.admitted, 0), errors: all.reduce((a, r) => a + r.errors, 0) };
}

const cases: Record<string, PolicyOptions[]> = {
  'fixed-window': [{ name: 'p', algorithm: 'fixed-window', limit: L, window: '7d' }],
  'sliding-log': [{ name: 'p', algorithm: 'sliding-log', limit: L, window: '7d' }],
  'sliding-window': [{ name: 'p', algorithm: 'sliding-window', limit: L, window: '7d', buckets: 7 }],
  'token-bucket': [{ name: 'p', algorithm: 'token-bucket', limit: L, window: '7d' }],
  gcra: [{ name: 'p', algorithm: 'gcra', limit: L, window: '7d' }],
  'leaky-bucket meter': [{ name: 'p', algorithm: 'leaky-bucket', limit: L, window: '7d' }],
  'leaky-bucket shaper': [{ name: 'p', algorithm: 'leaky-bucket', mode: 'shaper', limit: L, window: '7d' }],
  concurrency: [{ name: 'p', algorithm: 'concurrency', limit: L, window: '1h' }],
};

for (const [name, policies] of Object.entries(cases)) {
  test(`${PROCESSES} processes × ${CALLS} concurrent calls admit exactly ${L}: ${name}`, async () => {
    const r = await together(policies, `${name}:${Math.random()}`);
    assert.equal(r.errors, 0);
    assert.equal(r.admitted, L);
  });
}

test(`${PROCESSES} processes × ${CALLS} concurrent calls on a multi-policy key: exactly ${L}, and no rejected call charged`, async () => {
  const policies: PolicyOptions[] = [
    { name: 'bucket', algorithm: 'token-bucket', limit: L, window: '7d' },
    { name: 'window', algorithm: 'fixed-window', limit: 3 * L, window: '7d' },
    { name: 'log', algorithm: 'sliding-log', limit: 3 * L, window: '7d' },
    { name: 'leases', algorithm: 'concurrency', limit: 3 * L, window: '1h' },
  ];
  const key = `multi:${Math.random()}`;
  const r = await together(policies, key);
  assert.equal(r.errors, 0);
  assert.equal(r.admitted, L);
  // The other policies were charged only for the admitted calls.
  const client = new Redis(redisUrl());
  try {
    const store = new RedisStore({ client, prefix, onError: 'closed', timeoutMs: 5000 });
    await once(client, 'ready');
    for (const p of policies.slice(1)) {
      const d = await new Limiter({ policy: p, store }).get(key);
      assert.equal(d.remaining, 2 * L, p.name);
    }
  } finally {
    client.disconnect();
  }
});
