#!/usr/bin/env node
// prepack/postpack of each published package (run in its folder): the `sluice-source` export condition
// points the workspace at src/ (so the repository runs and type-checks from source), and src/ is not
// shipped; `strip` saves package.json aside and writes it without that condition before npm packs it,
// `restore` puts the saved one back after.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';

const SAVED = '.package.json.prepack';

/** `exports` without the `sluice-source` condition, at any depth. */
export function withoutSourceCondition(value) {
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([k]) => k !== 'sluice-source')
      .map(([k, v]) => [k, withoutSourceCondition(v)]),
  );
}

const mode = process.argv[2];
if (mode === 'strip') {
  const text = readFileSync('package.json', 'utf8');
  writeFileSync(SAVED, text);
  const pkg = JSON.parse(text);
  pkg.exports = withoutSourceCondition(pkg.exports);
  writeFileSync('package.json', `${JSON.stringify(pkg, null, 2)}\n`);
} else if (mode === 'restore') {
  if (existsSync(SAVED)) renameSync(SAVED, 'package.json');
} else if (mode !== undefined) {
  throw new Error(`pack-manifest: 'strip' or 'restore', not '${mode}'`);
}
