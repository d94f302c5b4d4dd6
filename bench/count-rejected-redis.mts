// `npx tsx bench/count-rejected-redis.mts [reps=5] [calls=20000]`: what Envoy's counting (countRejected,
// issue 49) costs Redis per decision, next to the plain fixed window in the same run, on a redis-server this
// bench starts on a spare port (so no other client's calls are in its counters). One call in flight (the
// lone-decision path) and 64 in flight (batched calls), on 300 keys mostly over their limit, and never.
// Reported: Redis's own µs per script call (INFO commandstats, usec_per_call of evalsha/fcall) and the
// script calls made, medians of the reps, alternating plain and counting.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { Limiter } from '../packages/sluice/src/index.js';
import { RedisStore } from '../packages/sluice/src/stores/redis/index.js';

const [repsText = '5', callsText = '20000'] = process.argv.slice(2);
const reps = Number(repsText);
const calls = Number(callsText);

const port = await new Promise<number>((resolve) => {
  const s = createServer();
  s.listen(0, '127.0.0.1', () => {
    const p = (s.address() as { port: number }).port;
    s.close(() => resolve(p));
  });
});
const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-redis-'));
const server = spawn(
  'redis-server',
  ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
  { stdio: 'ignore' },
);
for (let i = 0; i < 100; i++) {
  try {
    execFileSync('redis-cli', ['-p', String(port), 'ping'], { stdio: 'ignore' });
    break;
  } catch {
    await new Promise((r) => setTimeout(r, 100));
  }
}
const io = new Redis({ port, host: '127.0.0.1' });

function stats(text: string): { calls: number; usec: number } {
  let n = 0;
  let usec = 0;
  for (const line of text.split('\n')) {
    const m = /^cmdstat_(evalsha|fcall|eval|fcall_ro):calls=(\d+),usec=(\d+)/.exec(line);
    if (m) {
      n += Number(m[2]);
      usec += Number(m[3]);
    }
  }
  return { calls: n, usec };
}

async function measure(
  countRejected: boolean,
  inFlight: number,
  rep: number,
  limit: number,
): Promise<{ usecPerCall: number; scriptCalls: number }> {
  const store = new RedisStore({
    client: io,
    prefix: `b${rep}${countRejected ? 'c' : 'p'}${inFlight}-${limit}`,
    timeoutMs: 5000,
    onError: 'closed',
  });
  const limiter = new Limiter({
    policy: { algorithm: 'fixed-window', limit, window: '1h', ...(countRejected ? { countRejected: true } : {}) },
    store,
  });
  // Warm: load the script; keys k0..k299, each hit until a third are over.
  await limiter.limit('warm');
  await io.config('RESETSTAT');
  let i = 0;
  const worker = async () => {
    while (i < calls) {
      const k = i++ % 300;
      await limiter.limit(`k${k}`);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  const s = stats(await io.info('commandstats'));
  return { usecPerCall: s.usec / s.calls, scriptCalls: s.calls };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const rows: string[] = [];
const load0 = loadavg()[0]!;
// limit 10: after the first 3,000 decisions every key is over (most decisions are denials, which counting
// writes); limit 10^9: none is (only the script's path differs).
for (const limit of [10, 1e9]) {
  for (const inFlight of [1, 64]) {
    const out: Record<string, { usecPerCall: number; scriptCalls: number }[]> = { plain: [], counting: [] };
    for (let r = 0; r < reps; r++) {
      out.plain!.push(await measure(false, inFlight, r, limit));
      out.counting!.push(await measure(true, inFlight, r, limit));
    }
    for (const mode of ['plain', 'counting']) {
      const xs = out[mode]!;
      rows.push(
        `| ${limit === 10 ? '10 (mostly denied)' : '10^9 (all allowed)'} | ${inFlight} | ${mode} | ${median(xs.map((x) => x.usecPerCall)).toFixed(2)} | ${median(xs.map((x) => x.scriptCalls))} |`,
      );
    }
  }
}
const text = [
  `# countRejected on Redis: ${calls.toLocaleString('en')} decisions, ${reps} reps, medians; load average ${load0.toFixed(2)} at start, ${loadavg()[0]!.toFixed(2)} at end`,
  '',
  `\`npx tsx bench/count-rejected-redis.mts ${reps} ${calls}\``,
  '',
  '| limit per key (300 keys) | in flight | fixed window | Redis µs per script call | script calls |',
  '|---|---|---|---|---|',
  ...rows,
  '',
].join('\n');
process.stdout.write(text);
writeFileSync(
  new URL(`./results/count-rejected-redis-${new Date().toISOString().replace(/[:.]/g, '-')}.md`, import.meta.url),
  text,
);
io.disconnect();
server.kill('SIGTERM');
await new Promise((r) => server.once('exit', r));
rmSync(dir, { recursive: true, force: true });
