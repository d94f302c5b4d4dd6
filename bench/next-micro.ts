// In-process cost of sluice/next per request, without Next's server or the network: a route handler called
// bare and wrapped by withRateLimit (memory store, GCRA, each header style), on Web Requests, as Next calls
// it; then, on a redis-server of its own, withRateLimit on RedisStore against @upstash/ratelimit's three
// algorithms (its two script calls sent through ioredis: it cannot reach Upstash's REST API here), 64 calls
// in flight. Interleaved rounds; medians with min-max. It isolates what the limiter adds from the noise of
// a Next server on a shared host (bench/next.ts measures that whole path).
// Usage: node --conditions=sluice-source --import tsx bench/next-micro.ts [rounds=5]   (writes bench/results/next-micro-<time>.md)
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Ratelimit } from '@upstash/ratelimit';
import { Redis } from 'ioredis';
import { withRateLimit } from '../packages/sluice/src/middleware/next/index.js';
import { RedisStore } from '../packages/sluice/src/stores/redis/index.js';
import { freePort, OwnRedis } from '../packages/testing/src/harness.js';

const ROUNDS = Number(process.argv[2] ?? 5);
const ok = () => new Response('ok');
const LIMIT = 100_000_000; // per hour: beyond any run, within what GCRA resolves
const key = () => 'bench';
const request = new Request('http://localhost/api', { headers: { 'x-real-ip': '203.0.113.7' } });

type Handler = (r: Request, c: unknown) => Response | Promise<Response>;
const memory: Record<string, Handler> = {
  bare: ok,
  "sluice, headers 'none'": withRateLimit(ok, {
    policy: { name: 'p', algorithm: 'gcra', limit: LIMIT, window: '1h' },
    ipHeader: 'x-real-ip',
    headers: 'none',
  }),
  "sluice, 'draft-8'": withRateLimit(ok, {
    policy: { name: 'p', algorithm: 'gcra', limit: LIMIT, window: '1h' },
    ipHeader: 'x-real-ip',
  }),
  "sluice, 'draft-7'": withRateLimit(ok, {
    policy: { name: 'p', algorithm: 'gcra', limit: LIMIT, window: '1h' },
    ipHeader: 'x-real-ip',
    headers: 'draft-7',
  }),
};

/** CPU ns per call of `h`, `n` calls one after another. */
async function cpuPerCall(h: Handler, n: number): Promise<number> {
  const c0 = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const r = await h(request, {});
    if (r.status !== 200) throw new Error(`status ${r.status}`);
  }
  const c = process.cpuUsage(c0);
  return ((c.user + c.system) * 1000) / n;
}

/** Calls per second of `h` with `inflight` loops for `ms`, and the process's CPU µs per call. */
async function rate(h: Handler, inflight: number, ms: number): Promise<{ perSec: number; cpuUs: number }> {
  let n = 0;
  const end = performance.now() + ms;
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: inflight }, async () => {
      while (performance.now() < end) {
        const r = await h(request, {});
        if (r.status !== 200) throw new Error(`status ${r.status}`);
        n++;
      }
    }),
  );
  const c = process.cpuUsage(c0);
  return { perSec: n / ((performance.now() - t0) / 1000), cpuUs: (c.user + c.system) / n };
}

