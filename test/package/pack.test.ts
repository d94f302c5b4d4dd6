// Installs the packed tarball into a fresh project, as a user would, and checks that the public exports
// load with no dev dependency present and that their types check under strict TypeScript.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, test } from 'node:test';

const root = resolve(import.meta.dirname, '../..');
const work = mkdtempSync(join(tmpdir(), 'sluice-pack-'));
const consumer = join(work, 'consumer');
const run = (cmd: string, args: string[], cwd: string) => execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

before(() => {
  run('npm', ['pack', '--silent', '--pack-destination', work], root);
  const tarball = readdirSync(work).find((f) => f.endsWith('.tgz'))!;
  execFileSync('mkdir', ['-p', consumer]);
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  run('npm', ['install', '--no-audit', '--no-fund', '--offline', join(work, tarball)], consumer);
});

after(() => rmSync(work, { recursive: true, force: true }));

test('the packed package imports with no dev dependency installed', () => {
  const script = `
    import { Limiter, MemoryStore } from 'sluice';
    const limiter = new Limiter({ policy: { algorithm: 'gcra', limit: 2, window: '1s' }, store: new MemoryStore({ maxKeys: 10 }) });
    const a = await limiter.limit('k'); const b = await limiter.limit('k'); const c = await limiter.limit('k');
    console.log(JSON.stringify([a.allowed, b.allowed, c.allowed]));
  `;
  assert.equal(run(process.execPath, ['--input-type=module', '-e', script], consumer).trim(), '[true,true,false]');
});

test('the packed package ships types that check under strict TypeScript', () => {
  writeFileSync(
    join(consumer, 'use.ts'),
    `import { Limiter, MemoryStore, type Decision } from 'sluice';
     const limiter = new Limiter({ policies: [{ algorithm: 'token-bucket', limit: 100, window: '1m', burst: 20 }], store: new MemoryStore({ maxKeys: 1_000_000 }) });
     const d: Decision = await limiter.limit('user:42', { cost: 1 });
     const n: number = d.retryAfterMs + d.remaining + d.resetAfterMs + d.delayMs;
     const s: string = d.policy;
     // @ts-expect-error: algorithm names are checked
     new Limiter({ policy: { algorithm: 'leaky', limit: 1, window: 1 } });
     export { n, s };
    `,
  );
  writeFileSync(
    join(consumer, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { strict: true, module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', noEmit: true, types: [] }, files: ['use.ts'] }),
  );
  run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', consumer], consumer);
});

test('the tarball holds the build, not the sources or tests', () => {
  const listing = run('tar', ['-tzf', join(work, readdirSync(work).find((f) => f.endsWith('.tgz'))!)], work);
  assert.match(listing, /package\/dist\/index\.js/);
  assert.match(listing, /package\/dist\/index\.d\.ts/);
  assert.doesNotMatch(listing, /\.test\.(js|ts)/);
  assert.doesNotMatch(listing, /package\/src\//);
});

test('the packed bin validates the shipped example config, and the tarball carries the .proto files', () => {
  const out = run(process.execPath, [join(consumer, 'node_modules/sluice/dist/cli/main.js'), 'check-config', '--config', join(consumer, 'node_modules/sluice/examples/policies.yaml')], consumer);
  assert.equal(out, 'ok: 1 file(s), 1 domain(s), 6 rule(s)\n');
  const listing = run('tar', ['-tzf', join(work, readdirSync(work).find((f) => f.endsWith('.tgz'))!)], work);
  assert.match(listing, /package\/proto\/envoy\/service\/ratelimit\/v3\/rls\.proto/);
});

test('the root export imports no package at all: the service-only dependencies stay out of the core', () => {
  // Walk the static import graph of the packed dist/index.js; every import must be relative or node:.
  const root = join(consumer, 'node_modules/sluice/dist');
  const seen = new Set<string>();
  const bare = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+'([^']+)'/gm)) {
      const spec = m[1]!;
      if (spec.startsWith('.')) visit(resolve(dirname(file), spec));
      else if (!spec.startsWith('node:')) bare.add(spec);
    }
  };
  visit(join(root, 'index.js'));
  assert.ok(seen.size > 10, `walked ${seen.size} files`);
  assert.deepEqual([...bare], []);
});
