// The regions bound, term by term, on an injected clock: three RegionsTables on a scripted world (each
// home Redis a map, every push delivered exactly D ms after it is sent, exchanges run by hand every E
// ms), random traffic over 60 seeded runs. Every window admits at most limit + what the other regions
// admitted in the S = E + D before its last admission (table.ts, "The bound"); a world whose merges are
// lost (regions deciding alone) fails the same check.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Limiter } from '../../limiter.js';
import type { ScriptRunner } from '../../stores/script-runner.js';
import type { Store } from '../../stores/store.js';
import type { RegionsTable } from './table.js';

const NAMES = ['eu', 'us', 'ap'];

function rng(seed: number): () => number {
  let x = seed * 2654435761 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return ((x >>> 0) % 1_000_000) / 1_000_000;
  };
}

interface Delivery {
  at: number;
  to: number;
  keys: string[];
  args: string[];
  resolve: (v: unknown) => void;
}

/** Runs one seeded world; returns the windows whose total broke the bound (none, if it holds). */
async function world(seed: number, merge: 'max' | 'lost'): Promise<string[]> {
  const rand = rng(seed);
  const limit = 20 + Math.floor(rand() * 60);
  const windowMs = 1000;
  const E = 10 + Math.floor(rand() * 50);
  const D = 5 + Math.floor(rand() * 100);
  let now = 0;
  const homes = NAMES.map(() => new Map<string, Map<string, number>>());
  const heard = NAMES.map(() => new Map<string, number>());
  const pending: Delivery[] = [];
  const hash = (r: number, k: string) => homes[r]!.get(k) ?? homes[r]!.set(k, new Map()).get(k)!;
  const runner = (r: number): ScriptRunner => ({
    clientClock: true,
    keyFor: (key, suffix) => `${key}:${suffix}`,
    fallback: () => assert.fail('no fallback in a scripted world'),
    isCluster: () => false,
    async run(name, keys, args) {
      if (name === 'regions-heard') return [now, ...[...heard[r]!].flat()];
      assert.equal(name, 'regions-decide');
      const t = Number(args[3]);
      const w = Math.floor(t / windowMs);
      const peers = Number(args[4]);
      const out: number[] = [];
      keys.forEach((k, i) => {
        const h = hash(r, k);
        let own = h.get(`${w}:${args[0]}`) ?? 0;
        let others = 0;
        for (let p = 0; p < peers; p++)
          others += Math.max(h.get(`${w}:${args[5 + 2 * p]}`) ?? 0, Number(args[6 + 2 * p]));
        const cost = Number(args[5 + 2 * peers + 2 * i]);
        let admitted = 0;
        if (cost > 0 && own + others + cost <= limit) {
          own += cost;
          h.set(`${w}:${args[0]}`, own);
          admitted = 1;
        }
        out.push(own, others, w, (w + 1) * windowMs - t, admitted);
      });
      return out;
    },
    runOn(peer, name, keys, args) {
      assert.equal(name, 'regions-merge');
      return new Promise((resolve) => pending.push({ at: now + D, to: NAMES.indexOf(peer.name), keys, args, resolve }));
    },
  });
  const limiters = NAMES.map((name, r) => {
    const regions = {
      name,
      peers: Object.fromEntries(NAMES.filter((n) => n !== name).map((n) => [n, {}])),
      exchangeMs: 1e9,
      partitionAfterMs: 2e9,
    };
    const store: Store = {
      bind: () => assert.fail('regions binds through the runner'),
      runner: () => runner(r),
      regions,
    };
    return new Limiter({
      policy: { name: 'p', algorithm: 'fixed-window', limit, window: windowMs },
      store,
      clock: () => now,
    });
  });
  const tables = limiters.map((l) => l.table as RegionsTable);
  await Promise.all(limiters.map((l) => l.get('warm-up'))); // starts each exchange, learns who it heard
  const offsets = NAMES.map(() => Math.floor(rand() * E));
  const rates = NAMES.map(() => rand() * 0.6);
  const admissions: { at: number; w: number; r: number }[] = [];
  for (now = 1; now < 3 * windowMs; now++) {
    for (const d of pending.filter((p) => p.at <= now)) {
      pending.splice(pending.indexOf(d), 1);
      heard[d.to]!.set(d.args[0]!, now);
      d.keys.slice(1).forEach((k, i) => {
        const field = `${d.args[3 + 2 * i]}:${d.args[0]}`;
        const h = hash(d.to, k);
        const count = Number(d.args[4 + 2 * i]);
        if (merge === 'max') h.set(field, Math.max(h.get(field) ?? 0, count));
      });
      d.resolve(now);
    }
    tables.forEach((t, r) => {
      if ((now + offsets[r]!) % E === 0) t.exchange();
    });
    for (let r = 0; r < 3; r++) {
      if (rand() < rates[r]!) {
        const d = await limiters[r]!.limit('k');
        if (d.allowed) admissions.push({ at: now, w: Math.floor(now / windowMs), r });
      }
    }
  }
  const bad: string[] = [];
  for (const w of new Set(admissions.map((a) => a.w))) {
    const inW = admissions.filter((a) => a.w === w);
    const last = inW[inW.length - 1]!;
    const late = inW.filter((a) => a.r !== last.r && a.at > last.at - (E + D)).length;
    if (inW.length > limit + late)
      bad.push(`seed ${seed} window ${w}: ${inW.length} > ${limit} + ${late} (E ${E}, D ${D})`);
  }
  return bad;
}

test("regions bound: every window admits at most limit + the other regions' admissions in the last exchangeMs + delay", async () => {
  const bad: string[] = [];
  for (let seed = 1; seed <= 60; seed++) bad.push(...(await world(seed, 'max')));
  assert.deepEqual(bad, []);
});

test('regions bound: the check fails a world whose pushes are lost (each region alone)', async () => {
  const bad: string[] = [];
  for (let seed = 1; seed <= 10; seed++) bad.push(...(await world(seed, 'lost')));
  assert.ok(bad.length > 0);
});
