// What Redis CPU a login's round trips cost at 1 in flight, with no sluice in the way: plain ioredis
// against a redis-server this script starts on a spare port. Each iteration is one of:
// - mget: one MGET of 4 absent keys (a check, alone);
// - mget-then-setnx: that MGET, then, once it answered, a SET ... PX ... NX of a 100-byte value (the
//   guard's first login: a check, then a record);
// - two-pipelines: two MULTI GET PTTL EXEC pipelines sent together (rate-limiter-flexible's recipe on a
//   success: its two `get`s).
// Per iteration: Redis CPU (used_cpu_sys + used_cpu_user) and the reads Redis made (total_reads_processed).
// It shows that Redis's cost at 1 in flight is per round trip waited for, not per command: two requests
// sent together cost about one, two in sequence cost two.
//
// Run: node --conditions=sluice-source --import tsx bench/redis-round-trips.ts [iterations=3000] [reps=5]
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { freePort, OwnRedis } from '../packages/testing/src/harness.js';

const MODES = ['mget', 'mget-then-setnx', 'two-pipelines'] as const;
type Mode = (typeof MODES)[number];

async function stats(info: Redis): Promise<{ cpu: number; reads: number }> {
  const text = await info.info('all');
  let cpu = 0;
  for (const m of text.matchAll(/^used_cpu_(?:sys|user):([\d.]+)/gm)) cpu += Number(m[1]);
  return { cpu, reads: Number(/^total_reads_processed:(\d+)/m.exec(text)![1]) };
}

async function iteration(c: Redis, mode: Mode, key: string): Promise<void> {
  if (mode === 'two-pipelines') {
    await Promise.all([
      c.multi().get(`${key}:p`).pttl(`${key}:p`).exec(),
      c.multi().get(`${key}:q`).pttl(`${key}:q`).exec(),
    ]);
    return;
  }
  await c.mget(`${key}:a`, `${key}:b`, `${key}:c`, `${key}:d`);
  if (mode === 'mget-then-setnx') await c.set(`${key}:r`, 'x'.repeat(100), 'PX', 600_000, 'NX');
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

const [N = 3000, REPS = 5] = process.argv.slice(2).map(Number);
const server = new OwnRedis(await freePort());
await server.start();
const c = new Redis({ port: server.port, host: '127.0.0.1' });
const info = new Redis({ port: server.port, host: '127.0.0.1' });
await Promise.all([once(c, 'ready'), once(info, 'ready')]);
const cpu = new Map<Mode, number[]>(MODES.map((m) => [m, []]));
const reads = new Map<Mode, number[]>(MODES.map((m) => [m, []]));
try {
  for (let i = 0; i < 1000; i++) await iteration(c, 'mget-then-setnx', `warm:${i}`);
  for (let rep = 0; rep < REPS; rep++) {
    for (const mode of MODES) {
      const a = await stats(info);
      for (let i = 0; i < N; i++) await iteration(c, mode, `${rep}:${mode}:${i}`);
      const b = await stats(info);
      cpu.get(mode)!.push(((b.cpu - a.cpu) * 1e6) / N);
      reads.get(mode)!.push((b.reads - a.reads - 1) / N); // less the second INFO
    }
  }
} finally {
  c.disconnect();
  info.disconnect();
  await server.destroy();
}
console.log(`Redis CPU per iteration at 1 in flight, ${N} iterations, ${REPS} reps (medians)\n`);
console.log('| iteration | Redis CPU µs | reads by Redis |');
console.log('|---|---|---|');
for (const mode of MODES)
  console.log(`| ${mode} | ${median(cpu.get(mode)!).toFixed(1)} | ${median(reads.get(mode)!).toFixed(2)} |`);
