// One measurement in a fresh process: `impl` at `inflight` calls in flight against the Redis on
// REDIS_PORT, for a warm-up and then a measured window. Prints one JSON line.
// Usage: node --import tsx bench/redis-worker.mjs <impl> <inflight> <warmupMs> <measureMs>
//   impl: ping | rlflex (rate-limiter-flexible RateLimiterRedis, fixed window) | sluice-tb | sluice-gcra
// Every decision is on the allowed path: 100k keys round-robin, a limit no key reaches.
// REDIS_CLIENT picks the client that ping and sluice run on: ioredis (default), iovalkey or glide
// (@valkey/valkey-glide's GlideClient); the INFO snapshots always go through ioredis.
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { commands, cpuSeconds, parseInfo } from './lib/redis-info.mjs';

// SLUICE_SRC: another checkout's src/ (bench/redis.mjs's BASE), to compare two versions in one run.
const src = process.env.SLUICE_SRC ?? new URL('../src', import.meta.url).href;
const { Limiter } = await import(`${src}/index.ts`);
const { RedisStore } = await import(`${src}/stores/redis/index.ts`);

const [impl, inflightArg, warmupArg, measureArg] = process.argv.slice(2);
const INFLIGHT = Number(inflightArg);
const WARMUP = Number(warmupArg);
const MEASURE = Math.min(Number(measureArg), 20_000);
const PORT = Number(process.env.REDIS_PORT);
const KEYS = Array.from({ length: 100_000 }, (_, i) => `k${i}`);

const CLIENT = process.env.REDIS_CLIENT ?? 'ioredis';
const admin = new Redis({ host: '127.0.0.1', port: PORT });
await once(admin, 'ready');
/** The client under test, connected, and how to let it go. */
async function connect() {
  if (CLIENT === 'ioredis' || CLIENT === 'iovalkey') {
    const { Redis: Client } = await import(CLIENT);
    const c = new Client({ host: '127.0.0.1', port: PORT });
    await once(c, 'ready');
    return { client: c, close: () => c.disconnect() };
  }
  if (CLIENT === 'glide') {
    const { GlideClient, Logger } = await import('@valkey/valkey-glide');
    Logger.setLoggerConfig('error'); // the first call's "Function not found" is a WARN otherwise
    const c = await GlideClient.createClient({ addresses: [{ host: '127.0.0.1', port: PORT }], requestTimeout: 1000 });
    return { client: c, close: () => c.close() };
  }
  throw new Error(`REDIS_CLIENT must be ioredis, iovalkey or glide, got ${CLIENT}`);
}
const { client, close } = await connect();

// op starts one call and returns its promise; check looks at its answer after the clock has stopped, so
// a decision is timed exactly as a PING is: the same client, the same loop, one await.
let op;
let check = () => {};
if (impl === 'ping') {
  op = () => client.ping();
} else if (impl === 'rlflex') {
  const rl = new RateLimiterRedis({ storeClient: client, keyPrefix: 'rlb', points: 1e12, duration: 60 });
  op = (key) => rl.consume(key);
} else {
  const algorithm = impl === 'sluice-gcra' ? 'gcra' : 'token-bucket';
  const store = new RedisStore({ client, prefix: 'slb', timeoutMs: 1000, ...(process.env.MAX_BATCH ? { maxBatch: Number(process.env.MAX_BATCH) } : {}) });
  // 1000 per hour: a key is hit at most a few dozen times in a run, so every decision is allowed, and every
  // one writes its state back with a TTL (a limit so high that state is idle at once would skip the write).
  const limiter = new Limiter({ policy: { name: 'p', algorithm, limit: 1000, window: '1h' }, store });
  op = (key) => limiter.limit(key);
  check = (d) => {
    if (d.reason !== undefined || !d.allowed) throw new Error(`unexpected decision ${JSON.stringify(d)}`);
  };
}

/** Runs `inflight` sequential loops until `ms` pass; returns calls, elapsed ms and (at 1) each latency. */
async function drive(ms, record) {
  let n = 0;
  let next = 0;
  const lat = [];
  const start = performance.now();
  const end = start + ms;
  const loop = async () => {
    while (performance.now() < end) {
      const t = record ? performance.now() : 0;
      const answer = await op(KEYS[next++ % KEYS.length]);
      if (record) lat.push(performance.now() - t);
      check(answer);
      n++;
    }
  };
  await Promise.all(Array.from({ length: INFLIGHT }, loop));
  return { n, ms: performance.now() - start, lat };
}

const snapshot = async () => parseInfo(await admin.info('all'));

await drive(WARMUP, false);
const s0 = await snapshot();
const cpu0 = process.cpuUsage();
const r = await drive(MEASURE, INFLIGHT === 1);
const cpu = process.cpuUsage(cpu0);
const s1 = await snapshot();
const sec = r.ms / 1000;
const cpuSec = cpuSeconds(s1) - cpuSeconds(s0);
r.lat.sort((a, b) => a - b);

// At 1 in flight, the latency ratio to PING is measured in this same process, in alternating blocks: on
// 2 cores, whether the kernel puts Node and Redis on one vCPU changes a round trip by 2-3x from one
// process to the next, so only a same-process comparison is fair.
let pingRatio = null;
let sameProcessPingUs = null;
if (INFLIGHT === 1) {
  const ping = () => client.ping();
  const time = async (f, n, c) => {
    const lat = [];
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      const answer = await f(KEYS[i % KEYS.length]);
      lat.push(performance.now() - t);
      c(answer);
    }
    return lat;
  };
  const mine = [];
  const pings = [];
  for (let b = 0; b < 4; b++) {
    mine.push(...(await time(op, 2500, check)));
    pings.push(...(await time(ping, 2500, () => {})));
  }
  const med = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1] * 1000;
  sameProcessPingUs = med(pings);
  pingRatio = med(mine) / sameProcessPingUs;
}

const result = {
  impl,
  client: CLIENT,
  inflight: INFLIGHT,
  decisionsPerSec: r.n / sec,
  medianLatencyUs: r.lat.length ? r.lat[r.lat.length >> 1] * 1000 : null,
  sameProcessPingUs,
  pingRatio,
  commandsPerDecision: (commands(s1) - commands(s0)) / r.n,
  redisCpuUsPerDecision: (cpuSec * 1e6) / r.n,
  redisCpuPct: (cpuSec / sec) * 100,
  nodeCpuPct: ((cpu.user + cpu.system) / 1e6 / sec) * 100,
};
close();
admin.disconnect();
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
