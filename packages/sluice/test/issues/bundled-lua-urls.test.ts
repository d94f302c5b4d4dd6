// Regression: inside a Next.js app (next build, Turbopack 16.5), every Lua file RedisStore read was block.lua:
// Turbopack compiled `new URL(`./scripts/${file}.lua`, import.meta.url)` to the one asset it matched first,
// and FUNCTION LOAD then failed ("nonexistent global variable 'ALG'"), so every decision was a store error.
// A bundler copies and rewrites only a URL written out whole: each file sluice reads is named by a literal.
// test/integration/next.test.ts runs RedisStore in a built Next app.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';

const SRC = join(import.meta.dirname, '../../src');
/** Not bundled into apps: the CLI's worker thread for `sluice simulate`. */
const NODE_ONLY = new Set(['simulate/distributed.ts']);

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [path] : [];
  });
}

test('regression: every file read relative to import.meta.url is named by a literal URL, which Turbopack and webpack copy', () => {
  const bad: string[] = [];
  let seen = 0;
  for (const file of sources(SRC)) {
    const name = relative(SRC, file);
    for (const m of readFileSync(file, 'utf8').matchAll(/new URL\(\s*([^,]*?),\s*import\.meta\.url\s*\)/g)) {
      seen++;
      if (!/^'[^'$]*'$/.test(m[1]!) && !NODE_ONLY.has(name)) bad.push(`${name}: new URL(${m[1]}, import.meta.url)`);
    }
  }
  assert.ok(seen >= 17, `found only ${seen} URLs: the pattern no longer matches the code`);
  assert.deepEqual(bad, []);
});
