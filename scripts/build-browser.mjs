#!/usr/bin/env node
// Builds the browser solver with esbuild: the worker is bundled first and inlined into the widget as a
// string, so dist/browser/sluice-pow.js is one drop-in file; the worker is also written on its own for
// pages whose CSP forbids blob: workers. `--bench` also builds the all-hashers benchmark worker into .tmp/.
import { build } from 'esbuild';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// @sluice/pow's folder: the widget ships in its dist/browser/.
const root = join(dirname(fileURLToPath(import.meta.url)), '../packages/pow');
const out = join(root, 'dist/browser');
// The solver's hashes come from sluice/kit: bundled from sluice's sources, so no build of sluice is needed first.
const common = {
  bundle: true,
  minify: true,
  target: 'es2022',
  write: false,
  logLevel: 'warning',
  conditions: ['sluice-source'],
};

async function bundle(entry, extra = {}) {
  const result = await build({ ...common, entryPoints: [join(root, entry)], format: 'iife', ...extra });
  const text = result.outputFiles[0].text;
  if (/["']node:/.test(text)) throw new Error(`build-browser: ${entry} bundles a node: import`);
  return text;
}

mkdirSync(out, { recursive: true });
const worker = await bundle('src/browser/worker.ts');
writeFileSync(join(out, 'sluice-pow-worker.js'), worker);
const widget = await bundle('src/browser/widget.ts', {
  globalName: 'SluicePow',
  define: { __SLUICE_POW_WORKER__: JSON.stringify(worker) },
});
writeFileSync(
  join(out, 'sluice-pow.js'),
  `/* sluice <sluice-pow> widget: proof-of-work solver in Web Workers */\n${widget}`,
);

if (process.argv.includes('--bench')) {
  const benchDir = join(root, '../../.tmp/browser');
  mkdirSync(benchDir, { recursive: true });
  writeFileSync(join(benchDir, 'bench-worker.js'), await bundle('src/browser/bench-worker.ts'));
  writeFileSync(
    join(benchDir, 'solver.js'),
    await bundle('src/browser/widget.ts', {
      globalName: 'SluicePow',
      define: { __SLUICE_POW_WORKER__: JSON.stringify(worker) },
    }),
  );
}
console.log(
  `built ${join('packages/pow/dist/browser', 'sluice-pow.js')} (${(widget.length / 1024).toFixed(1)} KiB) and sluice-pow-worker.js (${(worker.length / 1024).toFixed(1)} KiB)`,
);
