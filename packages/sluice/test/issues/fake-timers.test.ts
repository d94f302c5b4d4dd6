// Regression, issue 49 finding 6: a user's test with jest.useFakeTimers() or vi.useFakeTimers() hung on
// every RedisStore call (its batch waited on a faked process.nextTick), and the memory store's default
// clock never saw the fake time. The cases (test/fixtures/fake-timers/cases.cjs) run under real Jest and
// real Vitest, on sluice's source bundled to CommonJS, as a user's test suite loads it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { build } from 'esbuild';

const root = resolve(import.meta.dirname, '../../../..');
const pkg = resolve(import.meta.dirname, '../..');
const fixture = join(pkg, 'test/fixtures/fake-timers');
// Under node_modules, so that the bundle's require('ioredis') finds the project's packages.
const work = join(root, 'node_modules/.cache', `sluice-fake-timers-${process.pid}`);
const bundle = join(work, 'sluice.cjs');
const run = promisify(execFile);

before(async () => {
  mkdirSync(work, { recursive: true });
  const entry = join(work, 'entry.ts');
  writeFileSync(
    entry,
    [
      `export { Limiter, MemoryStore } from '${join(pkg, 'src/index.ts')}';`,
      `export { RedisStore } from '${join(pkg, 'src/stores/redis/index.ts')}';`,
      `export { SluiceStore } from '${join(pkg, 'src/compat/express-rate-limit.ts')}';`,
      `export { SluiceThrottlerStorage } from '${join(pkg, 'src/compat/nestjs-throttler.ts')}';`,
    ].join('\n'),
  );
  await build({
    entryPoints: [entry],
    outfile: bundle,
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    // The Lua files are read relative to import.meta.url: point it at their folder in the source.
    define: { 'import.meta.url': 'sluiceScriptsUrl' },
    banner: {
      js: `var sluiceScriptsUrl = ${JSON.stringify(pathToFileURL(join(pkg, 'src/stores/redis/scripts.ts')).href)};`,
    },
    logLevel: 'error',
  });
});
after(() => rmSync(work, { recursive: true, force: true }));

interface Outcome {
  passed: string[];
  failed: string[];
}

/** Runs a test runner on the fixture and reads which cases passed from its JSON report. */
async function runner(command: string[], report: string, parse: (json: unknown) => Outcome): Promise<Outcome> {
  try {
    await run(process.execPath, command, {
      cwd: fixture,
      env: { ...process.env, SLUICE_BUNDLE: bundle, NODE_OPTIONS: '' },
      timeout: 60_000,
    });
  } catch (e) {
    // A failing case exits non-zero; the report still says which. No report at all is the runner's failure.
    if (!existsSync(report)) throw e;
  }
  return parse(JSON.parse(readFileSync(report, 'utf8')));
}

/** Jest's and Vitest's JSON reports share this shape (Vitest writes Jest's format). */
function outcomes(json: unknown): Outcome {
  const results = (
    json as {
      testResults: Array<{ assertionResults: Array<{ fullName: string; status: string; failureMessages: string[] }> }>;
    }
  ).testResults;
  const all = results.flatMap((r) => r.assertionResults);
  return {
    passed: all.filter((a) => a.status === 'passed').map((a) => a.fullName),
    failed: all
      .filter((a) => a.status !== 'passed')
      .map((a) => `${a.fullName}: ${a.failureMessages.join(' ').slice(0, 300)}`),
  };
}

test('fake timers: under Jest (jest.useFakeTimers()), RedisStore answers and the memory store follows the fake clock', async () => {
  const report = join(work, 'jest.json');
  const config = JSON.stringify({
    rootDir: fixture,
    testMatch: ['**/jest.spec.cjs'],
    transform: {},
    testEnvironment: 'node',
    cacheDirectory: join(work, 'jest-cache'),
  });
  const r = await runner(
    [join(root, 'node_modules/jest/bin/jest.js'), '--config', config, '--json', '--outputFile', report, '--ci'],
    report,
    outcomes,
  );
  assert.deepEqual(r.failed, []);
  assert.equal(r.passed.length, 6);
});

test('fake timers: under Jest with fakeTimers enableGlobally (fakes on before sluice is imported), RedisStore answers and the memory store follows the fake clock', async () => {
  const report = join(work, 'jest-global.json');
  const config = JSON.stringify({
    rootDir: fixture,
    testMatch: ['**/jest-global.spec.cjs'],
    transform: {},
    testEnvironment: 'node',
    fakeTimers: { enableGlobally: true },
    cacheDirectory: join(work, 'jest-cache'),
  });
  const r = await runner(
    [join(root, 'node_modules/jest/bin/jest.js'), '--config', config, '--json', '--outputFile', report, '--ci'],
    report,
    outcomes,
  );
  assert.deepEqual(r.failed, []);
  assert.equal(r.passed.length, 6);
});

test('fake timers: under Vitest (vi.useFakeTimers()), RedisStore answers and the memory store follows the fake clock', async () => {
  const report = join(work, 'vitest.json');
  const r = await runner(
    [
      join(root, 'node_modules/vitest/vitest.mjs'),
      'run',
      '--config',
      join(fixture, 'vitest.config.mjs'),
      '--root',
      fixture,
      '--reporter=json',
      `--outputFile=${report}`,
    ],
    report,
    outcomes,
  );
  assert.deepEqual(r.failed, []);
  assert.equal(r.passed.length, 6);
});
