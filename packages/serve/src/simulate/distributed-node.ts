// One node of `sluice simulate distributed`, run as a child process: offers its share of a shape's
// traffic to a Limiter on a real Redis, one request per macrotask (as requests reach a server, one per
// I/O callback, so the atomic store gets no batching a real server would not get), and writes every
// decision to a file with a synchronous write, so the record survives a SIGKILL.
import { closeSync, openSync, writeSync } from 'node:fs';
import { Limiter, RedisStore, seededRandom } from 'sluice/kit';
import { shape, WINDOW_MS, type ShapeName } from './distributed-shapes.js';

interface Config {
  url: string;
  prefix: string;
  strategy: 'atomic' | 'local-sync' | 'lease';
  shape: ShapeName;
  node: number;
  nodes: number;
  ms: number;
  out: string;
  localSync: { threshold?: number; intervalMs?: number } | undefined;
  lease: { ttlMs?: number } | undefined;
}

const config = JSON.parse(process.argv[2]!) as Config;
const s = shape(config.shape);
const { Redis } = await import('ioredis');
const client = new Redis(config.url, { lazyConnect: true });
await client.connect();
// Atomic runs on Redis time, as in production. With each node's own clock ('client'), two nodes' calls can
// reach Redis out of order across a window boundary, and the key's window then moves back: an
// over-admission of the harness's clocks, not of sluice, which made 'atomic is exact' fail now and then on
// a loaded machine. On one host Redis TIME and Date.now() read the same clock, which windowOf relies on.
// Lease and local-sync keep the nodes' clock: windowOf places their decisions by the deadlines each node
// computes on it, and a run on Redis time misplaced them by several percent.
const store = new RedisStore({
  client,
  prefix: config.prefix,
  timeoutMs: 1000,
  onError: 'closed',
  clock: config.strategy === 'atomic' ? 'server' : 'client',
});
const limiter = new Limiter({
  policy: { name: 'p', algorithm: 'fixed-window', limit: s.limit, window: WINDOW_MS },
  store,
  clock: () => Date.now(),
  strategy: config.strategy,
  ...(config.strategy === 'local-sync' && config.localSync !== undefined ? { localSync: config.localSync } : {}),
  ...(config.strategy === 'lease' && config.lease !== undefined ? { lease: config.lease } : {}),
});
const fd = openSync(config.out, 'a');
const random = seededRandom(1000 + config.node);
const latencies: number[] = [];
let decisions = 0;
let storeErrors = 0; // decisions answered by onError ('closed'): refused, timed out or failed calls
let inFlight = 0;

/**
 * The window a decision was made in, read off `resetAfterMs`. The decision was made at some time t in
 * [issued, now], and t + resetAfterMs is its window's end E, a multiple of the window (atomic's scripts
 * read Redis TIME, the same clock as Date.now() when Redis runs on this host, in whole ms, so t ≥ issued;
 * lease and local-sync run on this process's Date.now(): RedisStore clock 'client').
 * - atomic: t is the script's time, anywhere in [issued, now]; with replies faster than a window, E is the
 *   first multiple at or after issued + resetAfterMs (reading the clock on the reply instead would put a
 *   decision made just before a boundary into the next window).
 * - lease and local-sync: t is when the node decided, locally or on the reply that decided it, which is
 *   when the promise settles: E is the last multiple at or before now + resetAfterMs. (The rule above
 *   misreads a decision that waited behind a slow call longer than a window, on a loaded machine; and a
 *   reply that came after its window ended says 0, which this rule reads right.)
 */
function windowOf(issued: number, now: number, resetAfterMs: number): number {
  if (config.strategy === 'atomic') return Math.ceil((issued + resetAfterMs) / WINDOW_MS) - 1;
  return Math.floor((now + resetAfterMs) / WINDOW_MS) - 1;
}

function one(): void {
  const key = s.keys === 1 ? 0 : Math.floor(random() * s.keys);
  const t0 = performance.now();
  const issued = Date.now();
  inFlight++;
  void limiter.limit(`k${key}`).then((d) => {
    inFlight--;
    latencies.push(performance.now() - t0);
    decisions++;
    if (d.reason === 'store-error') storeErrors++;
    writeSync(fd, `${key} ${windowOf(issued, Date.now(), d.resetAfterMs)} ${d.allowed ? 1 : 0}\n`);
  });
}

process.once('message', async (m: { startAt: number }) => {
  while (Date.now() < m.startAt) await new Promise((r) => setTimeout(r, 1));
  const perMs = s.rate / config.nodes / 1000;
  const end = m.startAt + config.ms;
  let due = 0;
  let last = Date.now();
  while (Date.now() < end) {
    const now = Date.now();
    if (s.on(now % 1000)) due += (now - last) * perMs;
    last = now;
    while (due >= 1) {
      due--;
      await new Promise((r) => setImmediate(r)); // its own macrotask, as a request arriving on a socket
      one();
    }
    await new Promise((r) => setTimeout(r, 1));
  }
  while (inFlight > 0) await new Promise((r) => setTimeout(r, 5));
  closeSync(fd);
  await (limiter.table as { close?: () => Promise<void> }).close?.();
  const step = Math.max(1, Math.floor(latencies.length / 20_000)); // an even sample keeps the message small
  const sample = latencies.filter((_, i) => i % step === 0);
  process.send!(
    { decisions, storeErrors, calls: store.stats.calls, operations: store.stats.operations, sample },
    () => {
      client.disconnect();
      process.exit(0);
    },
  );
});
process.send!('ready');
