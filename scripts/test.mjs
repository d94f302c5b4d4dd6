#!/usr/bin/env node
// `npm test`: from the repository's root, every package's tests and the repository's own (test/: the docs'
// examples, the packed tarballs, the layers, the runtimes); as `npm test -w <package>`, that package's
// tests alone. Tests are the *.test.ts files under a package's src/ and test/, run with node:test through
// tsx, from the root (so fixtures resolve the same either way). `npm test -- <substring>…` keeps the files
// whose path contains one of them.
//
// The workspace runs from source: the `sluice-source` export condition points each package's entries at
// its src/, so a product's `import … from 'sluice/kit'` needs no build. NODE_OPTIONS carries it to every
// process a test starts. A package that needs Redis gets one (started, and installed, here if none
// answers: ensure-redis.mjs); nginx and Chromium are installed by the tests that drive them.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureRedis } from './ensure-redis.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const here = process.cwd();
const inPackage = relative(ROOT, here).startsWith('packages/');
const pkgName = inPackage ? JSON.parse(readFileSync(join(here, 'package.json'), 'utf8')).name : undefined;

function find(dir, out = []) {
  let names;
  try {
    names = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of names) {
    const path = join(dir, name);
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    if (statSync(path).isDirectory()) find(path, out);
    else if (name.endsWith('.test.ts')) out.push(relative(ROOT, path));
  }
  return out;
}

const packages = inPackage ? [here] : readdirSync(join(ROOT, 'packages')).map((p) => join(ROOT, 'packages', p));
const files = packages.flatMap((p) => [...find(join(p, 'src')), ...find(join(p, 'test'))]);
if (!inPackage) files.push(...find(join(ROOT, 'test')));
files.sort();
const filter = process.argv.slice(2);
const chosen = filter.length ? files.filter((f) => filter.some((p) => f.includes(p))) : files;

// Nothing builds on install, so a fresh clone has no dist/: the demo and the proof-of-work page tests
// serve the browser widget from @sluice/pow's dist/browser/, which bundles in a second.
if (!inPackage || pkgName === '@sluice/pow' || pkgName === '@sluice/serve') {
  const widget = spawnSync(process.execPath, [join(ROOT, 'scripts/build-browser.mjs')], {
    stdio: 'inherit',
    cwd: ROOT,
  });
  if (widget.status !== 0) process.exit(widget.status ?? 1);
}
// Every package but the shared test harness has tests on Redis.
const redis = pkgName === '@sluice/testing' ? { stop() {} } : await ensureRedis();
// Ctrl-C reaches the test run too; this process waits for it to end, then stops a Redis it started.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => {});
const env = { ...process.env, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --conditions=sluice-source`.trim() };
console.log(`${pkgName ?? 'sluice workspace'}: ${chosen.length} test files${inPackage ? ` (${basename(here)})` : ''}`);
// A test that hangs (a server that never answers, a child that never exits) fails after 5 minutes instead
// of holding CI until its 30-minute limit; the slowest test takes about a minute on a loaded machine.
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-timeout=300000', ...chosen],
  {
    stdio: 'inherit',
    cwd: ROOT,
    env,
  },
);
redis.stop();
process.exit(result.status ?? 1);
