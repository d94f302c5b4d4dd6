// Installs the packed tarballs (sluice and each product package) into a fresh project, as a user would,
// and checks that the public exports load with no dev dependency present and that their types check under
// strict TypeScript; and that sluice alone installs as one package with no dependencies.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { runtimeConsumerTests } from '../runtimes/consumer.js';
import { PACKAGES, packedTarball, type PackageName } from '../../packages/testing/src/packed.js';
import { commonJsConsumerTests } from './commonjs.js';
import { nestConsumerTests } from './nestjs.js';

const root = resolve(import.meta.dirname, '../..');
const work = mkdtempSync(join(tmpdir(), 'sluice-pack-'));
const consumer = join(work, 'consumer');
const run = (cmd: string, args: string[], cwd: string) =>
  execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

let packedAt = 0;
/** Each package's tarball, copied into `work`. */
const tarballs = {} as Record<PackageName, string>;
const tarball = (name: PackageName = 'sluice') => tarballs[name];
before(() => {
  const packed = packedTarball();
  packedAt = packed.packedAt;
  for (const name of PACKAGES) {
    tarballs[name] = join(work, basename(packed.tarballs[name]));
    copyFileSync(packed.tarballs[name], tarballs[name]);
  }
  execFileSync('mkdir', ['-p', consumer]);
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  // --prefer-offline, not --offline: see consumerProject in packages/testing/src/packed.ts.
  run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', ...PACKAGES.map((p) => tarballs[p])], consumer);
});

after(() => rmSync(work, { recursive: true, force: true }));

