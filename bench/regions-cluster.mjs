#!/usr/bin/env node
// What a Redis Cluster as a region's home, or as a peer, costs the 'regions' strategy, beside a single
// redis-server, in one run: three regions (eu and us on a redis-server each, ap on a Cluster of 3 masters
// and 3 replicas), 80 ms each way between regions (a DelayProxy per directed link, one per node of ap's
// Cluster). Per round: eu and ap each decide KEYS distinct keys (cost 1, 64 at a time); reported: each
// home's decision p50/p99 (the Cluster's a call per hash slot), and, for eu's pushes, the bytes each link
// carried and how long until the peer's Redis held every count (us: a call per 1,000 keys; ap: a call per
// slot). Repeated ROUNDS times; medians.
// Usage: node --import tsx bench/regions-cluster.mjs [keys=10000] [rounds=3]
import { hostSpeedLine } from './lib/host-speed.mjs';
import { World } from '../packages/testing/src/regions-kit.ts';
import { Limiter } from '../packages/sluice/src/limiter.ts';

const KEYS = Number(process.argv[2] ?? 10_000);
const ROUNDS = Number(process.argv[3] ?? 3);
const NAMES = ['eu', 'us', 'ap'];
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];

const speed = hostSpeedLine();
const world = new World(NAMES, 80, ['ap']);
await world.start();
await world.ready();

const linkBytes = (from, to) => {
  let n = 0;
  for (const [k, p] of world.links) if (k === `${from}>${to}` || k.startsWith(`${from}>${to}>`)) n += p.bytes.up;
  return n;
};

const rows = [];
for (let round = 0; round < ROUNDS; round++) {
  const prefix = `bench-regions-cluster:${Date.now()}:${round}`;
  const ls = NAMES.map(
    (n) =>
      new Limiter({
        policy: { name: 'world', algorithm: 'fixed-window', limit: 100, window: 60_000 },
        store: world.store(n, prefix, { exchangeMs: 50, peerTimeoutMs: 2000 }, 1000),
      }),
  );
  await world.ready();
  await Promise.all(ls.map((l) => l.get('warm')));
  await new Promise((r) => setTimeout(r, 1500));
  const row = { round };
  for (const [region, name] of [
    [0, 'eu'],
    [2, 'ap'],
  ]) {
    const times = [];
    const before = { us: linkBytes(name, 'us'), ap: linkBytes(name, 'ap'), eu: linkBytes(name, 'eu') };
    const t0 = performance.now();
    for (let i = 0; i < KEYS; i += 64) {
      await Promise.all(
        Array.from({ length: Math.min(64, KEYS - i) }, (_, j) => {
          const s = performance.now();
          return ls[region].limit(`${name}-k${i + j}`).then(() => times.push(performance.now() - s));
        }),
      );
    }
    row[`${name} decide p50`] = pct(times, 0.5);
    row[`${name} decide p99`] = pct(times, 0.99);
    // Until each peer's Redis holds this region's count of every key.
    for (const peer of NAMES.filter((n) => n !== name)) {
      const c = world.home(peer);
      const last = `${prefix}:{${name}-k${KEYS - 1}}:world:rg`;
      const first = `${prefix}:{${name}-k0}:world:rg`;
      const has = async (k) => Object.keys(await c.hgetall(k)).some((f) => f.endsWith(`:${name}`));
      const end = performance.now() + 60_000;
      let ok = false;
      while (performance.now() < end && !(ok = (await has(first)) && (await has(last))))
        await new Promise((r) => setTimeout(r, 10));
      row[`${name}>${peer} drained ms`] = ok ? performance.now() - t0 : Number.NaN;
      row[`${name}>${peer} bytes`] = linkBytes(name, peer) - before[peer];
      c.disconnect();
    }
  }
  rows.push(row);
  await Promise.all(ls.map((l) => l.table.close()));
  console.log(JSON.stringify(row));
}
const med = Object.fromEntries(Object.keys(rows[0]).map((k) => [k, median(rows.map((r) => r[k]))]));
console.log(speed);
console.log(`medians of ${ROUNDS} rounds, ${KEYS} keys:`);
for (const [k, v] of Object.entries(med)) if (k !== 'round') console.log(`  ${k}: ${Number(v).toFixed(1)}`);
await world.stop();
process.exit(0);
