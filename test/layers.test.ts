// The layer rules (scripts/check-layers.ts) hold on the packages' sources, and they can fail: a wrong-way
// import, a sibling import, a product reaching past sluice/kit, a cycle, a file in no layer and a stale
// exception planted in copies of the packages' src/ are each reported.
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { checkLayers, EXCEPTIONS, importsOf } from '../scripts/check-layers.js';

const packages = join(dirname(fileURLToPath(import.meta.url)), '..', 'packages');
const scratch = mkdtempSync(join(tmpdir(), 'sluice-layers-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** A copy of the packages' src/ with a line put at the top of each file named in `edits` ('guard/x.ts' is packages/guard/src/x.ts; a new file if there is none). */
function plant(name: string, edits: Record<string, string>): string {
  const copy = join(scratch, name);
  for (const pkg of readdirSync(packages)) {
    if (existsSync(join(packages, pkg, 'src')))
      cpSync(join(packages, pkg, 'src'), join(copy, pkg, 'src'), { recursive: true });
  }
  for (const [file, line] of Object.entries(edits)) {
    const [pkg, ...rest] = file.split('/');
    const path = join(copy, pkg!, 'src', ...rest);
    mkdirSync(dirname(path), { recursive: true });
    let text = '';
    try {
      text = readFileSync(path, 'utf8');
    } catch {
      // a new file
    }
    writeFileSync(path, `${line}\n${text}`);
  }
  return copy;
}

test('every import in the packages points down a layer, and no files import each other in a loop', () => {
  assert.deepEqual(checkLayers(packages), []);
});

test('a planted wrong-way import is caught: core importing the limiter', () => {
  const tree = plant('up', { 'sluice/core/errors.ts': "import type { Limiter } from '../limiter.js';" });
  const problems = checkLayers(tree);
  assert.equal(
    problems[0],
    'sluice/core/errors.ts -> sluice/limiter.ts: core may not import limiter (it may import nothing of sluice)',
  );
  // The limiter imports core, so the same import also closes a loop, reported on its own.
  assert.equal(problems.length, 2, problems.join('\n'));
  assert.match(problems[1]!, /^import cycle: .*sluice\/core\/errors\.ts -> sluice\/limiter\.ts -> /);
});

test('a store importing distributed/ and the limiter importing a product are caught', () => {
  const tree = plant('sideways', {
    'sluice/stores/memory.ts': "import { DeniedKeys } from '../distributed/deny-cache.js';",
    'sluice/http/rule.ts': "export { Guard } from '../../../guard/src/guard.js';",
  });
  assert.deepEqual(checkLayers(tree), [
    "sluice/http/rule.ts: imports '../../../guard/src/guard.js', outside its package's src/ (a product reaches the limiter through sluice/kit)",
    'sluice/stores/memory.ts -> sluice/distributed/deny-cache.ts: stores may not import distributed (it may import core, crypto, runtime, clock)',
  ]);
});

test('a cycle inside one layer is caught, type-only imports included', () => {
  const tree = plant('cycle', {
    'sluice/core/types.ts': "import type { SluiceErrorCode } from './errors.js';",
    'sluice/core/errors.ts': "import type { Decision } from './types.js';",
  });
  const problems = checkLayers(tree);
  assert.equal(problems.length, 1, problems.join('\n'));
  assert.match(
    problems[0]!,
    /^import cycle: sluice\/core\/(errors|types)\.ts -> sluice\/core\/(errors|types)\.ts -> sluice\/core\/(errors|types)\.ts$/,
  );
});

test('a file in no layer, and an exception that no import needs, are reported', () => {
  const tree = plant('unplaced', { 'sluice/plugins/x.ts': "import { show } from '../core/errors.js';" });
  assert.deepEqual(
    checkLayers(tree, {
      exceptions: [...EXCEPTIONS, { from: 'sluice/http/rule.ts', to: 'guard/guard.ts', cause: 'planted' }],
    }),
    [
      'sluice/plugins/x.ts: in no layer; add its folder to LAYERS in scripts/check-layers.ts',
      'exception sluice/http/rule.ts -> guard/guard.ts (planted) is no longer needed: remove it',
    ],
  );
});

test('a product reaching into the limiter past sluice/kit is caught: by relative path and by a package entry', () => {
  const tree = plant('past-the-kit', {
    'guard/guard.ts': "import { RedisConnection } from '../../sluice/src/stores/redis/connection.js';",
    'pow/token.ts': "import { Limiter } from 'sluice';",
    'outbound/gate.ts': "import { Guard } from '@sluice/guard';",
    'sluice/limiter.ts': "import type { Store } from 'sluice/kit';",
  });
  assert.deepEqual(checkLayers(tree), [
    "guard/guard.ts: imports '../../sluice/src/stores/redis/connection.js', outside its package's src/ (a product reaches the limiter through sluice/kit)",
    'outbound/gate.ts -> guard/index.ts: outbound may not import guard (it may import kit)',
    "pow/token.ts: imports 'sluice'; a product reaches the limiter through sluice/kit only",
    "sluice/limiter.ts: imports 'sluice/kit'; the limiter imports its own files by path",
  ]);
});

test('import specifiers are read from code only: static, re-export, side-effect and dynamic; not comments or templates', () => {
  const text = [
    "import { a } from './a.js';",
    "import type { B } from './b.js';",
    "import { type C, type D } from './c.js';",
    "import e, { type E } from './e.js';",
    "export * from './f.js';",
    "export type { G } from './g.js';",
    "import './h.js';",
    "const i = await import('./i.js');",
    "// import { x } from './comment.js';",
    '/* export * from "./block.js"; */',
    "const t = `import { y } from './template.js'; ${Array.from('z')}`;",
    'const r = /\'import x from "./regex.js"\'/;',
    'const k = x.from("./member-call.js");',
    'export { j } from "./j.js";',
  ].join('\n');
  assert.deepEqual(importsOf(text), [
    { spec: './a.js', typeOnly: false },
    { spec: './b.js', typeOnly: true },
    { spec: './c.js', typeOnly: true },
    { spec: './e.js', typeOnly: false },
    { spec: './f.js', typeOnly: false },
    { spec: './g.js', typeOnly: true },
    { spec: './h.js', typeOnly: false },
    { spec: './i.js', typeOnly: false },
    { spec: './j.js', typeOnly: false },
  ]);
});

test("the service's codecs import nothing of the service: a codec importing config/ is caught", () => {
  const tree = plant('codec-up', { 'serve/server/codecs/intern.ts': "import { UNITS } from '../config/config.js';" });
  assert.deepEqual(checkLayers(tree).slice(0, 1), [
    'serve/server/codecs/intern.ts -> serve/server/config/config.ts: codecs may not import server (it may import nothing of sluice)',
  ]);
});
