// The anomaly monitors' persisted baselines on Redis: a fresh guard (a deploy, a new region) on the fleet's
// Redis starts from what the guards before it learnt. Unique prefixes; nothing is flushed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Guard, RedisGuardState } from '../../src/index.js';
import { MemoryStore } from '../../../sluice/src/stores/memory.js';
import { connectBothClients, runPrefix } from '../../../testing/src/harness.js';

const base = runPrefix('guard-baselines');
const { io, nr } = await connectBothClients(async (client) => {
  for (const k of await client.keys(`${base}:*`)) await client.unlink(k);
});

for (const [name, client] of [
  ['ioredis', io],
  ['node-redis', nr],
] as const) {
  test(`${name}: baselines written by one guard are read by a fresh one, and kept with a TTL`, async () => {
    const prefix = `${base}:${name}`;
    const state = new RedisGuardState({ client, prefix, onError: 'closed', timeoutMs: 2000 });
    assert.equal(await state.readBaselines(), undefined, 'none held yet');
    let now = 1_700_000_000_000;
    const options = {
      secret: 'test-secret-0123456789abcdef',
      state,
      store: new MemoryStore(),
      clock: () => now,
      random: () => 0,
      baselineSaveEvery: '1m',
    } as const;
    const veteran = new Guard(options);
    for (let m = 0; m < 40; m++) {
      for (let i = 0; i < 2; i++)
        await veteran.record({ account: `typo${m}-${i}`, ip: `10.0.${m}.${i + 1}`, success: false });
      now += 60_000;
    }
    await veteran.check({ account: 'x', ip: '10.9.9.9' }); // the last minute's save goes with this call
    await veteran.check({ account: 'x', ip: '10.9.9.9' });
    const text = await state.readBaselines();
    assert.ok(text !== undefined && JSON.parse(text).failures.learnt >= 30, text);
    const ttl = await io.pttl(`${prefix}:{gb:baselines}`);
    assert.ok(ttl > 6 * 86_400_000 && ttl <= 7 * 86_400_000, `ttl ${ttl}`);
    // A deploy: the new guard's first minute is a flood, and the fleet's baseline says so.
    now += 60_000;
    const fresh = new Guard({ ...options, store: new MemoryStore() });
    for (let i = 0; i < 40; i++) await fresh.record({ account: `wave${i}`, ip: `10.1.${i}.1`, success: false });
    assert.equal(fresh.anomalous(), true);
  });
}

test('a Redis that cannot answer the baselines leaves the guard deciding, without them', async () => {
  const state = new RedisGuardState({ client: io, prefix: `${base}:broken`, onError: 'open' });
  state.readBaselines = () => Promise.reject(new Error('down'));
  const guard = new Guard({ secret: 'test-secret-0123456789abcdef', state, store: new MemoryStore() });
  assert.equal((await guard.check({ account: 'a', ip: '10.0.0.1' })).action, 'allow');
});
