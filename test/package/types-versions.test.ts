// sluice's package.json typesVersions (what TypeScript's node10 resolution reads, issue 49 finding 5) names, for
// every subpath of the exports map that has types, the declarations its `require` condition names (or its
// only ones): a subpath added to exports without it fails here, before the packed-consumer test.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

type Conditions = { types?: string; require?: string | { types?: string } } | string;
const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '../../packages/sluice/package.json'), 'utf8')) as {
  exports: Record<string, Conditions>;
  typesVersions: Record<string, Record<string, string[]>>;
};

test('typesVersions maps every typed subpath of exports to the declarations a require of it gets', () => {
  const expected: Record<string, string[]> = {};
  for (const [subpath, conditions] of Object.entries(pkg.exports)) {
    if (subpath === '.' || typeof conditions === 'string') continue;
    const types = typeof conditions.require === 'object' ? conditions.require.types : conditions.types;
    if (types !== undefined) expected[subpath.slice(2)] = [types];
  }
  assert.ok(Object.keys(expected).length >= 11);
  assert.deepEqual(Object.keys(pkg.typesVersions), ['*']);
  assert.deepEqual(pkg.typesVersions['*'], expected);
});
