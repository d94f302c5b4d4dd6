// Local-sync's bound under adversarial timing, in one process: nodes share a scripted Redis whose every
// call is applied and answered after random delays, many callers per node decide at once, and no window
// admits more than the bound of local-sync.ts, with every term computed from the views the scripted
// Redis handed out (not from what the nodes say about themselves). Time is injected; only the event
// loop's order varies.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compilePolicy, makeDecision } from '../core/index.js';
import { seededRandom } from '../support/random.js';
import { checkLocalSyncOptions, localAllowance, LocalSyncTable } from './local-sync.js';
import type { ScriptRunner } from './runner.js';

const turns = (n: number) =>
  new Promise<void>((resolve) => {
    const step = (left: number) => (left <= 0 ? resolve() : setImmediate(() => step(left - 1)));
    step(n);
  });

interface View {
  count: number;
  nodes: number;
}

async function trial(seed: number, nodes: number, limit: number, options: { threshold: number; safetyFactor: number }) {
  const o = { intervalMs: 1e9, ...options };
  const random = seededRandom(seed);
  // The script's state: one window (0), never ending.
  let count = 0;
  const heard = new Set<string>();
  /** Per node, the views its calls were answered with, in the order the script applied them. */
  const views = new Map<string, View[]>();
  /** Per node, how many of its calls were applied before the count first reached the limit. */
  let beforeLimit: Map<string, number> | undefined;
  const runner: ScriptRunner = {
    clientClock: true,
    keyFor: (k) => k,
    fallback: () =>
      makeDecision({
        allowed: false,
        limit,
        remaining: 0,
        resetAfterMs: 0,
        retryAfterMs: 1,
        delayMs: 0,
        policy: 'p',
        reason: 'store-error',
      }),
    async run(_name, _keys, args) {
      await turns(Math.floor(random() * 6)); // on the way to Redis
      const [node, add, , from, cost] = args as [string, string, string, string, string];
      if (from === '0') count += Number(add); // a count from window 0, the only one; -1 is a first call
      heard.add(node);
      let admitted = 0;
      if (Number(cost) > 0 && count + Number(cost) <= limit) {
        count += Number(cost);
        admitted = 1;
      }
      if (count >= limit && beforeLimit === undefined) {
        beforeLimit = new Map([...views].map(([n, v]) => [n, v.length]));
      }
      if (!views.has(node)) views.set(node, []);
      views.get(node)!.push({ count, nodes: heard.size });
      const reply = [count, 0, 1_000_000, admitted, heard.size];
      await turns(Math.floor(random() * 6)); // on the way back
      return reply;
    },
  };
  const policy = compilePolicy({ name: 'p', algorithm: 'fixed-window', limit, window: 1_000_000 });
  let admitted = 0;
  const tables = Array.from({ length: nodes }, () => new LocalSyncTable({ policy, clock: () => 0, runner }, o));
  await Promise.all(
    tables.flatMap((t) =>
      Array.from({ length: 5 }, async () => {
        for (let i = 0; i < 60; i++) {
          await turns(Math.floor(random() * 3));
          if ((await t.decide('k', 1)).allowed) admitted++;
        }
      }),
    ),
  );
  await Promise.all(tables.map((t) => t.close()));
  // The bound: what lands after the count reaches the limit was admitted by node i on the view of its
  // last call applied before then, or of the call before that (calls are serial per node, so those are
  // the only views it can still admit on), and fitted that view's allowance.
  let bound = limit;
  for (const [node, v] of views) {
    const a = beforeLimit?.get(node) ?? v.length;
    const terms = [v[a - 1], v[a - 2]]
      .filter((x): x is View => x !== undefined)
      .map((x) => localAllowance(limit, x.count, x.nodes, o));
    bound += Math.max(0, ...terms);
  }
  return { admitted, bound };
}

test('local-sync overshoot stays within its documented bound under any interleaving', { timeout: 60_000 }, async () => {
  let overshoots = 0;
  for (let seed = 1; seed <= 80; seed++) {
    const nodes = 2 + (seed % 4);
    const threshold = 1 + (seed % 5);
    const safetyFactor = 1 + (seed % 3);
    const limit = 40;
    const { admitted, bound } = await trial(seed, nodes, limit, { threshold, safetyFactor });
    assert.ok(
      admitted <= bound,
      `seed ${seed}: ${admitted} admitted > the bound ${bound} (limit ${limit}, ${nodes} nodes, threshold ${threshold}, safety ${safetyFactor})`,
    );
    assert.ok(
      admitted <= limit + nodes * threshold,
      `seed ${seed}: ${admitted} admitted > ${limit} + ${nodes} × ${threshold}`,
    );
    assert.ok(admitted >= limit, `seed ${seed}: only ${admitted} admitted with demand far above ${limit}`);
    if (admitted > limit) overshoots++;
  }
  assert.ok(overshoots > 0, 'some trials do overshoot, so the bound is exercised');
});

test('local-sync allowance: the remainder over nodes × safety, capped at the threshold, 0 near the limit', () => {
  const o = checkLocalSyncOptions(undefined, 10_000);
  assert.deepEqual(o, { intervalMs: 100, threshold: 25, safetyFactor: 2 });
  assert.equal(localAllowance(10_000, 0, 4, o), 25);
  assert.equal(localAllowance(10_000, 9_900, 4, o), 12); // 100 left over 4 × 2
  assert.equal(localAllowance(10_000, 9_993, 4, o), 0); // 7 left < 8: decided in Redis
  assert.equal(localAllowance(10_000, 10_000, 4, o), 0);
  assert.throws(
    () => checkLocalSyncOptions({ safetyFactor: 0.5 }, 10),
    /'localSync.safetyFactor' must be a number of at least 1, got 0.5/,
  );
  assert.throws(
    () => checkLocalSyncOptions({ safety: 2 }, 10),
    /'localSync' must be an object such as \{ intervalMs, threshold, safetyFactor \}/,
  );
});
