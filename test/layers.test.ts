// The layer rules (scripts/check-layers.ts) hold on src/, and they can fail: a wrong-way import, a sibling
// import, a cycle, a file in no layer and a stale exception planted in copies of src/ are each reported.
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { checkLayers, EXCEPTIONS, importsOf } from '../scripts/check-layers.js';

const src = join(dirname(fileURLToPath(import.meta.url)), '..', 'src');
const scratch = mkdtempSync(join(tmpdir(), 'sluice-layers-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** A copy of src/ with a line put at the top of each file named in `edits` (a new file if there is none). */
function plant(name: string, edits: Record<string, string>): string {
  const copy = join(scratch, name);
  cpSync(src, copy, { recursive: true });
  for (const [file, line] of Object.entries(edits)) {
    const path = join(copy, file);
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

test('every import in src/ points down a layer, and no files import each other in a loop', () => {
  assert.deepEqual(checkLayers(src), []);
});

test('a planted wrong-way import is caught: core importing the limiter', () => {
  const tree = plant('up', { 'core/errors.ts': "import type { Limiter } from '../limiter.js';" });
  const problems = checkLayers(tree);
  assert.equal(problems[0], 'core/errors.ts -> limiter.ts: core may not import limiter (it may import nothing of sluice)');
  // The limiter imports core, so the same import also closes a loop, reported on its own.
  assert.equal(problems.length, 2, problems.join('\n'));
  assert.match(problems[1]!, /^import cycle: .*core\/errors\.ts -> limiter\.ts -> /);
});

test('a store importing distributed/ and a feature importing another feature are caught', () => {
  const tree = plant('sideways', {
    'stores/memory.ts': "import { DeniedKeys } from '../distributed/deny-cache.js';",
    'http/rule.ts': "export { Guard } from '../guard/guard.js';",
  });
  assert.deepEqual(checkLayers(tree), [
    'http/rule.ts -> guard/guard.ts: http may not import guard (it may import core, crypto, runtime, clock, stores, distributed, limiter)',
    'stores/memory.ts -> distributed/deny-cache.ts: stores may not import distributed (it may import core, crypto, runtime, clock)',
  ]);
});

test('a cycle inside one layer is caught, type-only imports included', () => {
  const tree = plant('cycle', { 'core/types.ts': "import type { SluiceErrorCode } from './errors.js';", 'core/errors.ts': "import type { Decision } from './types.js';" });
  const problems = checkLayers(tree);
  assert.equal(problems.length, 1, problems.join('\n'));
  assert.match(problems[0]!, /^import cycle: core\/(errors|types)\.ts -> core\/(errors|types)\.ts -> core\/(errors|types)\.ts$/);
});

test('a file in no layer, and an exception that no import needs, are reported', () => {
  const tree = plant('unplaced', { 'plugins/x.ts': "import { show } from '../core/errors.js';" });
  assert.deepEqual(checkLayers(tree, { exceptions: [...EXCEPTIONS, { from: 'http/rule.ts', to: 'guard/guard.ts', cause: 'planted' }] }), [
    'plugins/x.ts: in no layer; add its folder to LAYERS in scripts/check-layers.ts',
    'exception http/rule.ts -> guard/guard.ts (planted) is no longer needed: remove it',
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
    "const r = /'import x from \"./regex.js\"'/;",
    'const k = x.from("./member-call.js");',
    "export { j } from \"./j.js\";",
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