test("a consumer's install runs no build: no install-time scripts, and npm pack builds first (prepack)", () => {
  for (const dir of ['sluice', 'guard', 'pow', 'outbound', 'serve']) {
    const { scripts } = JSON.parse(readFileSync(join(root, 'packages', dir, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    for (const hook of ['preinstall', 'install', 'postinstall', 'prepare'])
      assert.equal(scripts[hook], undefined, `packages/${dir}/package.json has a '${hook}' script`);
    assert.match(scripts.prepack ?? '', /npm run build/);
  }
  // tsc rewrites every output, so files written after the pack began show the pack ran the build.
  for (const file of [
    'sluice/dist/index.js',
    'guard/dist/index.js',
    'pow/dist/browser/sluice-pow.js',
    'outbound/dist/index.js',
    'serve/dist/cli/main.js',
  ]) {
    assert.ok(
      statSync(join(root, 'packages', file)).mtimeMs >= packedAt - 1000,
      `packages/${file} was not rebuilt by npm pack`,
    );
  }
  // The tarballs' manifests point at dist/ only: the workspace's sluice-source condition is stripped.
  for (const name of PACKAGES)
    assert.doesNotMatch(run('tar', ['-xzOf', tarball(name), 'package/package.json'], work), /sluice-source/, name);
});

test('sluice alone installs as one package with no dependencies, under 1.5 MB, and limits', () => {
  const lean = join(work, 'lean');
  execFileSync('mkdir', ['-p', lean]);
  writeFileSync(join(lean, 'package.json'), JSON.stringify({ name: 'lean', private: true, type: 'module' }));
  run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball()], lean);
  assert.deepEqual(
    readdirSync(join(lean, 'node_modules')).filter((n) => !n.startsWith('.')),
    ['sluice'],
  );
  const bytes = Number(run('du', ['-sb', join(lean, 'node_modules')], lean).split('\t')[0]);
  assert.ok(bytes <= 1.5 * 1024 * 1024, `sluice installs ${bytes} bytes`);
  const script = `import { Limiter } from 'sluice'; const l = new Limiter({ policy: { algorithm: 'gcra', limit: 1, window: '1s' } }); console.log((await l.limit('k')).allowed);`;
  assert.equal(run(process.execPath, ['--input-type=module', '-e', script], lean).trim(), 'true');
});

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
      'sluice/koa': ['rateLimit', 'default', 'github', 'stripe'],
      'sluice/express-rate-limit': ['SluiceStore'],
      'sluice/next': ['rateLimit', 'withRateLimit', 'github', 'stripe'],
    })) {
      const m = await import(path);
      out[path] = names.filter((n) => typeof m[n] === 'function');
    }
    // sluice/nestjs applies Nest's decorators as it loads: without Nest it says which package is missing.
    out['sluice/nestjs'] = await import('sluice/nestjs').then(() => 'loaded', (e) => e.code + (e.message.includes("'@nestjs/common'") ? ' @nestjs/common' : ' ' + e.message));
    for (const fw of ['express', 'fastify', 'hono', 'koa', 'express-rate-limit', '@nestjs/core', 'next']) {
      out[fw] = await import(fw).then(() => 'installed', () => 'absent');
    }
    console.log(JSON.stringify(out));
  `;
  assert.deepEqual(JSON.parse(run(process.execPath, ['--input-type=module', '-e', script], consumer)), {
    'sluice/http': ['withRateLimit', 'rateLimit', 'ipKey', 'stripe', 'github', 'graphqlCost', 'HeaderRenderer'],
    'sluice/express': ['rateLimit', 'github', 'stripe'],
    'sluice/fastify': ['rateLimit', 'default', 'github', 'stripe'],
    'sluice/hono': ['rateLimit', 'github', 'stripe'],
    'sluice/koa': ['rateLimit', 'default', 'github', 'stripe'],
    'sluice/express-rate-limit': ['SluiceStore'],
    'sluice/next': ['rateLimit', 'withRateLimit', 'github', 'stripe'],
    'sluice/nestjs': 'ERR_MODULE_NOT_FOUND @nestjs/common',
    express: 'absent',
    fastify: 'absent',
    hono: 'absent',
    koa: 'absent',
    'express-rate-limit': 'absent',
    '@nestjs/core': 'absent',
    next: 'absent',
  });
});

test("sluice/next's withRateLimit limits a route handler from the tarball, with no next installed", () => {
  const script = `
    import { withRateLimit } from 'sluice/next';
    const GET = withRateLimit(() => new Response('ok'), { policy: { algorithm: 'gcra', limit: 1, window: '1m' }, ipHeader: 'x-real-ip', headers: 'draft-7' });
    const request = () => new Request('http://localhost/', { headers: { 'x-real-ip': '203.0.113.7' } });
    const a = await GET(request(), {}); const b = await GET(request(), {});
    console.log(JSON.stringify([a.status, a.headers.get('ratelimit'), b.status, b.headers.get('retry-after'), b.headers.get('content-type')]));
  `;
  assert.equal(
    run(process.execPath, ['--input-type=module', '-e', script], consumer).trim(),
    '[200,"limit=1, remaining=0, reset=60",429,"60","application/problem+json"]',
  );
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
  assert.equal(
    run(process.execPath, ['--input-type=module', '-e', script], consumer).trim(),
    '[200,"limit=1, remaining=0, reset=60",429,"60"]',
  );
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
    JSON.stringify({
      compilerOptions: {
        strict: true,
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        target: 'ES2022',
        noEmit: true,
        types: ['node'],
        typeRoots: [join(root, 'node_modules/@types')],
      },
      files: ['use-http.ts'],
    }),
  );
  run(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(consumer, 'tsconfig.http.json')],
    consumer,
  );
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
      eval: async (source) => { evals++; if (!source.includes('redis.call')) throw new Error('no source'); return 5 * 2 ** 32 + 1000; }, // a lone allowed decision: (remaining 4 + 1) · 2^32 + resetAfterMs 1000
    };
    const limiter = new Limiter({ policy: { name: 'p', algorithm: 'gcra', limit: 5, window: '1s' }, store: new RedisStore({ client }) });
    const d = await limiter.limit('k');
    let code; try { new RedisStore({ client: {} }); } catch (e) { code = e.code; }
    console.log(JSON.stringify([d.allowed, d.remaining, evals, code]));
  `;
  assert.equal(
    run(process.execPath, ['--input-type=module', '-e', script], consumer).trim(),
    '[true,4,1,"ERR_SLUICE_INVALID_OPTION"]',
  );
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
    JSON.stringify({
      compilerOptions: {
        strict: true,
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        target: 'ES2022',
        noEmit: true,
        types: [],
      },
      files: ['use.ts'],
    }),
  );
  run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', consumer], consumer);
});

