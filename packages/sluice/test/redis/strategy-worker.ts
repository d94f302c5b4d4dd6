// A node for strategies.test.ts: runs `loops` concurrent request loops on one key with the given strategy
// for `ms`, and appends the window index of every admitted request to `out` with a synchronous write, so
// the record survives a SIGKILL. Time is Date.now() on the client (RedisStore clock: 'client'), which
// every process on this host shares, so an admission's window is known exactly.
import { closeSync, openSync, writeSync } from 'node:fs';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { Limiter } from '../../src/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';

const [url, prefix, strategy, limit, windowMs, loops, ms, out, extra] = process.argv.slice(2) as string[];
const client = new Redis(url!);
await once(client, 'ready');
const store = new RedisStore({ client, prefix, timeoutMs: 5000, onError: 'closed', clock: 'client' });
const W = Number(windowMs);
const limiter = new Limiter({
  policy: { name: 'p', algorithm: 'fixed-window', limit: Number(limit), window: W },
  store,
  clock: () => Date.now(),
  strategy: strategy as 'lease' | 'local-sync' | 'atomic',
  ...(extra ? JSON.parse(extra) : {}),
});
const fd = openSync(out!, 'a');
const end = Date.now() + Number(ms);
let admitted = 0;
let decisions = 0;
process.send?.('ready');
await Promise.all(
  Array.from({ length: Number(loops) }, async () => {
    while (Date.now() < end) {
      const issued = Date.now();
      const d = await limiter.limit('hot');
      const answered = Date.now();
      decisions++;
      if (d.allowed) {
        admitted++;
        // Decided at some t in [issued, answered], in the window that ends at t + resetAfterMs (a multiple of
        // W: the store runs on this clock). Written as the range of windows that can be: one window unless
        // the call took a window or more (a stalled host), which the test then resolves.
        const first = Math.ceil((issued + d.resetAfterMs) / W) - 1;
        const last = Math.ceil((answered + d.resetAfterMs) / W) - 1;
        writeSync(fd, `${first} ${last}\n`);
      }
      if (d.reason !== undefined) throw new Error(`fell back: ${d.reason}`);
      await new Promise((r) => setImmediate(r));
    }
  }),
);
closeSync(fd);
await (limiter.table as { close?: () => Promise<void> }).close?.();
process.send?.({ admitted, decisions, calls: store.stats.calls });
client.disconnect();
