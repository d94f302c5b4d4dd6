// Next.js benchmark: route handlers on the Node runtime of one `next build` + `next start` app
// (bench/next-app), each limiter on one hot key with a limit no run reaches, driven by wrk on loopback:
// no limiter, sluice withRateLimit on the memory store (draft-8 headers, and headers 'none'), and on
// RedisStore, against @upstash/ratelimit's fixed window, sliding window and token bucket on the same
// local Redis (its two script calls sent through ioredis, as it cannot reach Upstash's REST API here).
// Configs are interleaved per rep, each a 2 s wrk warm-up then `wrk -t2 -c64 -d<s>s`; the server's CPU
// time per request is read from /proc. Medians of the reps, with min-max.
// Usage: node --conditions=sluice-source --import tsx bench/next.ts [reps=3] [seconds=5]   (needs Debian's wrk)
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, OwnRedis } from '../packages/testing/src/harness.js';
import { processCpuSeconds as cpuSeconds } from './lib/process-cpu.mjs';
import { buildSluice, ROOT, startNextApp } from '../packages/sluice/test/support/next-app.js';

const REPS = Number(process.argv[2] ?? 3);
const SECONDS = Number(process.argv[3] ?? 5);
const CONFIGS: Record<string, string> = {
  bare: 'no limiter',
  'sluice-memory': 'sluice withRateLimit, GCRA, memory store, draft-8 headers',
  'sluice-memory-none': "sluice withRateLimit, GCRA, memory store, headers 'none'",
  'sluice-fixed': 'sluice withRateLimit, fixed window, RedisStore',
  'upstash-fixed': '@upstash/ratelimit fixedWindow, same Redis',
  'sluice-sliding': 'sluice withRateLimit, sliding window, RedisStore',
  'upstash-sliding': '@upstash/ratelimit slidingWindow, same Redis',
  'sluice-token': 'sluice withRateLimit, token bucket, RedisStore',
  'upstash-token': '@upstash/ratelimit tokenBucket, same Redis',
};
const PAIRS: Array<[string, string]> = [
  ['sluice-memory', 'bare'],
  ['sluice-memory-none', 'bare'],
  ['sluice-fixed', 'upstash-fixed'],
  ['sluice-sliding', 'upstash-sliding'],
  ['sluice-token', 'upstash-token'],
];

const redis = new OwnRedis(await freePort());
await redis.start();
const sluice = buildSluice();
const app = await startNextApp(join(ROOT, 'bench/next-app'), sluice, { REDIS_URL: `redis://127.0.0.1:${redis.port}` });

function wrk(path: string, seconds: number): { rps: number; requests: number; non2xx: number } {
  const out = execFileSync('wrk', ['-t2', '-c64', `-d${seconds}s`, `${app.url}/${path}`], { encoding: 'utf8' });
  const requests = Number(/(\d+) requests in/.exec(out)![1]);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  return { rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)![1]), requests, non2xx };
}

const results: Record<string, Array<{ rps: number; cpuUsPerRequest: number }>> = {};
try {
  for (const path of Object.keys(CONFIGS)) {
    const r = await fetch(`${app.url}/${path}`);
    if (r.status !== 200) throw new Error(`/${path} answered ${r.status}: ${await r.text()}`);
  }
  for (let rep = 0; rep < REPS; rep++) {
    const order = Object.keys(CONFIGS);
    if (rep % 2 === 1) order.reverse();
    for (const path of order) {
      wrk(path, 2);
      const cpu0 = cpuSeconds(app.pid);
      const r = wrk(path, SECONDS);
      const cpu = cpuSeconds(app.pid) - cpu0;
      if (r.non2xx > 0) throw new Error(`/${path}: ${r.non2xx} responses were not 2xx`);
      (results[path] ??= []).push({ rps: r.rps, cpuUsPerRequest: (cpu * 1e6) / r.requests });
      console.error(
        `rep ${rep + 1} ${path}: ${r.rps.toFixed(0)} req/s, ${((cpu * 1e6) / r.requests).toFixed(0)} µs CPU/request`,
      );
    }
  }
} catch (e) {
  console.error(app.output());
  throw e;
} finally {
  await app.stop();
  rmSync(sluice, { recursive: true, force: true });
  await redis.destroy();
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const next = JSON.parse(readFileSync(join(ROOT, 'node_modules/next/package.json'), 'utf8')).version;
const lines = [
  `<!-- node --conditions=sluice-source --import tsx bench/next.ts ${REPS} ${SECONDS}; ${new Date().toISOString()}; Next ${next}; Node ${process.version}; wrk -t2 -c64 -d${SECONDS}s on loopback -->`,
  '',
  '| route handler (Node runtime) | req/s median (min – max) | server CPU µs / request |',
  '|---|---|---|',
  ...Object.entries(CONFIGS).map(([c, name]) => {
    const rs = results[c]!.map((r) => r.rps);
    return `| ${name} | ${median(rs).toFixed(0)} (${Math.min(...rs).toFixed(0)} – ${Math.max(...rs).toFixed(0)}) | ${median(results[c]!.map((r) => r.cpuUsPerRequest)).toFixed(0)} |`;
  }),
  '',
  '| pair | throughput, ratio of medians | CPU per request, ratio | CPU per request, difference |',
  '|---|---|---|---|',
  ...PAIRS.map(([a, b]) => {
    const rate = (c: string) => median(results[c]!.map((r) => r.rps));
    const cpu = (c: string) => median(results[c]!.map((r) => r.cpuUsPerRequest));
    return `| ${CONFIGS[a]} vs ${CONFIGS[b]} | ${((rate(a) / rate(b)) * 100).toFixed(1)} % | ${((cpu(a) / cpu(b)) * 100).toFixed(1)} % | ${(cpu(a) - cpu(b)).toFixed(0)} µs |`;
  }),
];
console.log(lines.join('\n'));
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
writeFileSync(join(ROOT, `bench/results/next-${stamp}.md`), `${lines.join('\n')}\n`);
writeFileSync(join(ROOT, `bench/results/next-${stamp}.json`), `${JSON.stringify(results, null, 1)}\n`);
console.error(`wrote bench/results/next-${stamp}.{md,json}`);
