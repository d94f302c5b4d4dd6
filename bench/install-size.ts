// What `npm install` puts on disk: each package's packed tarball installed alone (a product beside sluice's
// tarball, which it depends on) into a fresh empty project, counted as npm leaves node_modules (packages,
// and bytes by `du -sb`), with and without optional dependencies; beside express-rate-limit and
// rate-limiter-flexible from the registry, measured the same way. BEFORE=<git ref> also measures the
// single package that ref packs (the layout before the package split: one `npm pack` at the root).
//
//   node --conditions=sluice-source --import tsx bench/install-size.ts
//   BEFORE=8e79c93 node --conditions=sluice-source --import tsx bench/install-size.ts
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packedTarball, ROOT } from '../packages/testing/src/packed.js';

interface Installed {
  packages: number;
  bytes: number;
}

/** Installs `specs` (tarball paths or registry names) together into a new empty project. */
function install(specs: string[], omitOptional: boolean): Installed {
  const dir = mkdtempSync(join(tmpdir(), 'install-size-'));
  try {
    writeFileSync(join(dir, 'package.json'), '{"name":"probe","version":"1.0.0","private":true}');
    const args = ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--no-package-lock', ...specs];
    if (omitOptional) args.push('--omit=optional');
    execFileSync('npm', args, { cwd: dir, stdio: 'ignore' });
    const modules = join(dir, 'node_modules');
    let packages = 0;
    for (const name of readdirSync(modules)) {
      if (name.startsWith('.')) continue;
      packages += name.startsWith('@') ? readdirSync(join(modules, name)).length : 1;
    }
    const bytes = Number(execFileSync('du', ['-sb', modules], { encoding: 'utf8' }).split('\t')[0]);
    return { packages, bytes };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The tarball `npm pack` makes at the repository's root at `ref` (the one-package layout). */
function packedAt(ref: string): string {
  const tree = mkdtempSync(join(tmpdir(), 'install-size-before-'));
  execFileSync('git', ['worktree', 'add', '--detach', tree, ref], { cwd: ROOT, stdio: 'ignore' });
  symlinkSync(join(ROOT, 'node_modules'), join(tree, 'node_modules'), 'dir');
  const out = join(tmpdir(), `install-size-${ref}`);
  mkdirSync(out, { recursive: true });
  const file = execFileSync('npm', ['pack', '--silent', '--pack-destination', out], { cwd: tree, encoding: 'utf8' })
    .trim()
    .split('\n')
    .pop()!;
  execFileSync('git', ['worktree', 'remove', '--force', tree], { cwd: ROOT, stdio: 'ignore' });
  return join(out, file);
}

const { tarballs } = packedTarball();
const rows: Array<[string, string[]]> = [
  ['sluice', [tarballs.sluice]],
  ['@sluice/guard (with sluice)', [tarballs.sluice, tarballs['@sluice/guard']]],
  ['@sluice/pow (with sluice)', [tarballs.sluice, tarballs['@sluice/pow']]],
  ['@sluice/outbound (with sluice)', [tarballs.sluice, tarballs['@sluice/outbound']]],
  [
    '@sluice/serve (with sluice, @sluice/guard)',
    [tarballs.sluice, tarballs['@sluice/guard'], tarballs['@sluice/serve']],
  ],
  ['express-rate-limit (npm installs its peer express)', ['express-rate-limit']],
  ['rate-limiter-flexible', ['rate-limiter-flexible']],
];
if (process.env.BEFORE) rows.unshift([`sluice at ${process.env.BEFORE} (one package)`, [packedAt(process.env.BEFORE)]]);

const kib = (b: number) => `${Math.round(b / 1024).toLocaleString('en')} KiB`;
const lines = [
  `# npm install sizes, ${new Date().toISOString()}`,
  '',
  'Each row: the tarballs installed together into a new empty project (`npm install --ignore-scripts`),',
  'node_modules counted (packages; bytes by `du -sb`). Command: `node --conditions=sluice-source --import tsx bench/install-size.ts`.',
  '',
  '| install | packages | bytes | with --omit=optional |',
  '| --- | --- | --- | --- |',
];
for (const [name, specs] of rows) {
  const all = install(specs, false);
  const lean = install(specs, true);
  lines.push(`| ${name} | ${all.packages} | ${kib(all.bytes)} | ${lean.packages}, ${kib(lean.bytes)} |`);
  console.log(lines.at(-1));
}
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
writeFileSync(join(ROOT, 'bench/results', `install-size-${stamp}.md`), `${lines.join('\n')}\n`);
