// What the dashboard holds for a config of many rules, every one of them busy in every interval (the worst
// case): heap after HISTORY samples, and the bytes a new /events stream is sent first (the history).
//
//   node --expose-gc --conditions=sluice-source --import tsx bench/dashboard-memory.ts [rules...]     (default 10000 50000)
//
// Run it in two trees (this build and the one before) for a before/after; the figures go to docs/benchmarks.md.
import { Dashboard, HISTORY } from '../packages/serve/src/server/operator/dashboard.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc');
const counts = process.argv.slice(2).map(Number);
for (const n of counts.length > 0 ? counts : [10_000, 50_000]) {
  const stats = Array.from({ length: n }, (_, i) => ({ rule: `api.rule_${i}`, withinLimit: 0, overLimit: 0 }));
  gc();
  const before = process.memoryUsage().heapUsed;
  const d = new Dashboard(() => ({ allStats: () => stats }) as never, 1000);
  const t0 = performance.now();
  for (let s = 0; s < HISTORY; s++) {
    for (let i = 0; i < n; i++) stats[i]!.withinLimit += 1 + (i % 7);
    (d as unknown as { sample(): void }).sample();
  }
  const sampleMs = (performance.now() - t0) / HISTORY;
  gc();
  const heapMb = (process.memoryUsage().heapUsed - before) / 2 ** 20;
  const history = JSON.stringify((d as unknown as { history: unknown[] }).history).length;
  console.log(
    JSON.stringify({
      rules: n,
      samples: HISTORY,
      heapMb: Number(heapMb.toFixed(1)),
      historyBytes: history,
      sampleMs: Number(sampleMs.toFixed(1)),
    }),
  );
  d.stop();
}
