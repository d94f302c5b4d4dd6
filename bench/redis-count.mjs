// Counts redis-server instructions per RedisStore decision, which no load on the machine disturbs.
// Start a private redis-server under callgrind, then point this at it:
//   valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.%p redis-server --port 6399 --save '' --appendonly no &
//   REDIS_PORT=6399 REDIS_PID=<its pid> [CALLGRIND_OUT=/tmp/cg.<pid>] [PING=0] [KEYSPACE=n] node --conditions=sluice-source --import tsx bench/redis-count.mjs [algorithm=token-bucket] [inflight=1] [n1=500] [n2=2500]
// KEYSPACE=n cycles over n keys instead (a key then holds state from its earlier decisions, as in
// bench/redis.mjs's 100,000 keys: a sliding log grows with them).
// algorithm: any sluice algorithm, 'multi' (gcra 1000/h + fixed-window 100,000/day on one key, as bench/redis.mjs),
// or 'envoy' (Envoy ratelimit's pipelined INCRBY key 1 + EXPIRE key 60, its peer row).
// For each of n1 and n2 decisions (each on keys never used before, so every key is new, as in the
// benchmark), it zeroes the counters, runs the decisions at `inflight` calls in flight through a Limiter,
// and dumps; the difference of the two totals over n2 - n1 cancels what does not scale with decisions.
// Also measures PING the same way, for the floor. SLUICE_SRC=<another checkout>/src counts that version.
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { Redis } from 'ioredis';

const src = process.env.SLUICE_SRC ?? new URL('../packages/sluice/src', import.meta.url).href;
const { Limiter } = await import(`${src}/index.ts`);
const { RedisStore } = await import(`${src}/stores/redis/index.ts`);

const [algorithm = 'token-bucket', inflightArg = '1', n1Arg = '500', n2Arg = '2500'] = process.argv.slice(2);
const INFLIGHT = Number(inflightArg);
const N1 = Number(n1Arg);
const N2 = Number(n2Arg);
const PORT = Number(process.env.REDIS_PORT);
const KEYSPACE = process.env.KEYSPACE === undefined ? undefined : Number(process.env.KEYSPACE);
const PID = process.env.REDIS_PID;
/** callgrind's --callgrind-out-file, with %p expanded: dumps go to <OUT>.<n>. */
const OUT = process.env.CALLGRIND_OUT ?? `/tmp/cg.${PID}`;

if (PORT === 6379 || !PID)
  throw new Error('REDIS_PORT must name a private redis-server (it is flushed) and REDIS_PID its callgrind pid');
const client = new Redis({ host: '127.0.0.1', port: PORT });
await once(client, 'ready');
// The same keys and the same Lua heap every run (a forced GC step's cost grows with the libraries loaded).
await client.flushall();
await client.call('FUNCTION', 'FLUSH');
const store = new RedisStore({
  client,
  prefix: 'slc',
  timeoutMs: 60_000,
  ...(process.env.MAX_BATCH ? { maxBatch: Number(process.env.MAX_BATCH) } : {}),
});
const limiter =
  algorithm === 'envoy'
    ? undefined
    : new Limiter(
        algorithm === 'multi'
          ? {
              policies: [
                { name: 'h', algorithm: 'gcra', limit: 1000, window: '1h' },
                { name: 'd', algorithm: 'fixed-window', limit: 100_000, window: '1d' },
              ],
              store,
            }
          : { policy: { name: 'p', algorithm, limit: 1000, window: '1h' }, store },
      );

let next = 0;
const decide = async () => {
  const d = await limiter.limit(`k${KEYSPACE === undefined ? next++ : next++ % KEYSPACE}`);
  if (d.reason !== undefined || !d.allowed) throw new Error(`unexpected decision ${JSON.stringify(d)}`);
};
const ping = async () => {
  await client.ping();
};

async function drive(op, n) {
  let left = n;
  const loop = async () => {
    while (left > 0) {
      left--;
      await op();
    }
  };
  await Promise.all(Array.from({ length: INFLIGHT }, loop));
}

/**
 * Dumps the counters (callgrind_control waits for the dump) and returns the instructions since the last
 * zeroing, less the active expiry of keys and the rest of serverCron: they follow wall time, not
 * decisions, and wall time under valgrind swings with the machine's load.
 */
function collected() {
  execFileSync('callgrind_control', ['-d', PID], { encoding: 'utf8' });
  const file = execFileSync('sh', ['-c', `ls -t ${OUT}.* | head -1`], { encoding: 'utf8' }).trim();
  const text = execFileSync('callgrind_annotate', ['--inclusive=yes', '--tree=caller', '--threshold=100', file], {
    encoding: 'utf8',
  });
  const n = (s) => Number(s.replaceAll(',', ''));
  const total = n(/^([\d,]+) .*PROGRAM TOTALS/m.exec(text)[1]);
  // serverCron's own line, and activeExpireCycle's cost when called from beforeSleep (from serverCron it
  // is inside serverCron's).
  const cron = /^\s*([\d,]+) \([^)]*\)\s+\*\s+\?\?\?:serverCron /m.exec(text);
  const fast =
    /^\s*([\d,]+) \([^)]*\)\s+<\s+\?\?\?:beforeSleep \(\d+x\)[^\n]*\n(?:[^\n]*<[^\n]*\n)*[^\n]*\*\s+\?\?\?:activeExpireCycle /m.exec(
      text,
    );
  return total - (cron ? n(cron[1]) : 0) - (fast ? n(fast[1]) : 0);
}
const zero = () => execFileSync('callgrind_control', ['-z', PID], { encoding: 'utf8' });

async function count(name, op, ops) {
  await drive(op, 200); // warm: the function library is loaded, the connection is hot
  zero();
  await drive(op, N1);
  const c1 = collected();
  zero();
  await drive(op, N2);
  const c2 = collected();
  const per = (c2 - c1) / (N2 - N1);
  const calls = ops === undefined ? undefined : ops();
  console.log(
    `${name} at ${INFLIGHT} in flight: ${c1} instructions for ${N1}, ${c2} for ${N2}: ${per.toFixed(0)} per decision${calls ? `; ${calls}` : ''}`,
  );
  return per;
}

if (process.env.PING !== '0') await count('PING', ping);
if (algorithm === 'envoy') {
  // Envoy ratelimit's counter, the peer row of bench/redis.mjs: INCRBY key 1 + EXPIRE key 60 pipelined.
  let e = 0;
  await count('envoy INCRBY + EXPIRE', async () => {
    const key = `env:{k${e++}}_1`;
    await client.pipeline().incrby(key, 1).expire(key, 60).exec();
  });
  client.disconnect();
  process.exit(0);
}
const s0 = { ...store.stats };
await count(
  `sluice ${algorithm}`,
  decide,
  () => `${store.stats.calls - s0.calls} script calls for ${store.stats.operations - s0.operations} operations`,
);
client.disconnect();
