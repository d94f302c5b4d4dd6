// Bundles a test entry for a runtime that is not Node: sluice's source, fast-check and hono in one ES
// module, with node:test and node:assert replaced by the shims beside this file. Any other `node:` import
// fails the build: the portable core must not need one, and workerd (with no nodejs_compat flag) has none.
import { build, type Plugin } from 'esbuild';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const shims: Record<string, string> = {
  'node:test': join(here, 'shims/node-test.ts'),
  'node:assert': join(here, 'shims/assert.ts'),
  'node:assert/strict': join(here, 'shims/assert.ts'),
};

const noNode: Plugin = {
  name: 'no-node-builtins',
  setup(b) {
    b.onResolve({ filter: /^node:/ }, (args) => {
      const shim = shims[args.path];
      if (shim !== undefined) return { path: shim };
      return {
        errors: [
          {
            text: `${args.path} imported by ${args.importer}: the portable core and its suites must not need Node built-ins`,
          },
        ],
      };
    });
  },
};

/** Bundles `entry` (a path under the repo) to `outfile`; resolves packages as wrangler does for workerd. */
export async function bundleForRuntimes(entry: string, outfile: string): Promise<void> {
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    mainFields: ['module', 'main'],
    conditions: ['sluice-source', 'workerd', 'worker', 'import'],
    external: ['cloudflare:workers'],
    plugins: [noNode],
    logLevel: 'error',
  });
}
