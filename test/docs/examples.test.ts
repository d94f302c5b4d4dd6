// Every TypeScript block of README.md and docs/*.md, as a user meets it: pasted into a new project that has
// the packed tarball installed, one made by `npm init -y` (CommonJS, npm's default) and one with
// "type": "module". A complete block type-checks under `tsc --strict` and runs to its end within a time
// limit (one that hangs fails); one that serves runs until it answers HTTP on its port. A fragment (first
// line `// Fragment [frame]: ...`) type-checks inside its frame, test/docs/frames/<frame>.ts. Blocks with
// top-level await are .mts files in the CommonJS project, as the README tells its readers.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { freePort, redisUrl } from '../../packages/testing/src/harness.js';
import { consumerProject, packedTarball } from '../../packages/testing/src/packed.js';
import { allBlocks, awaitsAtTopLevel, FRAMES, isTypeScript, ROOT, serves, slug, type Block } from './blocks.js';

const RUN_LIMIT_MS = 60_000;
const TSX = join(ROOT, 'node_modules/.bin/tsx');
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');

const ts = allBlocks().filter(isTypeScript);
const complete = ts.filter((b) => b.fragment === undefined);
const fragments = ts.filter((b) => b.fragment !== undefined);

const work = mkdtempSync(join(tmpdir(), 'sluice-docs-examples-'));
after(() => rmSync(work, { recursive: true, force: true }));
const projects = { commonjs: join(work, 'commonjs'), module: join(work, 'module') } as const;
type Kind = keyof typeof projects;

/** The file a block is pasted into: .mts in the CommonJS project when it awaits at the top level. */
const fileOf = (b: Block, kind: Kind) =>
  join(projects[kind], `${slug(b)}.${kind === 'commonjs' && awaitsAtTopLevel(b) ? 'mts' : 'ts'}`);
const fragmentFile = (b: Block) => join(projects.module, `${slug(b)}.fragment.ts`);

/** The packages the blocks import besides sluice: a user installs them; here they come from the repo's. */
function thirdParty(): Set<string> {
  const out = new Set(['@types/node', '@types/express']);
  const frames = fragments
    .map((b) => join(FRAMES, `${b.fragment}.ts`))
    .filter((f) => existsSync(f))
    .map((f) => readFileSync(f, 'utf8'));
  for (const code of [...ts.map((b) => b.code), ...frames]) {
    for (const m of code.matchAll(/(?:from|import) '([^'.][^']*)'/g)) {
      const spec = m[1]!;
      if (spec.startsWith('node:') || spec === 'sluice' || spec.startsWith('sluice/')) continue;
      const pkg = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;
      out.add(pkg);
      // A package without types of its own has them in @types (koa): a user installs both.
      const types = `@types/${pkg.startsWith('@') ? pkg.slice(1).replace('/', '__') : pkg}`;
      if (existsSync(join(ROOT, 'node_modules', types))) out.add(types);
    }
  }
  return out;
}

// Decorators as a NestJS project's tsconfig has them (docs/nestjs.md); no other block uses any.
const COMPILER_OPTIONS = {
  strict: true,
  target: 'ES2022',
  module: 'NodeNext',
  moduleResolution: 'NodeNext',
  lib: ['ES2022', 'DOM'],
  types: ['node'],
  noEmit: true,
  skipLibCheck: true,
  experimentalDecorators: true,
  emitDecoratorMetadata: true,
};

before(() => {
  const { tarballs } = packedTarball();
  for (const kind of ['commonjs', 'module'] as const) {
    consumerProject(projects[kind], kind, Object.values(tarballs));
    // tsx reads it when it runs a block; tsc is given tsconfig.check.json, with the files.
    writeFileSync(join(projects[kind], 'tsconfig.json'), JSON.stringify({ compilerOptions: COMPILER_OPTIONS }));
    for (const pkg of thirdParty()) {
      const link = join(projects[kind], 'node_modules', pkg);
      if (existsSync(link)) continue;
      assert.ok(
        existsSync(join(ROOT, 'node_modules', pkg)),
        `a docs block imports '${pkg}', which is not a dev dependency`,
      );
      mkdirSync(dirname(link), { recursive: true });
      symlinkSync(join(ROOT, 'node_modules', pkg), link, 'dir');
    }
    for (const b of complete) writeFileSync(fileOf(b, kind), b.code + '\n');
  }
  for (const b of fragments) {
    const frame = join(FRAMES, `${b.fragment}.ts`);
    // A missing frame is the first test's failure, by name.
    writeFileSync(fragmentFile(b), `${existsSync(frame) ? readFileSync(frame, 'utf8') : ''}\n${b.code}\nexport {};\n`);
  }
  assert.equal(
    JSON.parse(readFileSync(join(projects.commonjs, 'package.json'), 'utf8')).type ?? 'commonjs',
    'commonjs',
  );
});