test('@sluice/guard resolves from the packed package and guards a login', () => {
  const script = `
    import { Guard, MemoryGuardState } from '@sluice/guard';
    import { MemoryStore } from 'sluice';
    const guard = new Guard({ secret: 'packed-test-secret-0123', store: new MemoryStore(), state: new MemoryGuardState(), denyList: ['192.0.2.0/24'] });
    const ok = await guard.check({ account: 'alice', ip: '203.0.113.7' });
    const denied = await guard.check({ account: 'alice', ip: '192.0.2.9' });
    const r = await guard.record({ account: 'alice', ip: '203.0.113.7', success: false, password: 'nope' });
    console.log(JSON.stringify([ok.action, denied.action, denied.reasons, r.counted]));
  `;
  assert.equal(
    run(process.execPath, ['--input-type=module', '-e', script], consumer).trim(),
    '["allow","block",["ip-deny-list"],true]',
  );
});

test('@sluice/guard on a RedisStore takes its Redis guard state, whose script ships in the tarball', () => {
  // A stand-in ioredis client: NOSCRIPT first, so the guard state must read guard.lua from the tarball.
  const script = `
    import { Guard, RedisGuardState } from '@sluice/guard';
    import * as sluiceRedis from 'sluice/redis';
    const { RedisStore } = sluiceRedis;
    const client = {
      status: 'ready',
      evalsha: async () => { throw new Error('NOSCRIPT No matching script'); },
      // guard.lua's reply to a login's failure (AF, then the sources' SN, which reply nothing): counted,
      // failures on the path, total, path; its token bucket comes from the store's scripts
      eval: async (source) => { if (!source.includes("op == 'AF'") || !source.includes("ALG['token-bucket']")) throw new Error('no guard source'); return [1, 2, 2, 'u']; },
    };
    const guard = new Guard({ secret: 'packed-test-secret-0123', store: new RedisStore({ client }) });
    const result = await guard.record({ account: 'a', ip: '203.0.113.9', success: false });
    console.log(JSON.stringify([guard.state instanceof RedisGuardState, 'RedisGuardState' in sluiceRedis, result.counted, result.consecutiveFailures]));
  `;
  assert.equal(run(process.execPath, ['--input-type=module', '-e', script], consumer).trim(), '[true,false,true,2]');
});

test('@sluice/guard ships types that check under strict TypeScript', () => {
  writeFileSync(
    join(consumer, 'guard.ts'),
    `import { Guard, type GuardVerdict, type GuardAction } from '@sluice/guard';
     const guard = new Guard({ secret: 'packed-test-secret-0123', ipFailuresPerDay: 100, challenge: 'pow' });
     const v: GuardVerdict = await guard.check({ account: 'a', ip: '203.0.113.7', fingerprint: 'd' });
     const a: GuardAction = v.action;
     const n: number = v.delayMs + v.retryAfterMs;
     const c: number | 'captcha' | undefined = v.challenge;
     const r: readonly string[] = v.reasons;
     await guard.record({ account: 'a', ip: '203.0.113.7', success: false, password: 'x' });
     // @ts-expect-error: 'challenge' is 'pow' or 'captcha'
     new Guard({ secret: 'packed-test-secret-0123', challenge: 'puzzle' });
     export { a, n, c, r };
    `,
  );
  writeFileSync(
    join(consumer, 'tsconfig.guard.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        target: 'ES2022',
        noEmit: true,
        types: ['node'],
        typeRoots: [join(root, 'node_modules/@types')],
      },
      files: ['guard.ts'],
    }),
  );
  run(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(consumer, 'tsconfig.guard.json')],
    consumer,
  );
});

