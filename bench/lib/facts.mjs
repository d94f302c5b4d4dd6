/**
 * @file Machine and software facts recorded at the top of every report: figures from a 2-vCPU shared VM mean
 * little without them, and the dist hash ties a result to the exact code measured while src/ keeps moving.
 */
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { hostSpeed } from './host-speed.mjs';

const version = (root, pkg) =>
  JSON.parse(readFileSync(join(root, 'node_modules', pkg, 'package.json'), 'utf8')).version;

function listFiles(dir) {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.js'))
    .map((e) => join(e.parentPath ?? e.path, e.name))
    .sort();
}

/** sha256 over every built .js file of the packages: which sluice was measured, even with uncommitted edits in src/. */
export function distHash(root) {
  const h = createHash('sha256');
  for (const pkg of ['sluice', 'guard', 'pow', 'outbound', 'serve']) {
    for (const f of listFiles(join(root, 'packages', pkg, 'dist')))
      h.update(f.slice(root.length)).update(readFileSync(f));
  }
  return h.digest('hex').slice(0, 16);
}

function gitHead(root) {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

export function machineFacts(root) {
  const cpu = os.cpus()[0]?.model ?? 'unknown';
  return {
    date: new Date().toISOString(),
    node: process.version,
    v8: process.versions.v8,
    nproc: os.availableParallelism(),
    cpu,
    memoryGiB: +(os.totalmem() / 2 ** 30).toFixed(1),
    kernel: `${os.type()} ${os.release()}`,
    loadavgAtStart: os.loadavg().map((x) => +x.toFixed(2)),
    hostSpeed: hostSpeed(),
    packages: { 'rate-limiter-flexible': version(root, 'rate-limiter-flexible'), limiter: version(root, 'limiter') },
    sluiceGitHead: gitHead(root),
    sluiceDistSha256: distHash(root),
  };
}
