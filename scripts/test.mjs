#!/usr/bin/env node
// `npm test`: runs every *.test.ts under src/ and test/ with node:test through tsx.
// Node 20's --test takes no globs, so the file list is found here. The Redis tests need a Redis: one is
// started (and installed) here if none answers, see ensure-redis.mjs. nginx and Chromium are installed
// by the tests that drive them (test/integration/debian.ts, chromium.ts) when missing.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ensureRedis } from './ensure-redis.mjs';

function find(dir, out = []) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (name === 'node_modules' || name.startsWith('.')) continue;
    if (statSync(path).isDirectory()) find(path, out);
    else if (name.endsWith('.test.ts')) out.push(path);
  }
  return out;
}

// Nothing builds on install (the package builds in prepack), so a fresh clone has no dist/: the demo and
// the proof-of-work page tests serve the browser widget from dist/browser/, which bundles in a second.
const widget = spawnSync(process.execPath, ['scripts/build-browser.mjs'], { stdio: 'inherit' });
if (widget.status !== 0) process.exit(widget.status ?? 1);

const files = [...find('src'), ...find('test')].sort();
const filter = process.argv.slice(2);
const chosen = filter.length ? files.filter((f) => filter.some((p) => f.includes(p))) : files;
// Redis tests live in several folders (stores, service, guard, pow, outbound): always make sure one answers.
const redis = await ensureRedis();
// Ctrl-C reaches the test run too; this process waits for it to end, then stops a Redis it started.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => {});
// A test that hangs (a server that never answers, a child that never exits) fails after 5 minutes instead
// of holding CI until its 30-minute limit; the slowest test takes about a minute on a loaded machine.
const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-timeout=300000', ...chosen], {
  stdio: 'inherit',
});
redis.stop();
process.exit(result.status ?? 1);
