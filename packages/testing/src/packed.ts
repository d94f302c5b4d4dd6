// The packed tarballs of the published packages, made once per state of the sources and shared by every
// test process that installs them (test/package, test/docs): `npm pack` rebuilds each dist/, so two packs
// at once would also race on its files. The cache is keyed by a hash of everything the packs read; a lock
// directory serialises the packing.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '../../..');

/** The published packages, in build order (a product's build reads the types of what it imports). */
export const PACKAGES = ['sluice', '@sluice/guard', '@sluice/pow', '@sluice/outbound', '@sluice/serve'] as const;
export type PackageName = (typeof PACKAGES)[number];
const folderOf = (name: PackageName) => join('packages', name.replace('@sluice/', ''));

const INPUTS = [
  'package.json',
  'tsconfig.base.json',
  'scripts',
  ...PACKAGES.flatMap((p) =>
    ['package.json', 'tsconfig.build.json', 'tsconfig.browser.json', 'README.md', 'src', 'proto', 'examples'].map((f) =>
      join(folderOf(p), f),
    ),
  ),
];

function hashInputs(): string {
  const h = createHash('sha256').update(ROOT);
  const visit = (rel: string) => {
    const abs = join(ROOT, rel);
    if (!existsSync(abs)) return;
    if (statSync(abs).isDirectory()) {
      for (const name of readdirSync(abs).sort()) visit(join(rel, name));
    } else {
      h.update(`\0${rel}\0`).update(readFileSync(abs));
    }
  };
  for (const input of INPUTS) visit(input);
  return h.digest('hex').slice(0, 16);
}

const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

export interface Packed {
  /** Absolute path of sluice's .tgz. */
  readonly tarball: string;
  /** Absolute path of each package's .tgz. */
  readonly tarballs: Readonly<Record<PackageName, string>>;
  /** When the pack (and so the build it ran) began, in epoch ms. */
  readonly packedAt: number;
}

/** The tarballs `npm pack` makes of the packages as they are now; packed at most once per state of them. */
export function packedTarball(): Packed {
  const dir = join(tmpdir(), `sluice-packed-${hashInputs()}`);
  const lock = `${dir}.lock`;
  const deadline = Date.now() + 300_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      // A lock older than the longest pack is a crashed packer's.
      if (Date.now() - statSync(lock, { throwIfNoEntry: false })!.mtimeMs > 300_000)
        rmSync(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`waited 5 minutes for ${lock}`);
      sleep(200);
    }
  }
  try {
    const done = join(dir, 'packed.json');
    const cached = existsSync(done) ? (JSON.parse(readFileSync(done, 'utf8')) as Packed) : undefined;
    // The tests read dist/ as the pack built it: a pack an earlier run made of the same sources, at the
    // same path, for a checkout since cloned anew (no dist/, or an older one), is made again.
    const built = PACKAGES.map(
      (p) =>
        statSync(join(ROOT, folderOf(p), 'dist/index.js'), { throwIfNoEntry: false })?.mtimeMs ??
        statSync(join(ROOT, folderOf(p), 'dist/cli/main.js'), { throwIfNoEntry: false })?.mtimeMs ??
        0,
    );
    if (cached !== undefined && Math.min(...built) >= cached.packedAt - 1000) return cached;
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const packedAt = Date.now();
    // One package at a time, in build order: each pack runs its package's prepack (the build).
    const tarballs = {} as Record<PackageName, string>;
    for (const name of PACKAGES) {
      const file = execFileSync('npm', ['pack', '--silent', '--pack-destination', dir, '-w', name], {
        cwd: ROOT,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      })
        .trim()
        .split('\n')
        .pop()!;
      tarballs[name] = join(dir, file);
    }
    const packed: Packed = { tarball: tarballs.sluice, tarballs, packedAt };
    writeFileSync(done, JSON.stringify(packed));
    return packed;
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/**
 * A new consumer project as `npm init -y` makes it ("type": "commonjs", npm's default), or turned into an
 * ES module project, with the tarballs installed in one `npm install` (offline where npm's cache allows;
 * a product's dependency on sluice is met by sluice's tarball beside it).
 */
export function consumerProject(
  dir: string,
  type: 'commonjs' | 'module',
  tarballs: string | readonly string[],
  extraInstallArgs: readonly string[] = [],
): string {
  mkdirSync(dir, { recursive: true });
  const run = (args: string[]) =>
    execFileSync('npm', args, { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  run(['init', '-y']);
  if (type === 'module') run(['pkg', 'set', 'type=module']);
  // --prefer-offline, not --offline: after a bare `npm ci` the cache holds the lockfile's tarballs but not the
  // registry metadata an install needs to resolve the optional dependencies' ranges, and --offline then
  // skips them silently (they are optional), leaving `sluice serve` without yaml on a fresh machine.
  run([
    'install',
    '--no-audit',
    '--no-fund',
    '--prefer-offline',
    ...extraInstallArgs,
    ...(typeof tarballs === 'string' ? [tarballs] : tarballs),
  ]);
  return dir;
}
