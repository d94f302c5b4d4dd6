// The guard's own throttle and signal suites (src/guard/throttles.test.ts, signals.test.ts,
// leaked-credential.test.ts), run unchanged with every guard on a fresh RedisStore and the RedisGuardState
// it gives, on a standalone Redis, failing closed so a Redis error fails a test. Each test is named as in
// its memory suite; this file is the Redis run.
import { once } from 'node:events';
import { after } from 'node:test';
import { Redis } from 'ioredis';
import { RedisStore } from '../../../sluice/src/stores/redis/index.js';
import { setGuardBackend } from '../support/guard-kit.js';
import { redisUrl, runPrefix } from '../../../testing/src/harness.js';

const base = runPrefix('guard-suites');
let n = 0;
const io = new Redis(redisUrl(), { maxRetriesPerRequest: 1 });
await once(io, 'ready');
after(async () => {
  for (const k of await io.keys(`${base}:*`)) await io.unlink(k);
  io.disconnect();
});

setGuardBackend(() => ({
  store: new RedisStore({ client: io, prefix: `${base}:${n++}`, clock: 'client', timeoutMs: 2000, onError: 'closed' }),
}));
await import('../../src/throttles.test.js');
await import('../../src/signals.test.js');
await import('../../src/leaked-credential.test.js');