const own = new OwnRedis(await freePort());
await own.start();
const io = new Redis({ port: own.port });
const store = new RedisStore({ client: io, prefix: 'bench', timeoutMs: 1000 });
// @upstash/ratelimit's scripts open with `#!lua flags=allow-key-locking`, which Redis 7.0 refuses: sent
// without that line, their SHA1 mapped to what was sent, so each call after the first is one EVALSHA.
const shas = new Map<string, string>();
const sha1 = (s: string) => createHash('sha1').update(s).digest('hex');
const shim = {
  evalsha: (sha: string, keys: string[], args: unknown[]) =>
    io.evalsha(shas.get(sha) ?? sha, keys.length, ...keys, ...(args as string[])),
  eval: (script: string, keys: string[], args: unknown[]) => {
    const sent = script.replace(/^#!lua[^\n]*\n/, '');
    shas.set(sha1(script), sha1(sent));
    return io.eval(sent, keys.length, ...keys, ...(args as string[]));
  },
};
const upstash = (limiter: ReturnType<typeof Ratelimit.fixedWindow>): Handler => {
  const r = new Ratelimit({ redis: shim as never, limiter, prefix: 'upstash', analytics: false });
  return async () => ((await r.limit('bench')).success ? ok() : new Response('limited', { status: 429 }));
};
const sluice = (algorithm: 'fixed-window' | 'sliding-window' | 'token-bucket'): Handler =>
  withRateLimit(ok, { policy: { name: 'p', algorithm, limit: LIMIT, window: '1h' }, key, store, headers: 'draft-7' });
const redis: Record<string, Handler> = {
  'sluice fixed window': sluice('fixed-window'),
  '@upstash/ratelimit fixedWindow': upstash(Ratelimit.fixedWindow(LIMIT, '1 h')),
  'sluice sliding window': sluice('sliding-window'),
  '@upstash/ratelimit slidingWindow': upstash(Ratelimit.slidingWindow(LIMIT, '1 h')),
  'sluice token bucket': sluice('token-bucket'),
  '@upstash/ratelimit tokenBucket': upstash(Ratelimit.tokenBucket(LIMIT, '1 h', LIMIT)),
};

const cpu: Record<string, number[]> = {};
const rates: Record<string, Array<{ perSec: number; cpuUs: number }>> = {};
try {
  for (const h of [...Object.values(memory), ...Object.values(redis)]) await h(request, {}); // load scripts
  for (let round = 0; round < ROUNDS; round++) {
    for (const h of Object.values(memory)) await cpuPerCall(h, 20_000); // warm
    for (const [name, h] of Object.entries(memory)) (cpu[name] ??= []).push(await cpuPerCall(h, 200_000));
    const order = Object.entries(redis);
    if (round % 2 === 1) order.reverse(); // so that no limiter always runs first after the memory rounds
    for (const [name, h] of order) (rates[name] ??= []).push(await rate(h, 64, 3000));
    console.error(
      `round ${round + 1}: ${Object.entries(cpu)
        .map(([k, v]) => `${k} ${v.at(-1)!.toFixed(0)} ns`)
        .join(', ')}; ${Object.entries(rates)
        .map(([k, v]) => `${k} ${v.at(-1)!.perSec.toFixed(0)}/s`)
        .join(', ')}`,
    );
  }
} finally {
  io.disconnect();
  await own.destroy();
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const range = (xs: number[], f: (x: number) => string) =>
  `${f(median(xs))} (${f(Math.min(...xs))} – ${f(Math.max(...xs))})`;
const bare = median(cpu.bare!);
const out: string[] = [];
const log = (line: string) => {
  out.push(line);
  console.log(line);
};
log(
  `<!-- node --conditions=sluice-source --import tsx bench/next-micro.ts ${ROUNDS}; ${new Date().toISOString()}; Node ${process.version} -->`,
);
log('\n| route handler, in process, memory store | CPU ns / request | sluice adds |\n|---|---|---|');
for (const [name, xs] of Object.entries(cpu))
  log(
    `| ${name} | ${range(xs, (x) => x.toFixed(0))} | ${name === 'bare' ? '–' : `${(median(xs) - bare).toFixed(0)} ns`} |`,
  );
log('\n| route handler on Redis, 64 in flight | calls/s | client CPU µs / call |\n|---|---|---|');
for (const [name, xs] of Object.entries(rates))
  log(
    `| ${name} | ${range(
      xs.map((x) => x.perSec),
      (x) => x.toFixed(0),
    )} | ${median(xs.map((x) => x.cpuUs)).toFixed(1)} |`,
  );
const r = (n: string) => median(rates[n]!.map((x) => x.perSec));
log(
  `\nsluice ÷ @upstash/ratelimit: fixed window ${(r('sluice fixed window') / r('@upstash/ratelimit fixedWindow')).toFixed(2)}×, sliding window ${(r('sluice sliding window') / r('@upstash/ratelimit slidingWindow')).toFixed(2)}×, token bucket ${(r('sluice token bucket') / r('@upstash/ratelimit tokenBucket')).toFixed(2)}×`,
);
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
writeFileSync(new URL(`./results/next-micro-${stamp}.md`, import.meta.url), `${out.join('\n')}\n`);
console.error(`wrote bench/results/next-micro-${stamp}.md`);
process.exit(0);
