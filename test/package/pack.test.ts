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

test('every subpath resolves from the tarball, and loads with no framework installed', () => {
  const script = `
    const out = {};
    for (const [path, names] of Object.entries({
      'sluice/http': ['withRateLimit', 'rateLimit', 'ipKey', 'stripe', 'github', 'graphqlCost', 'HeaderRenderer'],
      'sluice/express': ['rateLimit', 'github', 'stripe'],
      'sluice/fastify': ['rateLimit', 'default', 'github', 'stripe'],
      'sluice/hono': ['rateLimit', 'github', 'stripe'],
    })) {
      const m = await import(path);
      out[path] = names.filter((n) => typeof m[n] === 'function');
    }
    for (const fw of ['express', 'fastify', 'hono']) {
      out[fw] = await import(fw).then(() => 'installed', () => 'absent');
    }
    console.log(JSON.stringify(out));
  `;
  assert.deepEqual(JSON.parse(run(process.execPath, ['--input-type=module', '-e', script], consumer)), {
    'sluice/http': ['withRateLimit', 'rateLimit', 'ipKey', 'stripe', 'github', 'graphqlCost', 'HeaderRenderer'],
    'sluice/express': ['rateLimit', 'github', 'stripe'],
    'sluice/fastify': ['rateLimit', 'default', 'github', 'stripe'],
    'sluice/hono': ['rateLimit', 'github', 'stripe'],
    express: 'absent',
    fastify: 'absent',
    hono: 'absent',
  });
});

test('sluice/http limits a real node:http server from the tarball', () => {
  const script = `
    import { createServer } from 'node:http';
    import { withRateLimit } from 'sluice/http';
    const server = createServer(withRateLimit((req, res) => res.end('ok'), { policy: { algorithm: 'gcra', limit: 1, window: '1m' }, headers: 'draft-7' }));
    server.listen(0, '127.0.0.1', async () => {
      const url = 'http://127.0.0.1:' + server.address().port;
      const a = await fetch(url); const b = await fetch(url);
      console.log(JSON.stringify([a.status, a.headers.get('ratelimit'), b.status, b.headers.get('retry-after')]));
      server.closeAllConnections(); server.close();
    });
  `;
  assert.equal(run(process.execPath, ['--input-type=module', '-e', script], consumer).trim(), '[200,"limit=1, remaining=0, reset=60",429,"60"]');
});

test('sluice/http ships types that check under strict TypeScript (with @types/node, as any node:http user has)', () => {
  writeFileSync(
    join(consumer, 'use-http.ts'),
    `import { withRateLimit, stripe, ipKey, type NodeRateLimitOptions } from 'sluice/http';
     const options: NodeRateLimitOptions = { ...stripe({ mode: 'test' }), headers: 'draft-8', trustProxy: ['10.0.0.0/8'] };
     const listener = withRateLimit((_req, res) => res.end('ok'), options);
     // @ts-expect-error: header styles are checked
     withRateLimit((_req, res) => res.end('ok'), { policy: { algorithm: 'gcra', limit: 1, window: 1 }, headers: 'draft-9' });
     const k: string = ipKey('::ffff:1.2.3.4');
     export { listener, k };
    `,
  );
  writeFileSync(
    join(consumer, 'tsconfig.http.json'),
    JSON.stringify({ compilerOptions: { strict: true, module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', noEmit: true, types: ['node'], typeRoots: [join(root, 'node_modules/@types')] }, files: ['use-http.ts'] }),
  );
  run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(consumer, 'tsconfig.http.json')], consumer);
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
