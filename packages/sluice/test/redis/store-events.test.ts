// RedisStore's onEvent with both clients, on a Redis of this file's own: what the server says of itself
// when the client connects (its eviction policy, its run_id), and a lost connection and its recovery.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { Limiter } from '../../src/limiter.js';
import { RedisStore, type RedisStoreEvent } from '../../src/stores/redis/index.js';
import { freePort, OwnRedis, runPrefix } from '../../../testing/src/harness.js';

async function until(cond: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const clients = {
  ioredis: async (port: number) => {
    const c = new Redis({
      port,
      host: '127.0.0.1',
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      retryStrategy: () => 50,
    });
    c.on('error', () => {});
    return { client: c, close: async () => c.disconnect() };
  },
  'node-redis': async (port: number) => {
    const c = createClient({
      url: `redis://127.0.0.1:${port}`,
      disableOfflineQueue: true,
      socket: { reconnectStrategy: () => 50 },
    });
    c.on('error', () => {});
    await c.connect();
    return { client: c, close: async () => void (await c.quit().catch(() => c.disconnect?.())) };
  },
};

for (const [name, connect] of Object.entries(clients)) {
  test(`redis that forgets (${name}): onEvent names a volatile-ttl policy and the run_id, then a lost connection, its recovery and the restart`, async () => {
    const server = new OwnRedis(await freePort(), ['--maxmemory', '64mb', '--maxmemory-policy', 'volatile-ttl']);
    await server.start();
    const { client, close } = await connect(server.port);
    const events: RedisStoreEvent[] = [];
    const store = new RedisStore({
      client,
      prefix: runPrefix('events'),
      timeoutMs: 500,
      onEvent: (e) => events.push(e),
    });
    const limiter = new Limiter({ policy: { algorithm: 'fixed-window', limit: 10, window: '1m' }, store });
    try {
      await until(() => events.some((e) => e.type === 'checked'), 5000, 'the check');
      const evicts = events.find((e) => e.type === 'eviction-policy');
      assert.ok(
        evicts?.type === 'eviction-policy' && evicts.policy === 'volatile-ttl' && evicts.maxmemory === 64 * 1024 * 1024,
        JSON.stringify(events),
      );
      const checked = events.find((e) => e.type === 'checked');
      assert.ok(checked?.type === 'checked' && /^[0-9a-f]{40}$/.test(checked.runId ?? ''), JSON.stringify(checked));
      assert.equal((await limiter.limit('k')).reason, undefined);
      await server.stop();
      await until(
        () => events.some((e) => e.type === 'disconnected' || e.type === 'unanswered'),
        5000,
        'the disconnect',
      );
      assert.equal((await limiter.limit('k')).reason, 'store-error');
      await server.start();
      await until(() => events.some((e) => e.type === 'restarted'), 10_000, 'the restart');
      await until(() => events.some((e) => e.type === 'recovered'), 10_000, 'the recovery');
      assert.equal(events.filter((e) => e.type === 'eviction-policy').length, 1, 'the same policy is told once');
    } finally {
      await close();
      await server.destroy();
    }
  });
}

test("RedisStore 'onEvent' must be a function", () => {
  assert.throws(
    () => new RedisStore({ client: new Redis({ lazyConnect: true }), onEvent: 'log' as never }),
    /RedisStore 'onEvent' must be a function, got "log"/,
  );
});
