// docs/migrating.md's TypeScript blocks type-check against the source (imports of `sluice/...` mapped to src/
// through package.json's exports), and the one that does not serve runs on the test Redis.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { redisUrl } from '../../packages/testing/src/harness.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const page = readFileSync(join(ROOT, 'docs/migrating.md'), 'utf8');
const SLUICE = join(ROOT, 'packages/sluice');
const pkg = JSON.parse(readFileSync(join(SLUICE, 'package.json'), 'utf8')) as {
  exports: Record<string, string | { import: { types: string } }>;
};

/** `sluice/redis` -> packages/sluice/src/stores/redis/index.js, from the export's ESM types path. */
function source(spec: string): string {
  const target = pkg.exports[spec === 'sluice' ? '.' : `./${spec.slice('sluice/'.length)}`];
  assert.ok(typeof target === 'object', `docs/migrating.md imports '${spec}', which package.json does not export`);
  return join(SLUICE, target.import.types.replace(/^\.\/dist\//, 'src/').replace(/\.d\.ts$/, '.js'));
}

const work = mkdtempSync(join(tmpdir(), 'sluice-migrating-'));
writeFileSync(join(work, 'package.json'), '{"type":"module"}\n');
symlinkSync(join(ROOT, 'node_modules'), join(work, 'node_modules'), 'dir');
after(() => rmSync(work, { recursive: true, force: true }));

const blocks = [...page.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m, i) => {
  const file = join(work, `block-${i + 1}.ts`);
  writeFileSync(
    file,
    m[1]!.replace(/from '(sluice(?:\/[\w-]+)?)'/g, (_, spec: string) => `from '${source(spec)}'`),
  );
  return { code: m[1]!, file };
});

test("docs/migrating.md: its TypeScript blocks type-check under the project's strict settings", () => {
  assert.ok(blocks.length >= 2, `only ${blocks.length} TypeScript blocks`);
  writeFileSync(
    join(work, 'tsconfig.json'),
    JSON.stringify({
      extends: join(ROOT, 'tsconfig.json'),
      compilerOptions: { noEmit: true, rootDir: '/', declaration: false, sourceMap: false },
      include: [],
      files: blocks.map((b) => b.file),
    }),
  );
  const r = spawnSync(
    process.execPath,
    [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(work, 'tsconfig.json')],
    { encoding: 'utf8', timeout: 240_000 },
  );
  assert.equal(r.status, 0, `tsc on docs/migrating.md's blocks:\n${r.stdout}${r.stderr}`);
});

test('docs/migrating.md: the rate-limiter-flexible replacement runs on Redis and is decided by it', () => {
  const runnable = blocks.filter((b) => !/\.listen\(/.test(b.code));
  assert.equal(runnable.length, 1);
  const prefix = `sluice-migrating-${process.pid}-${Date.now()}`;
  writeFileSync(
    runnable[0]!.file,
    readFileSync(runnable[0]!.file, 'utf8').replace("prefix: 'migrating-example'", `prefix: '${prefix}'`),
  );
  const r = spawnSync(process.execPath, ['--import', 'tsx', runnable[0]!.file], {
    cwd: work,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, REDIS_URL: redisUrl() },
  });
  assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
  // Allowed with 4 of 5 left: Redis's answer (a store failure would answer by onError, 'open', with 0 left).
  assert.equal(r.stdout.trim(), 'true 4 0');
});