const where = (b: Block) => `${b.page}:${b.line}`;

test('every TypeScript block of the README and docs/ is complete or a fragment whose frame exists', () => {
  assert.ok(ts.length >= 30, `only ${ts.length} TypeScript blocks found`);
  assert.ok(complete.length >= 15, `only ${complete.length} complete blocks`);
  for (const b of fragments) {
    assert.ok(b.fragment, `${where(b)}: a TypeScript fragment names its frame: // Fragment [frame]: ...`);
    assert.ok(existsSync(join(FRAMES, `${b.fragment}.ts`)), `${where(b)}: no frame test/docs/frames/${b.fragment}.ts`);
  }
});

function tsc(kind: Kind, files: string[]) {
  const config = join(projects[kind], 'tsconfig.check.json');
  writeFileSync(config, JSON.stringify({ compilerOptions: COMPILER_OPTIONS, files }));
  return spawnSync(process.execPath, [TSC, '-p', config], { cwd: projects[kind], encoding: 'utf8', timeout: 240_000 });
}

test('in a "type": "module" project, every complete block and every fragment in its frame type-checks under tsc --strict', () => {
  const r = tsc('module', [...complete.map((b) => fileOf(b, 'module')), ...fragments.map(fragmentFile)]);
  assert.equal(r.status, 0, `tsc --strict:\n${r.stdout}${r.stderr}`);
});

test('in an `npm init -y` (CommonJS) project, every complete block type-checks under tsc --strict', () => {
  const r = tsc(
    'commonjs',
    complete.map((b) => fileOf(b, 'commonjs')),
  );
  assert.equal(r.status, 0, `tsc --strict:\n${r.stdout}${r.stderr}`);
});

interface Outcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  timedOut: boolean;
  answered?: number;
}

/** Runs a block with tsx as `npx tsx file.ts` would; a serving block until its port answers, then stopped. */
async function runBlock(b: Block, kind: Kind): Promise<Outcome> {
  let code = b.code;
  const port = serves(b) ? await freePort() : undefined;
  if (port) code = code.replace(/\b3000\b/g, String(port));
  // Redis keys of this run only, on the test Redis: the shared server is never flushed.
  code = code.replace(/prefix: '([^']*)'/g, (_, p: string) => `prefix: 'sluice-docs-${process.pid}-${kind}-${p}'`);
  const file = fileOf(b, kind);
  writeFileSync(file, code + '\n');
  const env: NodeJS.ProcessEnv = { ...process.env, REDIS_URL: redisUrl() };
  delete env.NODE_ENV; // as in a new shell: the examples' secrets are then optional
  // A process group of its own: tsx runs the block in a child of its own, and a hung block is killed with it.
  const child = spawn(TSX, [file], { cwd: projects[kind], env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const stop = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // the group is gone already
    }
  };
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  let timedOut = false;
  let answered: number | undefined;
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  const limit = setTimeout(() => ((timedOut = true), stop('SIGKILL')), RUN_LIMIT_MS);
  if (port) {
    const end = Date.now() + RUN_LIMIT_MS - 5_000;
    while (answered === undefined && Date.now() < end && child.exitCode === null) {
      try {
        answered = (await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(1000) })).status;
      } catch {
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    stop('SIGTERM');
  }
  await exited;
  clearTimeout(limit);
  stop('SIGKILL'); // anything the block left behind in its group
  return { code: child.exitCode, signal: child.signalCode, output, timedOut, answered };
}

for (const kind of ['module', 'commonjs'] as const) {
  for (const b of complete) {
    const as = kind === 'commonjs' && awaitsAtTopLevel(b) ? '.mts' : '.ts';
    test(`${where(b)} runs as pasted in a ${kind === 'module' ? '"type": "module"' : 'CommonJS'} project (${as})`, async () => {
      const r = await runBlock(b, kind);
      if (serves(b)) {
        assert.ok(
          r.answered !== undefined && r.answered < 500,
          `${where(b)} never answered HTTP (${r.answered ?? 'no answer'}); exit ${r.code ?? r.signal}:\n${r.output}`,
        );
      } else {
        assert.ok(!r.timedOut, `${where(b)} did not exit within ${RUN_LIMIT_MS / 1000} s (it hangs):\n${r.output}`);
        assert.equal(r.code, 0, `${where(b)} exited ${r.code ?? r.signal}:\n${r.output}`);
      }
    });
  }
}
