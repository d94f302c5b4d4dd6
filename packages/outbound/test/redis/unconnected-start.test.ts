// Issue 24: Gate and the lease and local-sync strategies on RedisStores whose clients have not connected
// yet. They used to take the failure policy ('open') until the client connected: an upstream got 357
// 429s from 4 processes behind Gate, and 4 lease or local-sync nodes admitted 6.2 million against a
// global limit of 1,000. Now the store waits for the first connection, so none of it happens.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Redis } from 'ioredis';
import { Limiter, type Decision } from '../../../sluice/src/index.js';
import { Gate } from '../../src/index.js';
import { RedisStore } from '../../../sluice/src/stores/redis/index.js';
import { redisUrl, runPrefix } from '../../../testing/src/harness.js';

const NODES = 4;
/** The stores' timeoutMs: a live Redis on a loaded host must not time out (these tests are about connecting). */
const SLOW_HOST_MS = 2000;

for (const strategy of ['lease', 'local-sync'] as const) {
  test(`${strategy}: ${NODES} nodes on fresh, unawaited clients never exceed the global limit, and none falls back`, async () => {
    const limit = 100;
    const prefix = runPrefix(`unconnected-${strategy}`);
    const clients = Array.from({ length: NODES }, () => new Redis(redisUrl()));
    const limiters = clients.map(
      (client) =>
        new Limiter({
          policy: { name: 'day', algorithm: 'fixed-window', limit, window: '1d' },
          store: new RedisStore({ client, prefix, timeoutMs: SLOW_HOST_MS, onError: 'open' }),
          strategy,
        }),
    );
    try {
      const seen: Decision[] = [];
      // Every node's tight loops start at once, before any client is connected.
      await Promise.all(
        limiters.flatMap((limiter) =>
          Array.from({ length: 2 }, async () => {
            for (let i = 0; i < 150; i++) seen.push(await limiter.limit('hot'));
          }),
        ),
      );
      assert.deepEqual(
        seen.filter((d) => d.reason !== undefined).map((d) => d.reason),
        [],
        'no decision from the failure policy',
      );
      const admitted = seen.filter((d) => d.allowed).length;
      // lease: never above the limit; local-sync: within limit + nodes x threshold (threshold 1 here).
      const bound = strategy === 'lease' ? limit : limit + NODES * 1;
      assert.ok(admitted <= bound, `${admitted} admitted, over ${bound}`);
      assert.ok(admitted >= limit * 0.9, `only ${admitted} admitted of ${limit}`);
    } finally {
      for (const l of limiters) await (l.table as { close?: () => Promise<void> }).close?.();
      for (const c of clients) c.disconnect();
    }
  });
}

test(`Gate: ${NODES} gates on fresh, unawaited clients send the upstream no more than its limit (no 429 from the start-up)`, async () => {
  const limit = 20;
  const prefix = runPrefix('unconnected-gate');
  let upstream = 0;
  let over = 0; // what the upstream would answer 429
  const call = async () => {
    upstream++;
    if (upstream > limit) over++;
    return 'ok';
  };
  const clients = Array.from({ length: NODES }, () => new Redis(redisUrl()));
  const gates = clients.map(
    (client) =>
      new Gate({
        policy: { name: 'day', algorithm: 'fixed-window', limit, window: '1d' },
        store: new RedisStore({ client, prefix, timeoutMs: SLOW_HOST_MS, onError: 'open' }),
        timeoutMs: 500,
      }),
  );
  try {
    const results = await Promise.allSettled(
      gates.flatMap((gate) => Array.from({ length: 15 }, () => gate.run('api', call))),
    );
    assert.equal(over, 0, `the upstream answered ${over} calls over its limit`);
    assert.equal(upstream, limit, 'the limit was used, all of it');
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, limit);
    for (const r of results)
      if (r.status === 'rejected') assert.equal((r.reason as { code?: string }).code, 'ERR_SLUICE_QUEUE_TIMEOUT');
  } finally {
    for (const c of clients) c.disconnect();
  }
});
