// Counts Node's instructions per lone RedisStore decision and per ioredis PING, which load on the machine
// barely moves (timings here swing by 2-3x; these counts repeat to a few percent). Run it under callgrind,
// once per (case, n), against a private redis-server (any port but 6379: it writes keys under 'slc:'):
//   redis-server --port 6390 --save '' --appendonly no --daemonize yes
//   valgrind --tool=callgrind --callgrind-out-file=/dev/null node --single-threaded --predictable \
//     bench/redis-node-count.mjs <ping|fcall|decide|inproc> <n>      (REDIS_PORT=6390 by default)
// and take the difference of the "Collected" totals at two n over their difference: startup, warm-up
// and teardown cancel. `node bench/redis-node-count.mjs table [n1=2000] [n2=6000]` does that for each case
// (CASES=ping,fcall,decide by default). 'fcall' is the limiter's own FCALL sent straight through ioredis;
// 'inproc' is the decision on a client that answers at once, without Redis.
// SLUICE_DIST=<another build's dist> counts that build (the default is this checkout's dist, as a user runs it).
// ALGORITHM=gcra counts GCRA (token bucket by default); WARM=<n> makes n calls before the N (default 1000;
// they cancel in the difference, and V8 optimizes for longer than 1000).
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { Redis } from 'ioredis';

const [mode = 'table', a = '2000', b = '6000'] = process.argv.slice(2);
const PORT = Number(process.env.REDIS_PORT ?? 6390);
if (PORT === 6379) throw new Error('REDIS_PORT must name a private redis-server, not the shared 6379');

if (mode === 'table') {
  const n1 = Number(a);
  const n2 = Number(b);
  const total = (what, n) => {
    const r = execFileSync(
      'sh',
      [
        '-c',
        `valgrind --tool=callgrind --callgrind-out-file=/dev/null "${process.execPath}" --single-threaded --predictable "${new URL(import.meta.url).pathname}" ${what} ${n} 2>&1 >/dev/null`,
      ],
      { encoding: 'utf8', env: process.env },
    );
    const m = /Collected : (\d+)/.exec(r);
    if (!m) throw new Error(`no total for ${what} ${n}:\n${r}`);
    return Number(m[1]);
  };
  for (const what of (process.env.CASES ?? 'ping,fcall,decide').split(',')) {
    const c1 = total(what, n1);
    const c2 = total(what, n2);
    console.log(
      `${what}: ${c1} instructions at n=${n1}, ${c2} at n=${n2}: ${((c2 - c1) / (n2 - n1)).toFixed(0)} per ${what}`,
    );
  }
  process.exit(0);
}

const N = Number(a);
const WARM = Number(process.env.WARM ?? 1000);
const dist = process.env.SLUICE_DIST;
const base = dist === undefined ? new URL('../packages/sluice/dist', import.meta.url).href : `file://${dist}`;
const { Limiter } = await import(`${base}/index.js`);
const { RedisStore } = await import(`${base}/stores/redis/index.js`);
// 'inproc' decides on a client shaped like ioredis that answers every FCALL at once with an allowed verdict
// (no socket, no Redis): the store's own JavaScript, which counts repeat to within 0.1 k.
const ALLOWED = 1000 * 2 ** 32 + 3600; // remaining 999, resetAfterMs 3600 (driver.lua's packed reply)
const client =
  mode === 'inproc'
    ? {
        status: 'ready',
        evalsha: async () => ALLOWED,
        eval: async () => ALLOWED,
        call: async () => ALLOWED,
        on() {},
        disconnect() {},
      }
    : new Redis({ host: '127.0.0.1', port: PORT });
if (mode !== 'inproc') await once(client, 'ready');
// The same work whatever the case: both load the library and make the limiter; only the loop differs.
const store = new RedisStore({ client, prefix: 'slc', timeoutMs: 60_000 });
const limiter = new Limiter({
  policy: { name: 'p', algorithm: process.env.ALGORITHM ?? 'token-bucket', limit: 1000, window: '1h' },
  store,
});
let next = 0;
await limiter.limit('warm'); // loads the function library
// 'fcall' sends the limiter's own FCALL straight through ioredis: the cost of the command itself, without
// the store around it (the table's private script is reached from JavaScript for this).
const fn = limiter.table.script.fn;
const runs = {
  ping: () => client.ping(),
  fcall: () => client.call('FCALL', fn, 1, `slc:{k${next++ % 100_000}}:p`),
  decide: () => limiter.limit(`k${next++ % 100_000}`),
};
runs.inproc = runs.decide;
const run = runs[mode];
if (run === undefined) throw new Error(`unknown case '${mode}': ping, fcall, decide, inproc or table`);
for (let i = 0; i < WARM; i++) await run();
for (let i = 0; i < N; i++) await run();
client.disconnect();
