#!/usr/bin/env node
// Build step of each package (run in its folder): the CommonJS twin of dist/, for `require('sluice')`
// (NestJS, Jest, `npm init -y` projects).
// Each ES module that an export reaches is converted on its own (not bundled), so dist/cjs/ keeps the
// same files and one module instance per file, and the `require` conditions in package.json point here.
// Node 20.19's require(esm) is not enough: it is absent before 20.19 and in Jest, and TypeScript's
// node16 resolution types a `require` of an ES module as an error.
import { build, transform } from 'esbuild';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

const root = process.cwd();
const dist = join(root, 'dist');
const out = join(dist, 'cjs');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
rmSync(out, { recursive: true, force: true });

/** The `require` targets of the exports map, and the ES modules they mirror. */
function exportTargets() {
  const pairs = [];
  const walk = (conditions) => {
    if (typeof conditions !== 'object' || conditions === null) return;
    const esm = conditions.import;
    const cjs = conditions.require;
    if (esm && cjs) pairs.push([esm, cjs]);
    for (const value of Object.values(conditions)) walk(value);
  };
  walk(pkg.exports);
  return pairs;
}

const entries = [];
for (const [esm, cjs] of exportTargets()) {
  for (const condition of ['default', 'node']) {
    const from = typeof esm === 'string' ? (condition === 'default' ? esm : undefined) : esm[condition];
    const to = typeof cjs === 'string' ? (condition === 'default' ? cjs : undefined) : cjs[condition];
    if (!from || !to) continue;
    if (join(root, to) !== join(out, relative(dist, join(root, from)))) {
      throw new Error(
        `build-cjs: exports maps ${from} to ${to}; the CommonJS twin must be ${join('dist/cjs', relative(dist, join(root, from)))}`,
      );
    }
    entries.push(join(root, from));
  }
}
if (entries.length === 0) throw new Error('build-cjs: no export has both an import and a require condition');

// esbuild's metafile lists every module the entries reach, static imports and relative dynamic ones alike.
const { metafile } = await build({
  entryPoints: entries,
  bundle: true,
  write: false,
  metafile: true,
  platform: 'node',
  format: 'esm',
  packages: 'external',
  outdir: join(root, '.tmp/cjs-scan'),
  logLevel: 'error',
});
const modules = Object.keys(metafile.inputs)
  .map((p) => join(root, p))
  .filter((p) => p.startsWith(dist + '/') && p.endsWith('.js'));

// import.meta.url has no CommonJS form: a module that reads it gets its own, from __filename.
const moduleUrl = 'const __sluiceModuleUrl = require("node:url").pathToFileURL(__filename).href;';
for (const file of modules) {
  const target = join(out, relative(dist, file));
  mkdirSync(dirname(target), { recursive: true });
  const source = readFileSync(file, 'utf8');
  const { code } = await transform(source, {
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    logLevel: 'error',
    ...(source.includes('import.meta.url')
      ? { banner: moduleUrl, define: { 'import.meta.url': '__sluiceModuleUrl' } }
      : {}),
  });
  if (code.includes('import.meta'))
    throw new Error(`build-cjs: ${relative(root, file)} uses import.meta beyond import.meta.url`);
  writeFileSync(target, code);
}

// The same declarations (read as CommonJS ones, since dist/cjs/package.json says so), type-only modules
// included, and the Lua scripts that the Redis store and the guard read beside their modules at run time.
for (const file of listFiles(dist)) {
  if (file.startsWith(out + '/') || file.startsWith(join(dist, 'browser') + '/')) continue;
  if (file.endsWith('.lua') || file.endsWith('.d.ts')) {
    mkdirSync(dirname(join(out, relative(dist, file))), { recursive: true });
    copyFileSync(file, join(out, relative(dist, file)));
  }
}

writeFileSync(join(out, 'package.json'), `${JSON.stringify({ type: 'commonjs' })}\n`);

function listFiles(dir) {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath ?? e.path, e.name));
}
