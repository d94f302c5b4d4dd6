// Issue 46 finding 6: a bundled application silently lost the guard's Redis state. package.json says
// "sideEffects": false, and the guard's Redis state registered itself when its module loaded; esbuild (and
// webpack, Next.js, Vite: all honour sideEffects) dropped that module from a bundle whose code did not use
// its exports, so `new Guard({ store: redisStore })` got a MemoryGuardState: each process its own account
// records. Here a small app is bundled from the sources (each package's package.json, with its sideEffects,
// governs them as it governs the published files; the sluice-source condition picks the sources) by
// esbuild and by webpack, run against the test Redis, and must keep the guard's state in Redis.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { build } from 'esbuild';
import { redisUrl, runPrefix } from '../../../testing/src/harness.js';

const ROOT = resolve(import.meta.dirname, '../../../..');
/** The sources the app reaches: the guard's and the limiter's. */
const SRCS = [join(ROOT, 'packages/guard/src'), join(ROOT, 'packages/sluice/src')];
const work = mkdtempSync(join(tmpdir(), 'sluice-bundle-'));
after(() => rmSync(work, { recursive: true, force: true }));

const APP = `
import { Redis } from 'ioredis';
import { Guard } from '@sluice/guard';
import { RedisStore } from 'sluice/redis';

const client = new Redis(process.env.REDIS_URL);
const store = new RedisStore({ client, prefix: process.env.PREFIX, timeoutMs: 2000 });
const guard = new Guard({ secret: 'a bundled guard secret, long enough', store });
for (let i = 0; i < 4; i++) await guard.record({ account: 'alice', ip: '203.0.113.' + (i + 1), success: false });
const keys = (await client.keys(process.env.PREFIX + ':{ga:*')).filter((k) => !k.includes('}:p:')); // the account's record, not its pair buckets
console.log(JSON.stringify({ state: guard.state.constructor.name, accountKeys: keys.length }));
client.disconnect();
`;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [path] : [];
  });
}

/**
 * Copies every file the sources read by `new URL('<literal>', import.meta.url)` to where a bundle at
 * `bundle` reads it, as webpack and Next copy such assets (esbuild leaves the URL to the bundle's own).
 */
function copyAssets(bundle: string): void {
  for (const file of SRCS.flatMap((dir) => sources(dir))) {
    for (const m of readFileSync(file, 'utf8').matchAll(/new URL\(\s*'([^']+\.lua)',\s*import\.meta\.url\s*\)/g)) {
      const to = resolve(dirname(bundle), m[1]!);
      if (!to.startsWith(work)) continue;
      mkdirSync(dirname(to), { recursive: true });
      copyFileSync(resolve(dirname(file), m[1]!), to);
    }
  }
}

function run(bundle: string, prefix: string): { state: string; accountKeys: number } {
  const r = spawnSync(process.execPath, [bundle], {
    cwd: dirname(bundle),
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, REDIS_URL: redisUrl(), PREFIX: prefix },
  });
  assert.equal(r.status, 0, `the bundle exited ${r.status ?? r.signal}:\n${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { state: string; accountKeys: number };
}

test('a guard on a RedisStore keeps its state in Redis when the app is bundled by esbuild (sideEffects: false honoured)', async () => {
  const entry = join(work, 'esbuild-app.mjs');
  writeFileSync(entry, APP);
  const outfile = join(work, 'esbuild/a/b/app.mjs'); // deep enough that the copied Lua stays inside `work`
  await build({
    entryPoints: [entry],
    bundle: true,
    outfile,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'error',
    conditions: ['sluice-source'],
    external: ['ioredis', 'redis', 'pino', 'yaml', 'prom-client'],
    nodePaths: [join(ROOT, 'node_modules')],
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  });
  copyAssets(outfile);
  writeFileSync(join(work, 'esbuild/package.json'), '{"type":"module"}');
  symlinkModules(join(work, 'esbuild'));
  const prefix = runPrefix('bundle-esbuild');
  assert.deepEqual(run(outfile, prefix), { state: 'RedisGuardState', accountKeys: 1 });
});

test('a guard on a RedisStore keeps its state in Redis when the app is bundled by webpack (sideEffects: false honoured)', async (t) => {
  const require = createRequire(join(ROOT, 'package.json'));
  if (!existsSync(join(ROOT, 'node_modules/webpack/package.json'))) return t.skip('webpack is not installed');
  const webpack = require('webpack') as typeof import('webpack');
  const entry = join(work, 'webpack-app.mjs');
  writeFileSync(entry, APP);
  // TypeScript to JavaScript, as any app's loader does (esbuild here: already a dev dependency).
  const loader = join(work, 'ts-loader.cjs');
  writeFileSync(
    loader,
    `module.exports = function (source) { return require(${JSON.stringify(require.resolve('esbuild'))}).transformSync(source, { loader: 'ts', format: 'esm', target: 'node20' }).code; };`,
  );
  const out = join(work, 'webpack/a/b');
  const stats = await new Promise<import('webpack').Stats>((done, fail) =>
    webpack(
      {
        mode: 'production',
        target: 'node20',
        entry,
        context: work,
        output: { path: out, filename: 'app.mjs', module: true, chunkFormat: 'module', library: { type: 'module' } },
        experiments: { outputModule: true, topLevelAwait: true },
        externalsType: 'module',
        externals: { ioredis: 'ioredis', redis: 'redis' },
        resolve: {
          conditionNames: ['sluice-source', 'node', 'import', 'module', 'default'],
          extensionAlias: { '.js': ['.ts', '.js'] },
          modules: [join(ROOT, 'node_modules'), 'node_modules'],
        },
        module: { rules: [{ test: /\.ts$/, loader }], parser: { javascript: { url: false } } },
        optimization: { minimize: false, sideEffects: true, usedExports: true },
      },
      (err, s) => (err || s === undefined ? fail(err) : done(s)),
    ),
  );
  assert.ok(!stats.hasErrors(), stats.toString('errors-only'));
  copyAssets(join(out, 'app.mjs'));
  writeFileSync(join(work, 'webpack/package.json'), '{"type":"module"}');
  symlinkModules(join(work, 'webpack'));
  const prefix = runPrefix('bundle-webpack');
  assert.deepEqual(run(join(out, 'app.mjs'), prefix), { state: 'RedisGuardState', accountKeys: 1 });
});

function symlinkModules(dir: string): void {
  const link = join(dir, 'node_modules');
  if (!existsSync(link)) symlinkSync(join(ROOT, 'node_modules'), link, 'dir');
}
