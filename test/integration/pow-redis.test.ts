// RedisSpentStore against the real Redis at 127.0.0.1:6379, through ioredis-style and node-redis-style
// clients. Keys carry a unique prefix and are deleted afterwards; nothing is flushed.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { RespClient } from './resp-client.js';
import { createChallenge, RedisSpentStore, solveChallenge, verifySolution } from '../../src/pow/index.js';

const prefix = `sluice-test:pow:${randomUUID()}:`;
let redis: RespClient;

// The two client shapes RedisSpentStore supports, each passing set() through as that library would.
const ioredisLike = () => ({
  status: 'ready',
  set: (key: string, value: string, ...args: Array<string | number>) => redis.command('SET', key, value, ...args),
});
const nodeRedisLike = () => ({
  isOpen: true,
  set: (key: string, value: string, o: { PX: number; NX: boolean }) =>
    redis.command('SET', key, value, 'PX', o.PX, ...(o.NX ? ['NX'] : [])),
});

before(async () => {
  redis = await RespClient.open();
});

after(async () => {
  const keys = (await redis.command('KEYS', `${prefix}*`)) as string[];
  if (keys.length > 0) await redis.command('DEL', ...keys);
  redis.close();
});

for (const [name, client] of [['ioredis', ioredisLike], ['node-redis', nodeRedisLike]] as const) {
  test(`${name}-style client: SET NX PX spends once and sets the TTL to the expiry`, async () => {
    const store = new RedisSpentStore({ client: client(), prefix: `${prefix}${name}:` });
    const now = Date.now();
    assert.equal(await store.spend('id1', now + 5000, now), true);
    assert.equal(await store.spend('id1', now + 5000, now), false);
    const ttl = (await redis.command('PTTL', `${prefix}${name}:id1`)) as number;
    assert.ok(ttl > 4000 && ttl <= 5000, `PTTL ${ttl}`);
    assert.equal(await store.spend('id2', now + 5000, now), true);
  });
}

test('a spent id comes back once its TTL lapses', async () => {
  const store = new RedisSpentStore({ client: ioredisLike(), prefix });
  const now = Date.now();
  assert.equal(await store.spend('short', now + 30, now), true);
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(await store.spend('short', now + 5000, Date.now()), true);
});

test('verifySolution with the Redis store rejects a replay across verifier instances', async () => {
  const secret = 'redis test secret, long enough';
  const ch = createChallenge({ secret, difficulty: 100, scope: 'login:alice', ttlMs: 10_000 });
  const solution = await solveChallenge(ch);
  const a = new RedisSpentStore({ client: ioredisLike(), prefix });
  const b = new RedisSpentStore({ client: nodeRedisLike(), prefix });
  assert.equal((await verifySolution(solution, { secret, scope: 'login:alice', store: a })).ok, true);
  assert.deepEqual(await verifySolution(solution, { secret, scope: 'login:alice', store: b }), { ok: false, reason: 'replayed' });
});

test('a client whose dialect cannot be detected must name it', () => {
  assert.throws(() => new RedisSpentStore({ client: { set: async () => 'OK' } }), /'dialect' must be 'ioredis', 'node-redis' or 'glide'/);
  assert.throws(() => new RedisSpentStore({ client: {} as never }), /'client' must be an ioredis, iovalkey, node-redis or valkey-glide client/);
  assert.ok(new RedisSpentStore({ client: { set: async () => 'OK' }, dialect: 'node-redis' }));
});