test('@sluice/pow resolves from the packed package: a challenge is made, solved and verified once', () => {
  const script = `
    import { createChallenge, solveChallenge, verifySolution, MemorySpentStore } from '@sluice/pow';
    const secret = 'pack test secret, long enough';
    const store = new MemorySpentStore();
    const ch = createChallenge({ secret, difficulty: 1000, scope: 'login:alice', ttlMs: 60_000 });
    const solution = await solveChallenge(ch);
    const a = await verifySolution(solution, { secret, scope: 'login:alice', store });
    const b = await verifySolution(solution, { secret, scope: 'login:alice', store });
    console.log(JSON.stringify([a.ok, b.reason]));
  `;
  assert.equal(run(process.execPath, ['--input-type=module', '-e', script], consumer).trim(), '[true,"replayed"]');
  // The browser files resolve through their subpaths, as a bundler would ask for them.
  const resolved = run(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `for (const s of ['@sluice/pow/widget.js', '@sluice/pow/worker.js']) console.log(import.meta.resolve(s))`,
    ],
    consumer,
  );
  assert.match(resolved, /dist\/browser\/sluice-pow\.js\n.*dist\/browser\/sluice-pow-worker\.js/);
  writeFileSync(
    join(consumer, 'use-pow.ts'),
    `import { createChallenge, verifySolution, MemorySpentStore, type VerifyReason } from '@sluice/pow';
     const ch = createChallenge({ secret: 'x'.repeat(16), difficulty: 10, scope: 's', ttlMs: 1000 });
     const r = await verifySolution(ch.token, { secret: 'x'.repeat(16), scope: 's', store: new MemorySpentStore() });
     const reason: VerifyReason | undefined = r.reason;
     // @ts-expect-error: reasons are a closed set
     const nope: VerifyReason = 'nope';
     export { reason, nope };
    `,
  );
  writeFileSync(
    join(consumer, 'tsconfig.pow.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        target: 'ES2022',
        noEmit: true,
        types: [],
      },
      files: ['use-pow.ts'],
    }),
  );
  run(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(consumer, 'tsconfig.pow.json')],
    consumer,
  );
});

test('@sluice/outbound resolves from the tarball: Gate, limitedFetch and the presets work as a user imports them', () => {
  const script = `
    import { Gate, limitedFetch, stripe, github } from '@sluice/outbound';
    const gate = new Gate({ policies: stripe({ mode: 'test' }).policies, maxQueue: 10_000, timeoutMs: 30_000 });
    const seen = [];
    const f = limitedFetch(gate, stripe().key, { fetch: async (req) => (seen.push(req.method), new Response('ok')) });
    const res = await f('https://api.stripe.com/v1/charges');
    const d = await gate.wait('k', { cost: 1, priority: 0 });
    const out = await gate.run('k', () => 42, { cost: 1 });
    console.log(JSON.stringify([res.status, seen, d.allowed, out, github().policies.map((p) => p.limit)]));
  `;
  assert.equal(
    run(process.execPath, ['--input-type=module', '-e', script], consumer).trim(),
    '[200,["GET"],true,42,[5000,100]]',
  );
  writeFileSync(
    join(consumer, 'outbound.ts'),
    `import { Gate, limitedFetch, type FetchLike, type WaitOptions } from '@sluice/outbound';
     const gate = new Gate({ policies: [{ algorithm: 'token-bucket', limit: 100, window: '1s' }], maxQueue: 10_000, timeoutMs: 30_000 });
     const opts: WaitOptions = { cost: 1, priority: 1, signal: AbortSignal.timeout(1000) };
     const n: Promise<number> = gate.run('k', async () => 1, opts);
     const f: FetchLike = limitedFetch(gate, 'k');
     // @ts-expect-error: run() needs a function
     gate.run('k', 42);
     export { n, f };
    `,
  );
  writeFileSync(
    join(consumer, 'tsconfig.outbound.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        target: 'ES2022',
        lib: ['ES2022', 'DOM'],
        noEmit: true,
        types: [],
      },
      files: ['outbound.ts'],
    }),
  );
  run(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(consumer, 'tsconfig.outbound.json')],
    consumer,
  );
});

