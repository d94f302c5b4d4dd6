// Regression: with `npm install --omit=optional` (when the service's packages were optional), `sluice serve`
// printed a stack trace around its message. A resolve hook hides one dependency at a time, as a pruned install would.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');
const HIDE = `data:text/javascript,${encodeURIComponent(`
import { register } from 'node:module';
register('data:text/javascript,' + encodeURIComponent(\`
const hidden = new Set((process.env.HIDE_PACKAGES ?? '').split(','));
export async function resolve(specifier, context, next) {
  if (!hidden.has(specifier)) return next(specifier, context);
  const e = new Error("Cannot find package '" + specifier + "' imported from " + context.parentURL);
  e.code = 'ERR_MODULE_NOT_FOUND';
  throw e;
}\`));`)}`;

function sluice(hidden: string, args: string[]) {
  return spawnSync(
    process.execPath,
    ['--import', HIDE, '--import', 'tsx', join(ROOT, 'packages/serve/src/cli/main.ts'), ...args],
    {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, HIDE_PACKAGES: hidden },
    },
  );
}

for (const pkg of ['yaml', 'pino', 'prom-client']) {
  test(`sluice serve without its dependency ${pkg}: one line saying what to install, exit 1`, () => {
    const r = sluice(pkg, [
      'serve',
      '--config',
      'packages/serve/examples/policies.yaml',
      '--port',
      '0',
      '--grpc-port',
      '-1',
      '--admin-port',
      '-1',
    ]);
    assert.equal(r.status, 1, r.stderr);
    assert.equal(
      r.stderr,
      `sluice serve: the service needs the dependency '${pkg}', which is not installed (@sluice/serve depends on it: was it pruned?); install it with: npm install yaml pino prom-client\n`,
    );
    assert.equal(r.stdout, '');
  });
}

test('sluice check-config without yaml says the same in one line; sluice demo needs none of them', () => {
  const check = sluice('yaml', ['check-config', '--config', 'packages/serve/examples/policies.yaml']);
  assert.equal(check.status, 1);
  assert.match(check.stderr, /^sluice check-config: the service needs the dependency 'yaml'[^\n]*\n$/);
  const demo = sluice('yaml,pino,prom-client', ['demo']);
  assert.equal(demo.status, 0, demo.stderr);
});
