// One region's clients for bench/regions.mjs: a limiter in this process (its own event loop, as a
// region's app servers have), driven at a fixed rate, every decision's latency and every admission
// written down. Run by bench/regions.mjs with `node --import tsx`; the config comes as argv[2] (JSON).
// Modes: 'global' (one Redis for the world: this region's home is region 0's, through the link unless
// this is region 0), 'isolated' (a Redis per region, no exchange), 'regions' (sluice's strategy),
// 'upstash' (@upstash/ratelimit's MultiRegionRatelimit fixed window: every request's script sent to every
// region's Redis, the first answer used, request ids synced afterwards; its REST client replaced by a shim
// over ioredis, as bench/next-micro.ts does).
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createHash } from 'node:crypto';
import { MultiRegionRatelimit } from '@upstash/ratelimit';
import { Redis } from 'ioredis';
import { Limiter } from '../packages/sluice/src/limiter.ts';
import { RedisStore } from '../packages/sluice/src/stores/redis/index.ts';

const c = JSON.parse(process.argv[2]);
const client = (port) => {
  const r = new Redis({ port, host: '127.0.0.1', retryStrategy: () => 50 });
  r.on('error', () => {});
  return r;
};
const sha1 = (s) => createHash('sha1').update(s).digest('hex');
/** @upstash/redis's calls that MultiRegionRatelimit makes, over ioredis (its scripts' `#!lua flags` line dropped: Redis 7.0 refuses it). */
function shim(io) {
  const shas = new Map();
  return {
    evalsha: (sha, keys, args) => io.evalsha(shas.get(sha) ?? sha, keys.length, ...keys, ...args.map(String)),
    eval: (script, keys, args) => {
      const sent = script.replace(/^#!lua[^\n]*\n/, '');
      shas.set(sha1(script), sha1(sent));
      return io.eval(sent, keys.length, ...keys, ...args.map(String));
    },
    hset: (key, fields) => io.hset(key, fields),
  };
}
const homePort = c.mode === 'global' && c.region !== 0 ? c.peerPorts[c.names[0]] : c.homePort;
const regions =
  c.mode !== 'regions'
    ? undefined
    : {
        name: c.names[c.region],
        exchangeMs: c.exchangeMs,
        ...(process.env.PEER_TIMEOUT_MS ? { peerTimeoutMs: Number(process.env.PEER_TIMEOUT_MS) } : {}),
        peers: Object.fromEntries(Object.entries(c.peerPorts).map(([n, p]) => [n, client(p)])),
      };
const store = new RedisStore({
  client: client(homePort),
  prefix: c.prefix,
  timeoutMs: 2000,
  logger: false,
  maxInFlight: 100_000,
  ...(regions ? { regions } : {}),
});
const limiter = new Limiter({
  policy: { name: 'p', algorithm: 'fixed-window', limit: c.limit, window: c.windowMs },
  store,
});
const upstash =
  c.mode !== 'upstash'
    ? undefined
    : new MultiRegionRatelimit({
        redis: [shim(client(c.homePort)), ...Object.values(c.peerPorts).map((p) => shim(client(p)))],
        limiter: MultiRegionRatelimit.fixedWindow(c.limit, `${c.windowMs} ms`),
        prefix: c.prefix,
        ephemeralCache: false,
      });
/** One decision as { allowed, windowIndex }. */
const syncs = [];
async function decide(key, sent) {
  if (upstash === undefined) {
    const d = await limiter.limit(key);
    return { allowed: d.allowed, w: Math.round((sent + d.resetAfterMs) / c.windowMs) - 1 };
  }
  const r = await upstash.limit(key);
  syncs.push(r.pending.catch(() => {}));
  return { allowed: r.success, w: Math.round(r.reset / c.windowMs) - 1 };
}
if (upstash === undefined) await limiter.get('warm-up');
else await decide('warm-up', Date.now());
if (c.mode === 'regions') {
  while (limiter.table.cutOff().length > 0) await new Promise((r) => setTimeout(r, 20));
}
process.send({ ready: true });
await new Promise((r) => process.once('message', r));

const latencies = [];
/** key → window → admitted; for the hot phase every admission's time too. */
const counts = new Map();
const times = [];
const pending = [];
const start = Date.now();
const cpu0 = process.cpuUsage();
const loopDelay = monitorEventLoopDelay({ resolution: 5 });
loopDelay.enable();
let fired = 0;
// DIAG=1: a timeline per 250 ms (decisions answered, their slowest, pushes sent/failed, counts pushed,
// the event loop's worst delay), to tell where a stall comes from.
const timeline = [];
const slot = () => {
  const i = Math.floor((Date.now() - start) / 250);
  while (timeline.length <= i) timeline.push({ answered: 0, slowest: 0, loopMax: 0 });
  return timeline[i];
};
let lastTick = performance.now();
const stats0 = () => (c.mode === 'regions' ? { ...limiter.table.stats } : {});
const sampler = process.env.DIAG
  ? setInterval(() => {
      const s = slot();
      const now = performance.now();
      s.loopMax = Math.max(s.loopMax, now - lastTick - 10);
      lastTick = now;
      const st = stats0();
      s.messages = st.messages;
      s.failed = st.failedMessages;
      s.entries = st.entries;
    }, 10)
  : undefined;
await new Promise((resolve) => {
  const t = setInterval(() => {
    const elapsed = Date.now() - start;
    if (elapsed >= c.durationMs) {
      clearInterval(t);
      resolve();
      return;
    }
    const due = Math.floor((elapsed * c.ratePerSec) / 1000) - fired;
    for (let i = 0; i < due; i++) {
      fired++;
      const key = c.keys === 1 ? 'hot' : `k${Math.floor(Math.random() * c.keys)}`;
      const sent = Date.now();
      const t0 = performance.now();
      pending.push(
        decide(key, sent).then((d) => {
          const ms = performance.now() - t0;
          latencies.push(ms);
          if (sampler) {
            const s = slot();
            s.answered++;
            s.slowest = Math.max(s.slowest, ms);
          }
          if (!d.allowed) return;
          const w = d.w;
          let m = counts.get(key);
          if (m === undefined) counts.set(key, (m = new Map()));
          m.set(w, (m.get(w) ?? 0) + 1);
          if (c.keys === 1) times.push([Date.now(), w]);
        }),
      );
    }
  }, 5);
});
await Promise.all(pending);
clearInterval(sampler);
await Promise.all(syncs);
const cpu = process.cpuUsage(cpu0);
const stats = c.mode === 'regions' ? { ...limiter.table.stats } : undefined;
if (c.mode === 'regions') await limiter.table.close();
latencies.sort((a, b) => a - b);
const q = (p) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))];
loopDelay.disable();
process.send(
  {
    loopP99Ms: loopDelay.percentile(99) / 1e6,
    fired,
    decided: latencies.length,
    p50: q(0.5),
    p99: q(0.99),
    cpuMs: (cpu.user + cpu.system) / 1000,
    counts: [...counts].map(([k, m]) => [k, [...m]]),
    times,
    stats,
    timeline,
    ms: Date.now() - start,
  },
  () => process.exit(0),
);
