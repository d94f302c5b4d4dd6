// Installs a Debian package the end-to-end tests need when its binary is missing, as .ci/run does, so a
// fresh machine runs them instead of skipping them.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export function ensureBinary(path: string, pkg: string): void {
  if (existsSync(path)) return;
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  if (spawnSync('apt-get', ['install', '-y', '-qq', pkg], { env, stdio: 'ignore' }).status !== 0) {
    execFileSync('apt-get', ['update', '-qq'], { env, stdio: 'ignore' });
    execFileSync('apt-get', ['install', '-y', '-qq', pkg], { env, stdio: 'ignore' });
  }
  if (!existsSync(path)) throw new Error(`${path} is still missing after apt-get install ${pkg}`);
}
