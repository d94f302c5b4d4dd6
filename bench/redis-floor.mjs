// The latency floor of one script call at 1 in flight, against a Redis you name (REDIS_PORT, default
// 6379; it only writes keys under 'sluice-floor:'): PING, an empty EVALSHA, and an EVALSHA that only runs
// TIME, GET and SET ... PX, each with one key and one argument as sluice sends at 1 in flight. It shows how
// much of a RedisStore decision's latency any EVALSHA costs. Medians of 15,000 calls, 4 interleaved rounds.
// Usage: REDIS_PORT=6390 node bench/redis-floor.mjs
import { once } from 'node:events';
import { Redis } from 'ioredis';

const c = new Redis({ port: Number(process.env.REDIS_PORT ?? 6379), host: '127.0.0.1' });
await once(c, 'ready');
const empty = await c.script('LOAD', 'return {1, 2}');
const trivial = await c.script(
  'LOAD',
  `redis.call('TIME') redis.call('GET', KEYS[1]) redis.call('SET', KEYS[1], 'xxxxxxxxxxxxxxxx', 'PX', 1000) return {1, 2}`,
);
const cases = {
  PING: () => c.ping(),
  'EVALSHA, empty script': (i) => c.evalsha(empty, 1, `sluice-floor:{k${i % 100000}}:p`, '1'),
  'EVALSHA, TIME + GET + SET PX': (i) => c.evalsha(trivial, 1, `sluice-floor:{k${i % 100000}}:p`, '1'),
};
async function median(f) {
  for (let i = 0; i < 2000; i++) await f(i);
  const lat = [];
  for (let i = 0; i < 15000; i++) {
    const t = performance.now();
    await f(i);
    lat.push(performance.now() - t);
  }
  lat.sort((a, b) => a - b);
  return lat[lat.length >> 1] * 1000;
}
const res = {};
for (let r = 0; r < 4; r++) for (const [name, f] of Object.entries(cases)) (res[name] ??= []).push(await median(f));
const ping = res.PING.slice().sort((a, b) => a - b)[2];
for (const [name, xs] of Object.entries(res)) {
  const m = xs.slice().sort((a, b) => a - b)[2];
  console.log(
    `${name.padEnd(30)} median ${m.toFixed(1)} µs (${(m / ping).toFixed(2)}× PING); rounds ${xs.map((x) => x.toFixed(1)).join(' ')}`,
  );
}
c.disconnect();
