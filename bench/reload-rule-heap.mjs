// `node --expose-gc bench/reload-rule-heap.mjs [rules=50000] [dist ...]`: the heap a reload's placed rules
// hold, per rule, after a full GC: each dist/ (default this tree's packages/serve/dist/; main's for the
// peer) in a fresh process loads N one-line rules with loadRulesOffThread (the service's reload: the worker
// parses, this thread places) and reports the heap used then, less the same with no rules. Heap, not
// time: it does not depend on the host's load. (A heap snapshot says which objects: `--heap-snapshot`.)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeHeapSnapshot } from 'node:v8';

const HERE = fileURLToPath(import.meta.url);

function config(n) {
  let y = 'domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: 1000000 }\n';
  for (let i = 0; i < n; i++)
    y += `  - key: tenant\n    value: t${i}\n    rate_limit: { unit: minute, requests_per_unit: 100 }\n`;
  return y;
}

async function one(dist, path, snapshot) {
  const { loadRulesOffThread } = await import(join(dist, 'server/config/config-reload.js'));
  const { MemoryStore } = await import('sluice');
  const rules = await loadRulesOffThread(path, { maxRules: 400_000, maxBytes: 64 << 20 }, { store: new MemoryStore() });
  for (let i = 0; i < 3; i++) globalThis.gc();
  const heap = process.memoryUsage();
  if (snapshot) writeHeapSnapshot(snapshot);
  process.stdout.write(JSON.stringify({ rules: rules.rules.size, heapUsed: heap.heapUsed, external: heap.external }));
}

if (process.argv[2] === '--one') await one(process.argv[3], process.argv[4], process.argv[5]);
else {
  const n = Number(process.argv[2] ?? 50_000);
  const snapshot = process.argv.includes('--heap-snapshot');
  const dists = process.argv.slice(3).filter((a) => a !== '--heap-snapshot');
  if (dists.length === 0) dists.push(fileURLToPath(new URL('../packages/serve/dist/', import.meta.url)));
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-rule-heap-'));
  try {
    const run = (dist, rules, name) => {
      const path = join(dir, `${rules}.yaml`);
      writeFileSync(path, config(rules));
      const args = ['--expose-gc', HERE, '--one', dist, path, ...(snapshot ? [join(dir, `${name}.heapsnapshot`)] : [])];
      return JSON.parse(execFileSync(process.execPath, args, { encoding: 'utf8' }));
    };
    console.log(`| dist | rules | heap bytes per rule | external bytes per rule |\n|---|---|---|---|`);
    for (const dist of dists) {
      const base = run(dist, 0, 'base');
      const full = run(dist, n, 'full');
      const per = (k) => ((full[k] - base[k]) / n).toFixed(0);
      console.log(`| ${dist} | ${full.rules - 1} | ${per('heapUsed')} | ${per('external')} |`);
    }
    if (snapshot) console.log(`snapshots kept in ${dir}`);
  } finally {
    if (!snapshot) rmSync(dir, { recursive: true, force: true });
  }
}
