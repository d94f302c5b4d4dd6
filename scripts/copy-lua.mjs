#!/usr/bin/env node
// Build step of each package (run in its folder): tsc compiles the TypeScript; the Lua scripts (the Redis
// store's, the guard's) are read at run time from beside the compiled module, so copy them into dist/ as
// they are.
import { cpSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';

for (const entry of readdirSync('src', { withFileTypes: true, recursive: true })) {
  if (!entry.isFile() || !entry.name.endsWith('.lua')) continue;
  const from = join(entry.parentPath ?? entry.path, entry.name);
  cpSync(from, join('dist', relative('src', from)));
}