test('the tarballs hold the build, not the sources, tests or docs pages', () => {
  const list = (name: PackageName) => run('tar', ['-tzf', tarball(name)], work);
  const sluice = list('sluice');
  assert.match(sluice, /package\/dist\/index\.js/);
  assert.match(sluice, /package\/dist\/index\.d\.ts/);
  assert.match(sluice, /package\/dist\/kit\/index\.js/);
  assert.doesNotMatch(sluice, /package\/docs\//);
  const guard = list('@sluice/guard');
  assert.match(guard, /package\/dist\/index\.js/);
  assert.match(guard, /package\/dist\/index\.d\.ts/);
  assert.match(guard, /package\/dist\/redis\/guard\.lua/);
  assert.match(guard, /package\/dist\/cjs\/redis\/guard\.lua/);
  const pow = list('@sluice/pow');
  assert.match(pow, /package\/dist\/index\.js/);
  assert.match(pow, /package\/dist\/browser\/sluice-pow\.js/);
  assert.doesNotMatch(pow, /package\/dist\/browser\/[a-z-]+\.d\.ts/); // bundled by esbuild, not compiled by tsc
  const outbound = list('@sluice/outbound');
  assert.match(outbound, /package\/dist\/index\.js/);
  assert.match(outbound, /package\/dist\/index\.d\.ts/);
  for (const listing of [sluice, guard, pow, outbound, list('@sluice/serve')]) {
    assert.doesNotMatch(listing, /\.test\.(js|ts)/);
    assert.doesNotMatch(listing, /package\/src\//);
    assert.doesNotMatch(listing, /\.map$/m);
  }
  // The CommonJS twin, with the scripts its modules read beside them; no source maps (they would name src/).
  assert.match(sluice, /package\/dist\/cjs\/package\.json/);
  assert.match(sluice, /package\/dist\/cjs\/index\.js/);
  assert.match(sluice, /package\/dist\/cjs\/index\.d\.ts/);
  assert.match(sluice, /package\/dist\/cjs\/stores\/redis\/scripts\/prelude\.lua/);
});

test('the packed bin validates the shipped example config, and the tarball carries the .proto files', () => {
  const out = run(
    join(consumer, 'node_modules/.bin/sluice'),
    ['check-config', '--config', join(consumer, 'node_modules/@sluice/serve/examples/policies.yaml')],
    consumer,
  );
  assert.equal(out, 'ok: 1 file(s), 1 domain(s), 6 rule(s)\n');
  const listing = run('tar', ['-tzf', tarball('@sluice/serve')], work);
  assert.match(listing, /package\/proto\/envoy\/service\/ratelimit\/v3\/rls\.proto/);
});

test('each package ships a README whose links are absolute: the docs pages are not shipped, so a relative link would break where npm shows it', () => {
  for (const name of PACKAGES) {
    const listing = new Set(run('tar', ['-tzf', tarball(name)], work).split('\n'));
    assert.ok(listing.has('package/README.md'), `${name} ships no README`);
    const readme = readFileSync(join(consumer, 'node_modules', name, 'README.md'), 'utf8');
    const relative = [...readme.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)]
      .map((m) => m[1]!)
      .filter((t) => !/^[a-z]+:/.test(t) && !listing.has(`package/${t.replace(/^\.\//, '')}`));
    assert.deepEqual(relative, [], `${name}'s README links to files its tarball lacks`);
  }
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
    for (const m of text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+['"]([^'"]+)['"]/gm)) {
      const spec = m[1]!;
      if (spec.startsWith('.')) visit(resolve(dirname(file), spec));
      else if (!spec.startsWith('node:')) bare.add(spec);
    }
  };
  visit(join(root, 'index.js'));
  assert.ok(seen.size > 10, `walked ${seen.size} files`);
  assert.deepEqual([...bare], []);
});

// Node, Bun, Deno and workerd, each importing the tarball installed above (test/runtimes/consumer.ts).
runtimeConsumerTests(consumer);
// A CommonJS project of npm's default shape, requiring the same tarball (test/package/commonjs.ts).
commonJsConsumerTests(work, () => PACKAGES.map((p) => tarballs[p]));
nestConsumerTests(work, () => [tarballs.sluice]);
