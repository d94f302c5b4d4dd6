// Local-sync's bound under adversarial timing, in one process: nodes share a scripted Redis whose every
// call is applied and answered after random delays, many callers per node decide at once, and no window
// ever admits more than limit + nodes × threshold. Time is injected; only the event loop's order varies.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compilePolicy, LimitDecision } from '../core/index.js';
import { seededRandom } from '../demo/random.js';
import { LocalSyncTable } from './local-sync.js';
import type { ScriptRunner } from './runner.js';

const turns = (n: number) => new Promise<void>((resolve) => {
  const step = (left: number) => (left <= 0 ? resolve() : setImmediate(() => step(left - 1)));
  step(n);
});

async function trial(seed: number, nodes: number, threshold: number, limit: number): Promise<number> {
  const random = seededRandom(seed);
  let count = 0; // the script's state: one window, never ending
  const runner: ScriptRunner = {
    clientClock: true,
    keyFor: (k) => k,
    fallback: () => new LimitDecision(false, limit, 0, 0, 1, 0, 'p', undefined, 'store-error'),
    async run(_name, _keys, args) {
      await turns(Math.floor(random() * 6)); // on the way to Redis
      if (args[2] === '0') count += Number(args[0]); // a count from window 0, the only one; -1 is the first sync
      const reply = [count, 0, 1_000_000];
      await turns(Math.floor(random() * 6)); // on the way back
      return reply;
    },
  };
  const policy = compilePolicy({ name: 'p', algorithm: 'fixed-window', limit, window: 1_000_000 });
  let admitted = 0;
  const tables = Array.from({ length: nodes }, () => new LocalSyncTable({ policy, clock: () => 0, runner }, { intervalMs: 1e9, threshold }));
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
  return admitted;
}

test('local-sync: no interleaving admits more than limit + nodes × threshold', { timeout: 60_000 }, async () => {
  let worst = 0;
  for (let seed = 1; seed <= 60; seed++) {
    const nodes = 2 + (seed % 4);
    const threshold = 1 + (seed % 5);
    const limit = 40;
    const admitted = await trial(seed, nodes, threshold, limit);
    assert.ok(admitted <= limit + nodes * threshold, `seed ${seed}: ${admitted} admitted > ${limit} + ${nodes} × ${threshold}`);
    assert.ok(admitted >= limit, `seed ${seed}: only ${admitted} admitted with demand far above ${limit}`);
    worst = Math.max(worst, (admitted - limit) / (nodes * threshold));
  }
  assert.ok(worst > 0, 'the trials do overshoot, so the bound is exercised');
});
