// RedisStore on a standalone Redis (127.0.0.1:6379 or REDIS_URL), through both clients: the conformance
// suite unchanged, with the limiter's clock sent to the scripts. Keys carry a unique prefix per run;
// nothing here flushes the shared server.
import { RedisStore } from '../../src/stores/redis/index.js';
import { storeConformance } from '../contracts/store-conformance.js';
import { banConformance } from '../contracts/ban-conformance.js';
import { calendarConformance } from '../contracts/calendar-conformance.js';
import { overrideConformance, overrideSeveralConformance } from '../contracts/override-conformance.js';
import { severalFixedConformance } from '../contracts/several-conformance.js';
import { connectBothClients, runPrefix } from '../../../testing/src/harness.js';

const { io, nr } = await connectBothClients();

const prefix = runPrefix('conf');
storeConformance('redis (ioredis)', () => new RedisStore({ client: io, prefix, clock: 'client', timeoutMs: 2000 }), {
  runs: Number(process.env.CONF_RUNS ?? 30),
});
overrideConformance(
  'redis (ioredis)',
  () => new RedisStore({ client: io, prefix, clock: 'client', timeoutMs: 2000 }),
  Number(process.env.CONF_RUNS ?? 30),
);
banConformance(
  'redis (ioredis)',
  () => new RedisStore({ client: io, prefix, clock: 'client', timeoutMs: 2000 }),
  Number(process.env.CONF_RUNS ?? 30),
);
calendarConformance(
  'redis (ioredis)',
  () => new RedisStore({ client: io, prefix, clock: 'client', timeoutMs: 2000 }),
  30,
);
overrideSeveralConformance(
  'redis (ioredis)',
  () => new RedisStore({ client: io, prefix, clock: 'client', timeoutMs: 2000 }),
);
severalFixedConformance(
  'redis (ioredis)',
  () => new RedisStore({ client: io, prefix, clock: 'client', timeoutMs: 2000 }),
);
storeConformance('redis (node-redis)', () => new RedisStore({ client: nr, prefix, clock: 'client', timeoutMs: 2000 }), {
  runs: Number(process.env.CONF_RUNS ?? 15),
});
