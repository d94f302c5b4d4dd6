// The README is a user's guide: short, with working examples and links that resolve. Its TypeScript
// blocks are type-checked against the source (imports of `sluice/...` mapped to src/ through package.json's
// exports), and those that do not listen on a port are run (the Redis one on the test Redis); its YAML
// block is validated by `sluice check-config`; its shell blocks are parsed, and every npm script, sluice
// command and serve flag they name must exist.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  scripts: Record<string, string>;
  exports: Record<string, string | { types: string } | { import: { types: string } }>;
};

interface Block {
  readonly lang: string;
  readonly code: string;
  readonly line: number;
}

function blocks(markdown: string): Block[] {
  const out: Block[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const start = i + 1;
    while (++i < lines.length && !/^```\s*$/.test(lines[i]!));
    out.push({ lang: open[1]!, code: lines.slice(start, i).join('\n'), line: start });
  }
  return out;
}

const ALL = blocks(README);
const byLang = (...langs: string[]) => ALL.filter((b) => langs.includes(b.lang));

// `sluice/redis` -> <root>/src/stores/redis/index.ts, from the export's types path (dist/x.d.ts -> src/x.ts).
const SOURCE_OF = new Map<string, string>();
for (const [sub, target] of Object.entries(pkg.exports)) {
  if (typeof target !== 'object') continue;
  const types = 'types' in target ? target.types : target.import.types;
  const file = types.replace(/^\.\/dist\//, 'src/').replace(/\.d\.ts$/, '.ts');
  SOURCE_OF.set(sub === '.' ? 'sluice' : `sluice/${sub.slice(2)}`, join(ROOT, file));
}

const work = mkdtempSync(join(tmpdir(), 'sluice-readme-'));
writeFileSync(join(work, 'package.json'), '{"type":"module"}\n');
symlinkSync(join(ROOT, 'node_modules'), join(work, 'node_modules'), 'dir');
after(() => rmSync(work, { recursive: true, force: true }));

function mapImports(code: string, line: number): string {
  return code.replace(/from '(sluice(?:\/[\w/.-]+)?)'/g, (_, spec: string) => {
    const file = SOURCE_OF.get(spec);
    assert.ok(file, `README line ${line}: imports '${spec}', which package.json does not export`);
    return `from '${file.replace(/\.ts$/, '.js')}'`;
  });
}

const tsBlocks = byLang('ts', 'typescript').map((b, i) => ({ ...b, file: join(work, `block-${i + 1}-line-${b.line}.ts`) }));
for (const b of tsBlocks) writeFileSync(b.file, mapImports(b.code, b.line));

function cli(args: string[], cwd = ROOT) {
  return spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), ...args], { cwd, encoding: 'utf8', timeout: 60_000 });
}

test('the README is a guide: at most about 500 lines, none over 300 characters', () => {
  const lines = README.split('\n');
  assert.ok(lines.length <= 500, `README.md has ${lines.length} lines`);
  const long = lines.map((l, i) => [i + 1, l.length] as const).filter(([, n]) => n > 300);
  assert.deepEqual(long, [], `lines over 300 characters (line, length): ${JSON.stringify(long)}`);
});

test('every relative link in the README resolves, and every docs/ page it links to exists with its anchor', () => {
  const prose = README.replace(/^```[\s\S]*?^```/gm, '');
  const links = [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((t) => !/^[a-z]+:/.test(t));
  const docs = links.filter((t) => t.startsWith('docs/'));
  assert.ok(docs.length >= 10, `only ${docs.length} links into docs/`);
  for (const page of ['algorithms', 'redis', 'distributed', 'http', 'service', 'guard', 'pow', 'outbound', 'benchmarks', 'errors']) {
    assert.ok(docs.some((t) => t.startsWith(`docs/${page}.md`)), `the README does not link docs/${page}.md`);
  }
  for (const link of links) {
    const [path, anchor] = link.split('#') as [string, string | undefined];
    const target = path === '' ? join(ROOT, 'README.md') : join(ROOT, path);
    assert.ok(existsSync(target), `README links to ${link}, which does not exist`);
    if (anchor && target.endsWith('.md')) assert.ok(anchorsOf(target).has(anchor), `README links to ${link}: no heading has that anchor`);
  }
});

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
function anchorsOf(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/^```[\s\S]*?^```/gm, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => m[1]!.trim().toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-')));
}

test('the README has a TypeScript example for each job, and its quick start says how to run and test', () => {
  assert.ok(tsBlocks.length >= 9, `only ${tsBlocks.length} TypeScript blocks`);
  for (const spec of ['sluice', 'sluice/http', 'sluice/express', 'sluice/fastify', 'sluice/hono', 'sluice/redis', 'sluice/guard', 'sluice/pow', 'sluice/outbound']) {
    assert.ok(tsBlocks.some((b) => b.code.includes(`from '${spec}'`)), `no README example imports '${spec}'`);
  }
  assert.match(README, /npm install && npm start/);
  assert.match(README, /npm test/);
});

test("the README's TypeScript blocks type-check against the source", () => {
  writeFileSync(join(work, 'tsconfig.json'), JSON.stringify({
    extends: join(ROOT, 'tsconfig.json'),
    compilerOptions: { noEmit: true, rootDir: '/', declaration: false, sourceMap: false },
    include: [],
    files: tsBlocks.map((b) => b.file),
  }));
  const r = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(work, 'tsconfig.json')], { encoding: 'utf8', timeout: 240_000 });
  assert.equal(r.status, 0, `tsc on the README's blocks:\n${r.stdout}${r.stderr}`);
});

// A block is run unless it serves (it would hold a port until killed). The Redis block runs against the
// test Redis (REDIS_URL, default 127.0.0.1:6379) under a prefix of its own, and must be decided by Redis:
// the store waits for the client's first connection, so the example needs no ready-wait.
const runnable = tsBlocks.filter((b) => !/\.listen\(|\bserve\(/.test(b.code));

test('the README blocks that do not serve run to completion; the Redis one is decided by Redis', () => {
  assert.ok(runnable.length >= 5, `only ${runnable.length} runnable blocks`);
  const prefix = `sluice-readme-${process.pid}-${Date.now()}`;
  for (const b of runnable) {
    const redis = b.code.includes("from 'sluice/redis'");
    if (redis) writeFileSync(b.file, mapImports(b.code, b.line).replace(/prefix: '[^']*'/, `prefix: '${prefix}'`));
    const r = spawnSync(process.execPath, ['--import', 'tsx', b.file], { cwd: work, encoding: 'utf8', timeout: 120_000, env: { ...process.env, NODE_ENV: 'development' } });
    assert.equal(r.status, 0, `README block at line ${b.line} exited ${r.status ?? r.signal}:\n${r.stdout}${r.stderr}`);
    if (redis) assert.match(r.stdout, /^true 99\n/, `README block at line ${b.line}: the first decision was not Redis's (${r.stdout})`);
  }
});

test("the README's YAML config passes `sluice check-config`", () => {
  const yaml = byLang('yaml', 'yml');
  assert.ok(yaml.length >= 1, 'no YAML block');
  for (const b of yaml) {
    const name = /^#\s*([\w.-]+\.ya?ml)/.exec(b.code)?.[1] ?? 'policies.yaml';
    writeFileSync(join(work, name), b.code + '\n');
    const r = cli(['check-config', '--config', join(work, name)]);
    assert.equal(r.status, 0, `README line ${b.line}: check-config said\n${r.stdout}${r.stderr}`);
  }
});

test("the README's shell blocks parse, and name only npm scripts, sluice commands and serve flags that exist", () => {
  const shell = byLang('sh', 'bash', 'shell');
  assert.ok(shell.length >= 2, 'no shell blocks');
  const commands = cli(['--help']).stdout;
  const serveFlags = cli(['serve', '--help']);
  const serveHelp = serveFlags.stdout + serveFlags.stderr;
  for (const b of shell) {
    const syntax = spawnSync('bash', ['-n'], { input: b.code, encoding: 'utf8' });
    assert.equal(syntax.status, 0, `README line ${b.line}: bash -n: ${syntax.stderr}`);
    for (const raw of b.code.split('\n')) {
      const line = raw.replace(/\s#.*$/, '').trim();
      for (const cmd of line.split(/&&|;/).map((c) => c.trim())) {
        const npm = /^npm (run )?([\w:-]+)/.exec(cmd);
        if (npm && npm[1]) assert.ok(pkg.scripts[npm[2]!], `README line ${b.line}: 'npm run ${npm[2]}' is not a script`);
        else if (npm && !['install', 'ci', 'test', 'start'].includes(npm[2]!)) assert.fail(`README line ${b.line}: unexpected npm command '${cmd}'`);
        if (npm?.[2] === 'start' || npm?.[2] === 'test') assert.ok(pkg.scripts[npm[2]], `no '${npm[2]}' script`);
        const sluice = /^npx sluice ([\w-]+)(.*)$/.exec(cmd);
        if (!sluice) continue;
        assert.match(commands, new RegExp(`\\b${sluice[1]}\\b`), `README line ${b.line}: 'sluice ${sluice[1]}' is not a command`);
        if (sluice[1] === 'serve' || sluice[1] === 'check-config') {
          for (const flag of sluice[2]!.match(/--[\w-]+/g) ?? []) assert.ok(serveHelp.includes(flag), `README line ${b.line}: sluice serve has no ${flag}`);
        }
      }
    }
  }
});
