// Installs the packed tarball into a fresh project, as a user would, and checks that the public exports
// load with no dev dependency present and that their types check under strict TypeScript.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
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

test('sluice/redis resolves and loads its scripts with no Redis client installed', () => {
  // A stand-in shaped like an ioredis client: it answers NOSCRIPT once, then one decision, so the store
  // must read its Lua sources from the tarball to reload.
  const script = `
    import { Limiter } from 'sluice';
    import { RedisStore } from 'sluice/redis';
    let evals = 0;
    const client = {
      status: 'ready',
      evalsha: async () => { throw new Error('NOSCRIPT No matching script'); },
      eval: async (source) => { evals++; if (!source.includes('redis.call')) throw new Error('no source'); return [5, 1000]; }, // allowed, remaining 4, resetAfterMs 1000
    };
    const limiter = new Limiter({ policy: { name: 'p', algorithm: 'gcra', limit: 5, window: '1s' }, store: new RedisStore({ client }) });
    const d = await limiter.limit('k');
    let code; try { new RedisStore({ client: {} }); } catch (e) { code = e.code; }
    console.log(JSON.stringify([d.allowed, d.remaining, evals, code]));
  `;
  assert.equal(run(process.execPath, ['--input-type=module', '-e', script], consumer).trim(), '[true,4,1,"ERR_SLUICE_INVALID_OPTION"]');
});

test('the packed package ships types that check under strict TypeScript', () => {
  writeFileSync(
    join(consumer, 'use.ts'),
    `import { Limiter, MemoryStore, type Decision } from 'sluice';
     import { RedisStore, type RedisStoreOptions } from 'sluice/redis';
     const o: RedisStoreOptions = { client: {}, prefix: 'app', timeoutMs: 50, onError: { insurance: 0.25 } };
     // @ts-expect-error: onError is checked
     const bad: RedisStoreOptions = { client: {}, onError: 'maybe' };
     export { o, bad, RedisStore };
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
