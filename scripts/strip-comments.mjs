#!/usr/bin/env node
// Build step of each package (run in its folder), after tsc: the ES modules of dist/ without their comments.
// The declarations keep every doc comment (editors show them); the JavaScript beside them needs none, and
// dropping them keeps `sluice` within 1.5 MB installed (test/package/pack.test.ts). esbuild only reprints:
// no renaming, no minifying, so a stack trace still reads as the source does.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { transformSync } from 'esbuild';

for (const entry of readdirSync('dist', { withFileTypes: true, recursive: true })) {
  const dir = entry.parentPath ?? entry.path;
  if (
    !entry.isFile() ||
    !entry.name.endsWith('.js') ||
    dir.split('/').includes('cjs') ||
    dir.split('/').includes('browser')
  )
    continue;
  const file = join(dir, entry.name);
  const { code } = transformSync(readFileSync(file, 'utf8'), {
    format: 'esm',
    target: 'es2022',
    legalComments: 'inline',
    logLevel: 'error',
  });
  writeFileSync(file, code);
}
