// The README is a user's guide: short, with working examples and links that resolve. Every TypeScript block
// of it and of docs/*.md is type-checked and run from the packed tarball by examples.test.ts; here, every
// YAML block of those pages that is not a marked fragment is validated by `sluice check-config`, and every
// shell block is parsed, and every npm script, sluice command and serve flag it names must exist.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { allBlocks, blocksOf, isTypeScript, slug } from './blocks.js';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };

const tsBlocks = blocksOf('README.md', README).filter(isTypeScript);

const work = mkdtempSync(join(tmpdir(), 'sluice-readme-'));
after(() => rmSync(work, { recursive: true, force: true }));

function cli(args: string[], cwd = ROOT) {
  return spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'packages/serve/src/cli/main.ts'), ...args], {
    cwd,
    encoding: 'utf8',
    timeout: 60_000,
  });
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
  for (const page of [
    'algorithms',
    'redis',
    'distributed',
    'http',
    'service',
    'guard',
    'pow',
    'outbound',
    'benchmarks',
    'errors',
  ]) {
    assert.ok(
      docs.some((t) => t.startsWith(`docs/${page}.md`)),
      `the README does not link docs/${page}.md`,
    );
  }
  for (const link of links) {
    const [path, anchor] = link.split('#') as [string, string | undefined];
    const target = path === '' ? join(ROOT, 'README.md') : join(ROOT, path);
    assert.ok(existsSync(target), `README links to ${link}, which does not exist`);
    if (anchor && target.endsWith('.md'))
      assert.ok(anchorsOf(target).has(anchor), `README links to ${link}: no heading has that anchor`);
  }
});

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
function anchorsOf(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/^```[\s\S]*?^```/gm, '');
  return new Set(
    [...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) =>
      m[1]!
        .trim()
        .toLowerCase()
        .replace(/[^\w\- ]/g, '')
        .replace(/ /g, '-'),
    ),
  );
}

test('the README has a TypeScript example for each job, and its quick start says how to run and test', () => {
  assert.ok(tsBlocks.length >= 9, `only ${tsBlocks.length} TypeScript blocks`);
  for (const spec of [
    'sluice',
    'sluice/http',
    'sluice/express',
    'sluice/fastify',
    'sluice/hono',
    'sluice/redis',
    '@sluice/guard',
    '@sluice/pow',
    '@sluice/outbound',
  ]) {
    assert.ok(
      tsBlocks.some((b) => b.code.includes(`from '${spec}'`)),
      `no README example imports '${spec}'`,
    );
  }
  assert.match(README, /npm install && npm start/);
  assert.match(README, /npm test/);
});

test('every YAML block of the README and docs/ that is not a marked fragment passes `sluice check-config`', () => {
  const yaml = allBlocks().filter((b) => (b.lang === 'yaml' || b.lang === 'yml') && b.fragment === undefined);
  assert.ok(
    yaml.some((b) => b.page === 'README.md'),
    'no YAML block in the README',
  );
  assert.ok(yaml.length >= 3, `only ${yaml.length} complete YAML blocks`);
  for (const b of yaml) {
    const name = /^#\s*([\w.-]+\.ya?ml)/.exec(b.code)?.[1] ?? 'policies.yaml';
    const dir = join(work, slug(b));
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, name), b.code + '\n');
    const r = cli(['check-config', '--config', join(dir, name)]);
    assert.equal(r.status, 0, `${b.page}:${b.line}: check-config said\n${r.stdout}${r.stderr}`);
  }
});

test('the shell blocks of the README and docs/ parse, and name only npm scripts, sluice commands and serve flags that exist', () => {
  const shell = allBlocks().filter((b) => ['sh', 'bash', 'shell'].includes(b.lang));
  assert.ok(shell.filter((b) => b.page === 'README.md').length >= 2, 'no shell blocks in the README');
  const commands = cli(['--help']).stdout;
  const serveFlags = cli(['serve', '--help']);
  const serveHelp = serveFlags.stdout + serveFlags.stderr;
  for (const b of shell) {
    const syntax = spawnSync('bash', ['-n'], { input: b.code, encoding: 'utf8' });
    assert.equal(syntax.status, 0, `${b.page}:${b.line}: bash -n: ${syntax.stderr}`);
    for (const raw of b.code.split('\n')) {
      const line = raw.replace(/\s#.*$/, '').trim();
      for (const cmd of line.split(/&&|;/).map((c) => c.trim())) {
        const npm = /^npm (run )?([\w:-]+)/.exec(cmd);
        if (npm?.[1]) assert.ok(pkg.scripts[npm[2]!], `${b.page}:${b.line}: 'npm run ${npm[2]}' is not a script`);
        else if (npm && !['install', 'ci', 'test', 'start'].includes(npm[2]!))
          assert.fail(`${b.page}:${b.line}: unexpected npm command '${cmd}'`);
        if (npm?.[2] === 'start' || npm?.[2] === 'test') assert.ok(pkg.scripts[npm[2]], `no '${npm[2]}' script`);
        const sluice = /^npx sluice ([\w-]+)(.*)$/.exec(cmd);
        if (!sluice) continue;
        assert.match(
          commands,
          new RegExp(`\\b${sluice[1]}\\b`),
          `${b.page}:${b.line}: 'sluice ${sluice[1]}' is not a command`,
        );
        if (sluice[1] === 'serve' || sluice[1] === 'check-config') {
          for (const flag of sluice[2]!.match(/--[\w-]+/g) ?? [])
            assert.ok(serveHelp.includes(flag), `${b.page}:${b.line}: sluice serve has no ${flag}`);
        }
      }
    }
  }
});
