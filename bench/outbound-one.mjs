/**
 * @file One outbound measurement in a fresh process; prints one JSON line.
 *
 *   node bench/outbound-one.mjs overhead <impl> [calls]        scheduling cost per call, limit never binding
 *   node bench/outbound-one.mjs upstream <impl> <url> <calls>  N GETs at once against bench/lib/upstream.mjs
 *
 * Every impl is configured for the upstream's published limit (200/s, bucket of 50) in the way its docs
 * suggest; see CONFIGS. sluice imports the built package (dist/), the code users get.
 */
import Bottleneck from 'bottleneck';
import PQueue from 'p-queue';
import { Gate, limitedFetch } from '../packages/outbound/dist/index.js';

const RATE = 200;
const BURST = 50;

/** How each impl is set up for "200 per second, bucket of 50", and how one call goes through it. */
const CONFIGS = {
  // sluice with the upstream's rate and half its bucket: the other half absorbs 125 ms of delay between admission and arrival (a loaded 2-vCPU VM shows tens of ms).
  sluice: () => {
    const gate = new Gate({
      policy: { algorithm: 'token-bucket', limit: RATE, window: '1s', burst: 25 },
      maxQueue: 1_000_000,
    });
    const f = limitedFetch(gate, 'api');
    return { fetch: (url) => f(url), run: (fn) => gate.run('api', fn) };
  },
  // the same without the safety margin (marginMs 0): the peer that shows what the default 20 ms costs.
  'sluice-nomargin': () => {
    const gate = new Gate({
      policy: { algorithm: 'token-bucket', limit: RATE, window: '1s', burst: 25 },
      maxQueue: 1_000_000,
      marginMs: 0,
    });
    const f = limitedFetch(gate, 'api');
    return { fetch: (url) => f(url), run: (fn) => gate.run('api', fn) };
  },
  // sluice with exactly the upstream's bucket: no headroom, so 429s are possible and retried.
  'sluice-exact': () => {
    const gate = new Gate({
      policy: { algorithm: 'token-bucket', limit: RATE, window: '1s', burst: BURST },
      maxQueue: 1_000_000,
    });
    const f = limitedFetch(gate, 'api');
    return { fetch: (url) => f(url), run: (fn) => gate.run('api', fn) };
  },
  // bottleneck's token bucket: +50 every 250 ms up to 50 (its heartbeat is 250 ms by default).
  'bottleneck-bucket': () => {
    const b = new Bottleneck({
      reservoir: BURST,
      reservoirIncreaseAmount: BURST,
      reservoirIncreaseInterval: (1000 * BURST) / RATE,
      reservoirIncreaseMaximum: BURST,
    });
    return { fetch: (url) => b.schedule(() => fetch(url)), run: (fn) => b.schedule(fn) };
  },
  // bottleneck spacing calls evenly: one per 1000/200 = 5 ms.
  'bottleneck-mintime': () => {
    const b = new Bottleneck({ minTime: 1000 / RATE });
    return { fetch: (url) => b.schedule(() => fetch(url)), run: (fn) => b.schedule(fn) };
  },
  // bottleneck's "N per interval": 200 every second.
  'bottleneck-refresh': () => {
    const b = new Bottleneck({ reservoir: RATE, reservoirRefreshAmount: RATE, reservoirRefreshInterval: 1000 });
    return { fetch: (url) => b.schedule(() => fetch(url)), run: (fn) => b.schedule(fn) };
  },
  // p-queue's fixed interval: 200 per 1000 ms.
  'pqueue-1s': () => {
    const q = new PQueue({ interval: 1000, intervalCap: RATE });
    return { fetch: (url) => q.add(() => fetch(url)), run: (fn) => q.add(fn) };
  },
  // p-queue with the bucket's size per its refill time: 50 per 250 ms.
  'pqueue-250ms': () => {
    const q = new PQueue({ interval: (1000 * BURST) / RATE, intervalCap: BURST });
    return { fetch: (url) => q.add(() => fetch(url)), run: (fn) => q.add(fn) };
  },
};

/** For overhead: the same libraries with a limit that never binds, so only the scheduling is measured. */
const UNBOUND = {
  sluice: () => {
    const gate = new Gate({ policy: { algorithm: 'token-bucket', limit: 1e12, window: '1s' }, maxQueue: 1_000_000 });
    return (fn) => gate.run('api', fn);
  },
  bottleneck: () => {
    const b = new Bottleneck({ reservoir: 1e12, reservoirRefreshAmount: 1e12, reservoirRefreshInterval: 1000 });
    return (fn) => b.schedule(fn);
  },
  pqueue: () => {
    const q = new PQueue({ interval: 1000, intervalCap: 1e12 });
    return (fn) => q.add(fn);
  },
  none: () => (fn) => fn(),
};

const noop = async () => 1;

/**
 * Per-call cost in rounds: sequential rounds await one call at a time, concurrent rounds submit a batch
 * at once. The median round is kept, so a GC pause or a neighbour's burst on a shared VM hits one round,
 * not the figure.
 */
async function overhead(impl, calls) {
  const run = UNBOUND[impl]();
  const ROUNDS = 10;
  const per = Math.max(1, Math.floor(calls / ROUNDS));
  const sequential = async () => {
    for (let i = 0; i < per; i++) await run(noop);
  };
  const concurrent = async () => {
    const all = new Array(per);
    for (let i = 0; i < per; i++) all[i] = run(noop);
    await Promise.all(all);
  };
  const rounds = async (f) => {
    const ns = [];
    for (let r = 0; r < ROUNDS; r++) {
      const t0 = performance.now();
      await f();
      ns.push(((performance.now() - t0) * 1e6) / per);
    }
    return ns.sort((a, b) => a - b)[ROUNDS >> 1];
  };
  await sequential(); // warm-up
  await concurrent();
  return {
    impl,
    mode: 'overhead',
    calls: per * ROUNDS,
    sequentialNsPerCall: await rounds(sequential),
    concurrentNsPerCall: await rounds(concurrent),
  };
}

async function upstream(impl, url, calls) {
  const client = CONFIGS[impl]();
  await fetch(`${url}/warm`).then((r) => r.text()); // one connection up; it spends one token, as for every impl
  await new Promise((r) => setTimeout(r, 300)); // and the bucket refills
  const t0 = performance.now();
  const statuses = await Promise.all(
    Array.from({ length: calls }, (_, i) =>
      client.fetch(`${url}/call?i=${i}`).then(
        async (r) => (await r.text(), r.status),
        (e) => String(e),
      ),
    ),
  );
  const elapsedMs = performance.now() - t0;
  const count = (s) => statuses.filter((x) => x === s).length;
  return {
    impl,
    mode: 'upstream',
    calls,
    elapsedMs,
    ok: count(200),
    refused: count(429),
    errors: statuses.filter((x) => typeof x === 'string').length,
  };
}

const [mode, impl, a, b] = process.argv.slice(2);
const out = mode === 'overhead' ? await overhead(impl, Number(a ?? 50_000)) : await upstream(impl, a, Number(b));
console.log(JSON.stringify(out));
process.exit(0);
