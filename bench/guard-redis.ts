// Guard benchmark on Redis: check+record pairs per second with the buckets and the guard state both on
// Redis (RedisStore + its RedisGuardState), Redis script calls per pair, and a PING round trip as the floor,
// at 1 and at 64 logins in flight, and at 1 in flight the latency of check() alone. It starts its own
// redis-server on a spare port, so nothing is shared.
// Run: node --import tsx bench/guard-redis.ts [pairs=5000] [inFlight=64]
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { Guard, type RedisGuardState } from '../src/guard/index.js';
import { RedisStore } from '../src/stores/redis/index.js';
import { freePort, OwnRedis } from '../test/redis/harness.js';

const [PAIRS = 5000, IN_FLIGHT = 64] = process.argv.slice(2).map(Number);
const server = new OwnRedis(await freePort());
await server.start();
const client = new Redis({ port: server.port, host: '127.0.0.1' });
await once(client, 'ready');

/** The same mix as bench/guard-bench.ts: 50,000 accounts, 20,000 addresses, 75% successes. */
const floodIp = (n: number) => `${11 + (n >>> 16)}.${(n >>> 8) & 255}.${n & 255}.${1 + (n % 250)}`;
/** Time spent in check() alone, summed over a run: with one login in flight, its latency. */
let checkMs = 0;
async function pair(guard: Guard, i: number): Promise<void> {
  const account = `user${(i * 7919) % 50_000}@example.com`;
  const ip = floodIp((i * 104_729) % 20_000);
  const t = performance.now();
  await guard.check({ account, ip });
  checkMs += performance.now() - t;
  await guard.record({ account, ip, success: i % 4 !== 0, password: i % 4 === 0 ? `pw${i}` : undefined });
}

async function run(label: string, inFlight: number, pairs: number): Promise<void> {
  const store = new RedisStore({ client, prefix: `bench-${label}`, timeoutMs: 1000, onError: 'closed' });
  const guard = new Guard({ secret: 'bench-secret-0123456789abcdef', store });
  const state = guard.state as RedisGuardState;
  let next = 0;
  const worker = async (count: number) => {
    for (let k = 0; k < count; k++) await pair(guard, next++);
  };
  await Promise.all(Array.from({ length: inFlight }, () => worker(Math.ceil(1000 / inFlight)))); // warm up
  const calls0 = store.stats.calls + state.stats.calls;
  checkMs = 0;
  const ops0 = store.stats.operations + state.stats.calls;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: inFlight }, () => worker(Math.ceil(pairs / inFlight))));
  const ms = performance.now() - t0;
  const done = inFlight * Math.ceil(pairs / inFlight);
  const calls = store.stats.calls + state.stats.calls - calls0;
  const ops = store.stats.operations + state.stats.calls - ops0;
  if (store.stats.fallbacks + state.stats.fallbacks > 0) throw new Error(`Redis failed during the bench: ${JSON.stringify({ store: store.stats, state: state.stats })}`);
  console.log(
    `${inFlight} in flight: ${Math.round((done / ms) * 1000).toLocaleString('en')} check+record pairs/s (${((ms * 1000) / done).toFixed(0)} µs per pair, ${done.toLocaleString('en')} pairs); ` +
      `${(calls / done).toFixed(2)} Redis calls per pair carrying ${(ops / done).toFixed(2)} operations` +
      (inFlight === 1 ? `; check() alone ${((checkMs * 1000) / done).toFixed(0)} µs` : ''),
  );
}

async function pingFloor(): Promise<void> {
  for (let i = 0; i < 1000; i++) await client.ping();
  const n = 5000;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await client.ping();
  console.log(`PING round trip (ioredis, 1 in flight): ${(((performance.now() - t0) * 1000) / n).toFixed(0)} µs`);
}

try {
  await pingFloor();
  await run('seq', 1, PAIRS);
  await run('par', IN_FLIGHT, PAIRS * 4);
} finally {
  client.disconnect();
  await server.destroy();
}
