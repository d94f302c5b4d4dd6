// A Next.js app from a fixture folder, built and started as a user would (`next build`, `next start` on a
// free port), with `sluice` linked (as a `file:` dependency links it) to a build of this repository made
// for it: its own dist/ and package.json, so that no other test reading or packing the repository's dist/
// meanwhile sees it change. Both live under the repository's .tmp/: Turbopack compiles nothing outside its root.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { withoutSourceCondition } from '../../../../scripts/pack-manifest.mjs';
import { freePort } from '../../../testing/src/harness.js';

/** The sluice package's folder (its fixtures), and the repository's (node_modules, .tmp). */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const REPO = resolve(ROOT, '../..');
const NEXT = join(REPO, 'node_modules/next/dist/bin/next');

export interface NextApp {
  readonly dir: string;
  readonly url: string;
  /** The `next start` process (its CPU time is the server's). */
  readonly pid: number;
  /** What `next build` printed (its route table says which runtime each route got). */
  readonly buildLog: string;
  /** What `next start` has printed so far (a route's error and its stack are logged there). */
  output(): string;
  stop(): Promise<void>;
}

/**
 * Builds sluice as its ES exports need it (tsc, and the Lua scripts beside the modules that read them) into
 * a folder of its own with the package.json; returns the folder, for startNextApp. Remove it when done.
 */
export function buildSluice(): string {
  mkdirSync(join(REPO, '.tmp'), { recursive: true });
  const pkg = mkdtempSync(join(REPO, '.tmp', 'next-sluice-'));
  const dist = join(pkg, 'dist');
  execFileSync(
    process.execPath,
    [join(REPO, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', dist],
    { cwd: ROOT, stdio: 'pipe' },
  );
  cpSync(join(ROOT, 'src/stores/redis/scripts'), join(dist, 'stores/redis/scripts'), { recursive: true });
  // As npm pack ships it: without the sluice-source condition (this folder has no src/).
  const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { exports: unknown };
  writeFileSync(
    join(pkg, 'package.json'),
    JSON.stringify({ ...manifest, exports: withoutSourceCondition(manifest.exports) }),
  );
  return pkg;
}

/** Copies `fixture`, with `sluice` linked to `sluice` (buildSluice's folder), builds it once and starts it; `env` goes to both. */
export async function startNextApp(
  fixture: string,
  sluice: string,
  env: Record<string, string> = {},
): Promise<NextApp> {
  const dir = mkdtempSync(join(REPO, '.tmp', 'next-app-'));
  cpSync(fixture, dir, { recursive: true });
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(sluice, join(dir, 'node_modules/sluice'), 'dir');
  const fullEnv = { ...process.env, NEXT_TELEMETRY_DISABLED: '1', SLUICE_REPO_ROOT: REPO, ...env };
  let buildLog: string;
  try {
    buildLog = execFileSync(process.execPath, [NEXT, 'build'], {
      cwd: dir,
      env: fullEnv,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 300_000,
    });
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string };
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`next build failed:\n${err.stdout ?? ''}\n${err.stderr ?? ''}`);
  }
  const port = await freePort();
  const server: ChildProcess = spawn(process.execPath, [NEXT, 'start', '-p', String(port), '-H', '127.0.0.1'], {
    cwd: dir,
    env: fullEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  server.stdout!.on('data', (d) => (output += d));
  server.stderr!.on('data', (d) => (output += d));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (server.exitCode === null) {
      const gone = new Promise((r) => server.once('exit', r));
      server.kill('SIGTERM');
      await gone;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  for (let i = 0; ; i++) {
    if (server.exitCode !== null) {
      await stop();
      throw new Error(`next start exited (${server.exitCode}):\n${output}`);
    }
    try {
      await fetch(`${url}/`);
      break;
    } catch {
      if (i > 300) {
        await stop();
        throw new Error(`next start did not answer within 30 s:\n${output}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return { dir, url, pid: server.pid!, buildLog, output: () => output, stop };
}
