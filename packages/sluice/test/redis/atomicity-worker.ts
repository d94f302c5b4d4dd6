// A worker process for atomicity.test.ts: on each 'go' message, fires `calls` concurrent limit() calls
// on one key and reports how many were admitted and how many fell back to the failure policy.
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { Limiter, type PolicyOptions } from '../../src/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';

const [url, prefix, clientKind] = process.argv.slice(2) as [string, string, string];
let client: unknown;
let close: () => Promise<unknown>;
if (clientKind === 'node-redis') {
  const c = createClient({ url });
  c.on('error', () => {});
  await c.connect();
  client = c;
  close = () => c.quit();
} else {
  const c = new Redis(url);
  await once(c, 'ready');
  client = c;
  close = async () => c.disconnect();
}
const store = new RedisStore({ client, prefix, timeoutMs: 5000, onError: 'closed' });

process.on('message', async (m: { policies: PolicyOptions[]; key: string; calls: number } | 'exit') => {
  if (m === 'exit') {
    await close();
    process.exit(0);
  }
  const limiter = new Limiter({ policies: m.policies, store });
  const decisions = await Promise.all(Array.from({ length: m.calls }, () => limiter.limit(m.key)));
  process.send!({
    admitted: decisions.filter((d) => d.allowed).length,
    errors: decisions.filter((d) => d.reason !== undefined).length,
  });
});
process.send!('ready');
