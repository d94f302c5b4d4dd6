// Denials per second for one denied key on Redis, with and without the deny cache. Run: npx tsx bench/deny-cache.mts
// (REDIS_URL, default redis://127.0.0.1:6379; a unique prefix, nothing flushed).
import { Redis } from 'ioredis';
import { Limiter } from '../packages/sluice/src/index.js';
import { RedisStore } from '../packages/sluice/src/stores/redis/index.js';
const client = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
await new Promise((r) => client.once('ready', r));
for (const denyCache of [false, true]) {
  const store = new RedisStore({ client, prefix: `sluice-denybench:${process.pid}:${denyCache}` });
  const l = new Limiter({ policy: { algorithm: 'fixed-window', limit: 1, window: '1h' }, store, denyCache });
  await l.limit('k');
  const n = denyCache ? 2_000_000 : 200_000;
  const t = performance.now();
  for (let i = 0; i < n; i += 64) await Promise.all(Array.from({ length: 64 }, () => l.limit('k')));
  const s = (performance.now() - t) / 1000;
  const d = await l.limit('k');
  if (d.allowed || d.reason !== undefined) throw new Error('the key should be denied by Redis itself');
  console.log(
    `denyCache ${denyCache}: ${(n / s / 1000).toFixed(0)} k denials/s, ${store.stats.calls} script calls for ${n} decisions`,
  );
}
client.disconnect();
