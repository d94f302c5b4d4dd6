// The 'regions' strategy with a Redis Cluster as a region's home: eu and us on a redis-server each, ap on
// a Cluster of 3 masters (and 3 replicas), every link between regions through a DelayProxy adding 80 ms
// each way (one per node of ap's Cluster). ap decides a call per hash slot on its own Cluster; eu and us
// push to it a call per slot, with the "heard" stamp in a call of its own; ap pushes to them as to any
// standalone peer. The world's admitted total per window stays within the bound of regions.test.ts, and
// after the exchange every home holds every region's count of every key, of many slots, exactly once.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Limiter } from '../../src/limiter.js';
import type { RegionsTable } from '../../src/distributed/regions/table.js';
import { slotOf } from '../../src/stores/redis/keys.js';
import { drive, windowsOf, World } from '../../../testing/src/regions-kit.js';
import { runPrefix } from '../../../testing/src/harness.js';

const NAMES = ['eu', 'us', 'ap'];
const DELAY_MS = 80;
const EXCHANGE_MS = 20;
const WINDOW_MS = 1000;
const LIMIT = 300;
const TICK_MS = 10;

const world = new World(NAMES, DELAY_MS, ['ap']);
before(() => world.start());
after(() => world.stop());

function limiters(prefix: string, windowMs = WINDOW_MS): Limiter[] {
  for (const p of world.links.values()) p.maxDelayMs = 0;
  return NAMES.map(
    (n) =>
      new Limiter({
        policy: { name: 'world', algorithm: 'fixed-window', limit: LIMIT, window: windowMs },
        store: world.store(n, prefix, { exchangeMs: EXCHANGE_MS }, 1000),
      }),
  );
}
const tableOf = (l: Limiter) => l.table as RegionsTable;

async function until(cond: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Starts every region's exchange (a peek) and waits until every region hears from every other. */
async function connected(ls: Limiter[], key: string): Promise<void> {
  await world.ready();
  await Promise.all(ls.map((l) => l.get(key)));
  await until(() => ls.every((l) => tableOf(l).cutOff().length === 0), 10_000, 'every region to hear from the others');
}

/** S of the bound as this run had it (regions.test.ts, sOf). */
function sOf(ls: Limiter[]): number {
  return (
    Math.max(...ls.map((l) => tableOf(l).stats.longestGapMs)) +
    Math.max(...[...world.links.values()].map((p) => p.maxDelayMs)) +
    5
  );
}

test('regions on a Cluster home: a client hammering all three regions, one a Cluster, stays within the bound', async () => {
  const ls = limiters(runPrefix('regions-cluster-hammer'));
  await connected(ls, 'hammer');
  const { admissions } = await drive(ls, 'hammer', 3 * WINDOW_MS, () => [4, 4, 4], WINDOW_MS, TICK_MS);
  const S = sOf(ls);
  const ws = windowsOf(admissions, S, LIMIT, NAMES.length);
  for (const w of ws) {
    assert.ok(w.total <= w.bound, `${JSON.stringify(w)}, S ${S.toFixed(0)} ms`);
    assert.ok(w.total < 1.5 * LIMIT, JSON.stringify(w));
  }
  // ap (the Cluster) decided, and was limited by the others' counts as they were by its.
  const full = ws.slice(1, -1);
  assert.ok(full.length >= 1);
  for (const w of full) {
    assert.ok(w.byRegion[2]! > 0, `ap admits: ${JSON.stringify(w)}`);
    assert.ok(w.total >= 0.9 * LIMIT, `a full window admits about the limit: ${JSON.stringify(w)}`);
  }
  for (const l of ls) assert.equal(tableOf(l).stats.fallbacks, 0);
  console.log('cluster hammer', S.toFixed(0), JSON.stringify(ws));
  await Promise.all(ls.map((l) => tableOf(l).close()));
});

test('regions on a Cluster home: keys of many slots are decided and exchanged, each home holding every count once', async () => {
  const prefix = runPrefix('regions-cluster-slots');
  // A window of 10 s, so that the drive (600 ms) keeps to one on a loaded host: a decision in the next
  // window drops the earlier window's fields, and the sum below would miss them.
  const windowMs = 10_000;
  const ls = limiters(prefix, windowMs);
  await connected(ls, 'warm');
  const KEYS = 400;
  const keyOf = (n: number) => `k${n % KEYS}`;
  const slots = new Set(Array.from({ length: KEYS }, (_, n) => slotOf(keyOf(n))));
  assert.ok(slots.size > 350, `${slots.size} slots`);
  const left = windowMs - (Date.now() % windowMs);
  if (left < 3000) await new Promise((r) => setTimeout(r, left + 20));
  // Every region offers a request per key a window, or so: far under the limit, so every one is admitted.
  const { admissions } = await drive(ls, keyOf, 600, () => [20, 20, 20], windowMs, TICK_MS);
  for (const l of ls) assert.equal(tableOf(l).stats.fallbacks, 0);
  assert.ok(admissions.length > 1000);
  assert.equal(new Set(admissions.map((a) => a.window)).size, 1, 'the drive kept to one window');
  await Promise.all(ls.map((l) => tableOf(l).close()));
  await new Promise((r) => setTimeout(r, 3 * DELAY_MS));
  for (const l of ls) assert.equal(tableOf(l).stats.failedMessages, 0);
  // Every home's hash of every key: each region's count there is that region's own count (merged, not added).
  const homes = NAMES.map((n) => world.home(n));
  await world.ready();
  try {
    const checked = { keys: 0, fields: 0 };
    for (let k = 0; k < KEYS; k++) {
      const hashes = await Promise.all(homes.map((h) => h.hgetall(`${prefix}:{${keyOf(k)}}:world:rg`)));
      NAMES.forEach((n, r) => {
        for (const [field, own] of Object.entries(hashes[r]!)) {
          if (!field.endsWith(`:${n}`)) continue;
          checked.fields++;
          for (const [o, h] of hashes.entries()) assert.equal(h[field], own, `${NAMES[o]}'s ${field} of ${keyOf(k)}`);
        }
      });
      checked.keys++;
    }
    // Every region's admissions are in some home's counts: their sum over keys and windows.
    const total = (
      await Promise.all(Array.from({ length: KEYS }, (_, k) => homes[0]!.hgetall(`${prefix}:{${keyOf(k)}}:world:rg`)))
    ).reduce((n, h) => n + Object.entries(h).reduce((m, [f, v]) => m + (f === 'w' ? 0 : Number(v)), 0), 0);
    assert.equal(total, admissions.length);
    console.log('cluster slots', slots.size, checked);
  } finally {
    for (const h of homes) h.disconnect();
  }
});
