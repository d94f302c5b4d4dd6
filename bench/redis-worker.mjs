// One measurement in a fresh process: `impl` at `inflight` calls in flight against the private Redis on
// REDIS_PORT (or the Cluster whose masters are CLUSTER_PORTS, comma-separated), for a warm-up and then a
// measured window. Prints one JSON line.
// Usage: node --conditions=sluice-source --import tsx bench/redis-worker.mjs <impl> <inflight> <warmupMs> <measureMs>
//   impl: ping | envoy (Envoy ratelimit's pipelined INCRBY key 1 + EXPIRE key 60) | envoy-auto (the
//         same with implicit pipelining) | rlflex
//         (rate-limiter-flexible RateLimiterRedis, fixed window) | sluice-<algorithm> (fixed-window,
//         sliding-window, sliding-log, token-bucket, gcra, leaky-bucket, leaky-shaper) | sluice-multi
//         (gcra 1000/h and fixed-window 100,000/day on one key) | sluice-deny (a flood of denied keys
//         behind denyCache) | sluice-local-sync | sluice-lease (fixed-window 1,000,000/h on 1,000 keys)
// Every decision but sluice-deny's is on the allowed path: 100k keys round-robin, a limit no key reaches.
// REDIS_CLIENT picks the client that ping and sluice run on, on a standalone Redis: ioredis (default),
// iovalkey or glide (@valkey/valkey-glide's GlideClient); the INFO snapshots always go through ioredis.
import { once } from 'node:events';
import { Cluster, Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { commands, cpuSeconds, parseInfo } from './lib/redis-info.mjs';

// SLUICE_SRC: another checkout's src/ (bench/redis.mjs's BASE), to compare two versions in one run.
const src = process.env.SLUICE_SRC ?? new URL('../packages/sluice/src', import.meta.url).href;
const { Limiter } = await import(`${src}/index.ts`);
const { RedisStore } = await import(`${src}/stores/redis/index.ts`);

const [impl, inflightArg, warmupArg, measureArg] = process.argv.slice(2);
const INFLIGHT = Number(inflightArg);
const WARMUP = Number(warmupArg);
const MEASURE = Math.min(Number(measureArg), 20_000);
const PORTS = (process.env.CLUSTER_PORTS ?? process.env.REDIS_PORT).split(',').map(Number);
const CLUSTER = process.env.CLUSTER_PORTS !== undefined;
if (PORTS.includes(6379)) throw new Error('the benchmark flushes its Redis: never the shared 6379');
// The strategies share budgets between nodes per key: 1,000 keys (an API key's or a tenant's limit);
// the deny cache's flood is 1,000 keys that are over their limit.
const NKEYS = impl === 'sluice-local-sync' || impl === 'sluice-lease' || impl === 'sluice-deny' ? 1_000 : 100_000;
const KEYS = Array.from({ length: NKEYS }, (_, i) => `k${i}`);

// envoy-auto: Envoy with implicit pipelining (REDIS_PIPELINE_WINDOW, its README's advice for high
// throughput): every command of a turn leaves in one write, ioredis's enableAutoPipelining.
const auto = impl === 'envoy-auto' ? { enableAutoPipelining: true } : {};
const CLIENT = process.env.REDIS_CLIENT ?? 'ioredis';
if (CLUSTER && CLIENT !== 'ioredis') throw new Error(`REDIS_CLIENT=${CLIENT} is for a standalone Redis`);
const admins = PORTS.map((port) => new Redis({ host: '127.0.0.1', port }));
// Listened for now: they may be ready before the client under test is, and 'ready' is not emitted twice.
const adminsReady = Promise.all(admins.map((a) => once(a, 'ready')));
/** The client under test, connected, and how to let it go. */
async function connect() {
  if (CLUSTER) {
    const c = new Cluster(
      PORTS.map((port) => ({ host: '127.0.0.1', port })),
      { scaleReads: 'master', ...auto },
    );
    await once(c, 'ready');
    return { client: c, close: () => c.disconnect() };
  }
  if (CLIENT === 'ioredis' || CLIENT === 'iovalkey') {
    const { Redis: Client } = await import(CLIENT);
    const c = new Client({ host: '127.0.0.1', port: PORTS[0], ...auto });
    await once(c, 'ready');
    return { client: c, close: () => c.disconnect() };
  }
  if (CLIENT === 'glide') {
    const { GlideClient, Logger } = await import('@valkey/valkey-glide');
    Logger.setLoggerConfig('error'); // the first call's "Function not found" is a WARN otherwise
    const c = await GlideClient.createClient({
      addresses: [{ host: '127.0.0.1', port: PORTS[0] }],
      requestTimeout: 1000,
    });
    return { client: c, close: () => c.close() };
  }
  throw new Error(`REDIS_CLIENT must be ioredis, iovalkey or glide, got ${CLIENT}`);
}
const { client, close } = await connect();
await adminsReady;

// op starts one call and returns its promise; check looks at its answer after the clock has stopped, so
// a decision is timed exactly as a PING is: the same client, the same loop, one await.
let op;
let check = () => {};
let store;
const ALGORITHMS = {
  'sluice-fixed-window': { algorithm: 'fixed-window' },
  'sluice-sliding-window': { algorithm: 'sliding-window' },
  'sluice-sliding-log': { algorithm: 'sliding-log' },
  'sluice-token-bucket': { algorithm: 'token-bucket' },
  'sluice-tb': { algorithm: 'token-bucket' }, // the name BASE checkouts' rows used before
  'sluice-gcra': { algorithm: 'gcra' },
  'sluice-leaky-bucket': { algorithm: 'leaky-bucket' },
  'sluice-leaky-shaper': { algorithm: 'leaky-bucket', mode: 'shaper' },
};
const allowed = (d) => {
  if (d.reason !== undefined || !d.allowed) throw new Error(`unexpected decision ${JSON.stringify(d)}`);
};
if (impl === 'ping') {
  op = () => client.ping();
} else if (impl === 'envoy') {
  // envoyproxy/ratelimit's fixed window (src/redis/fixed_cache_impl.go): the key names the window's
  // start, and each descriptor is INCRBY key hits + EXPIRE key unit-seconds, pipelined together.
  const window = Math.floor(Date.now() / 60_000) * 60;
  op = (key) => client.pipeline().incrby(`env:{${key}}_${window}`, 1).expire(`env:{${key}}_${window}`, 60).exec();
  check = (r) => {
    if (r[0][0] !== null || !(r[0][1] < 1e12)) throw new Error(`unexpected reply ${JSON.stringify(r)}`);
  };
} else if (impl === 'envoy-auto') {
  const window = Math.floor(Date.now() / 60_000) * 60;
  op = (key) => Promise.all([client.incrby(`env:{${key}}_${window}`, 1), client.expire(`env:{${key}}_${window}`, 60)]);
  check = (r) => {
    if (!(r[0] < 1e12)) throw new Error(`unexpected reply ${JSON.stringify(r)}`);
  };
} else if (impl === 'rlflex') {
  const rl = new RateLimiterRedis({ storeClient: client, keyPrefix: 'rlb', points: 1e12, duration: 60 });
  op = (key) => rl.consume(key);
} else {
  store = new RedisStore({
    client,
    prefix: 'slb',
    timeoutMs: 1000,
    ...(process.env.MAX_BATCH ? { maxBatch: Number(process.env.MAX_BATCH) } : {}),
  });
  // 1000 per hour: a key is hit at most a few dozen times in a run, so every decision is allowed, and every
  // one writes its state back with a TTL (a limit so high that state is idle at once would skip the write).
  let options;
  if (ALGORITHMS[impl] !== undefined)
    options = { policy: { name: 'p', ...ALGORITHMS[impl], limit: 1000, window: '1h' } };
  else if (impl === 'sluice-multi')
    options = {
      policies: [
        { name: 'h', algorithm: 'gcra', limit: 1000, window: '1h' },
        { name: 'd', algorithm: 'fixed-window', limit: 100_000, window: '1d' },
      ],
    };
  else if (impl === 'sluice-deny')
    options = { policy: { name: 'p', algorithm: 'fixed-window', limit: 10, window: '1h' }, denyCache: true };
  else if (impl === 'sluice-local-sync')
    options = {
      policy: { name: 'p', algorithm: 'fixed-window', limit: 1_000_000, window: '1h' },
      strategy: 'local-sync',
    };
  else if (impl === 'sluice-lease')
    options = { policy: { name: 'p', algorithm: 'fixed-window', limit: 1_000_000, window: '1h' }, strategy: 'lease' };
  else throw new Error(`unknown impl ${impl}`);
  const limiter = new Limiter({ ...options, store });
  op = (key) => limiter.limit(key);
  check = impl === 'sluice-deny' ? () => {} : allowed;
  if (impl === 'sluice-deny') {
    // The flood: every key over its limit before the clock starts, so each is denied from then on.
    for (const key of KEYS) for (let i = 0; i < 11; i++) await limiter.limit(key);
  }
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

/** INFO of every master, summed: commands by name and CPU seconds. */
const snapshot = async () => {
  const sum = {};
  for (const info of await Promise.all(admins.map((a) => a.info('all')))) {
    for (const [k, v] of Object.entries(parseInfo(info))) sum[k] = (sum[k] ?? 0) + v;
  }
  return sum;
};

await drive(WARMUP, false);
const s0 = await snapshot();
const calls0 = store === undefined ? undefined : { ...store.stats };
const cpu0 = process.cpuUsage();
const r = await drive(MEASURE, INFLIGHT === 1);
const cpu = process.cpuUsage(cpu0);
const s1 = await snapshot();
const calls1 = store === undefined ? undefined : { ...store.stats };
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

const nodeCpuSec = (cpu.user + cpu.system) / 1e6;
const result = {
  impl,
  client: CLIENT,
  inflight: INFLIGHT,
  cluster: CLUSTER,
  decisionsPerSec: r.n / sec,
  medianLatencyUs: r.lat.length ? r.lat[r.lat.length >> 1] * 1000 : null,
  sameProcessPingUs,
  pingRatio,
  commandsPerDecision: (commands(s1) - commands(s0)) / r.n,
  // sluice: its script calls (and strategy calls) per decision, from the store's counters
  callsPerDecision: calls0 === undefined ? null : (calls1.calls - calls0.calls) / r.n,
  redisCpuUsPerDecision: (cpuSec * 1e6) / r.n,
  redisCpuPct: (cpuSec / sec) * 100,
  nodeCpuUsPerDecision: (nodeCpuSec * 1e6) / r.n,
  nodeCpuPct: (nodeCpuSec / sec) * 100,
};
close();
for (const a of admins) a.disconnect();
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
