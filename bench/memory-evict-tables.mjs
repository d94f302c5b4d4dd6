// `node bench/memory-evict-tables.mjs [cycles=10] [rules=10000] [maxKeys=5000]`: what eviction at --max-keys
// costs after reloads, the memory store alone, next to its peer in the same run (BEFORE_DIST=<another
// build's dist/>, e.g. main's). Issue #45 finding 4: after 10 reloads that changed 10,000 limits, a key flood
// at --max-keys 5000 ran at 376 req/s against 2,139 on a fresh process, as eviction filtered and sorted
// every table ever bound.
//
// Per build: one MemoryStore({ maxKeys }); each cycle makes `rules` limiters (as a reload does, a rule per
// limiter), each deciding one key, and then drops the cycle before: this build closes their limiters (what
// the service now does at the swap), main had no way to. Then a flood: a live limiter of 1 a minute gets
// new keys (each denying once admitted, so its own table has nothing to give and the store looks at the
// others). Reported: flood decisions per second (CPU time of this process, median of 5 runs of 2,000 keys).
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuUsage } from 'node:process';
import { loadavg } from 'node:os';
import { mkdirSync, writeFileSync } from 'node:fs';

const DIST = fileURLToPath(new URL('../packages/sluice/dist/', import.meta.url));
const [cycles, rules, maxKeys] = [
  Number(process.argv[2] ?? 10),
  Number(process.argv[3] ?? 10_000),
  Number(process.argv[4] ?? 5000),
];

async function run(dist) {
  const { Limiter } = await import(join(dist, 'limiter.js'));
  const { MemoryStore } = await import(join(dist, 'stores/memory.js'));
  const store = new MemoryStore({ maxKeys });
  let live = [];
  for (let c = 0; c < cycles; c++) {
    const next = [];
    for (let i = 0; i < rules; i++) {
      const l = new Limiter({ policy: { algorithm: 'fixed-window', limit: 100, window: 60_000 }, store });
      l.limitSync(`k${i}`);
      next.push(l);
    }
    for (const l of live) await l.close?.();
    live = next;
  }
  const flood = new Limiter({ policy: { algorithm: 'fixed-window', limit: 1, window: 60_000 }, store });
  const rates = [];
  let n = 0;
  for (let rep = 0; rep < 5; rep++) {
    const t0 = cpuUsage();
    for (let i = 0; i < 2000; i++) flood.limitSync(`flood${n++}`);
    const t = cpuUsage(t0);
    rates.push(2000 / ((t.user + t.system) / 1e6));
  }
  rates.sort((a, b) => a - b);
  return {
    floodPerCpuSecond: rates[2],
    tables: store.tableCount ?? store.tables?.length ?? store.tables?.size,
    keys: store.size,
  };
}

const peers = [...(process.env.BEFORE_DIST ? [['before', process.env.BEFORE_DIST]] : []), ['after', DIST]];
const rows = [];
for (const [label, dist] of peers) {
  const r = await run(dist);
  rows.push([label, r]);
  console.error(label, JSON.stringify(r));
}
const text =
  [
    `# bench/memory-evict-tables.mjs: a key flood at maxKeys ${maxKeys} after ${cycles} reloads of ${rules} rules, ${new Date().toISOString()}`,
    '',
    `Peers in the same process run one after the other: ${peers.map(([l, d]) => `${l} (${d})`).join(', ')}. Median of 5 runs of 2,000 flood keys, decisions per CPU second of this process. Host load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')} at the end.`,
    '',
    '| build | tables the store looks at | keys | flood decisions per CPU second |',
    '|---|---|---|---|',
    ...rows.map(([l, r]) => `| ${l} | ${r.tables} | ${r.keys} | ${Math.round(r.floodPerCpuSecond)} |`),
  ].join('\n') + '\n';
process.stdout.write(text);
const out = fileURLToPath(new URL('results/', import.meta.url));
mkdirSync(out, { recursive: true });
writeFileSync(join(out, `memory-evict-tables-${new Date().toISOString().replace(/[:.]/g, '-')}.md`), text);
