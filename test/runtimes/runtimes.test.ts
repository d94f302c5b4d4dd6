// The store conformance suite and the portable paths' checks (suite.ts) on Node, Bun, Deno and workerd,
// each from one bundle of the source with no Node built-in in it. Bun and Deno are the npm packages'
// binaries; workerd runs through Miniflare, with no nodejs_compat flag (so no process, Buffer or node:*).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { Miniflare } from 'miniflare';
import { bundleForRuntimes } from './bundle.js';

const root = resolve(import.meta.dirname, '../..');
const work = mkdtempSync(join(tmpdir(), 'sluice-runtimes-'));
const RUNS = 20;
export const bun = join(root, 'node_modules/.bin/bun');
export const deno = join(root, 'node_modules/.bin/deno');

interface Outcome {
  name: string;
  ok: boolean;
  ms: number;
  error?: string;
}

before(async () => {
  await bundleForRuntimes(join(root, 'test/runtimes/suite.ts'), join(work, 'suite.mjs'));
  writeFileSync(
    join(work, 'main.mjs'),
    `globalThis.SLUICE_RUNS = ${RUNS};\nconst { run } = await import('./suite.mjs');\nconsole.log(JSON.stringify(await run()));\n`,
  );
});
after(() => rmSync(work, { recursive: true, force: true }));

function check(runtime: string, outcomes: Outcome[]): void {
  const failed = outcomes.filter((o) => !o.ok);
  assert.deepEqual(
    failed.map((o) => `${o.name}: ${o.error}`),
    [],
    `${runtime}: every test passes`,
  );
  // 10 algorithms twice, the boundary, atomicity, operations, keys; and the five portable checks.
  assert.ok(outcomes.length >= 29, `${runtime} ran ${outcomes.length} tests`);
}

async function runCli(cmd: string, args: string[]): Promise<Outcome[]> {
  const { stdout } = await promisify(execFile)(cmd, args, {
    cwd: work,
    maxBuffer: 16 << 20,
    env: { ...process.env, NO_COLOR: '1' },
  });
  return JSON.parse(stdout.trim().split('\n').pop()!) as Outcome[];
}

test('runtimes: Node runs the conformance suite and the portable checks from the bundle', async () => {
  check('node', await runCli(process.execPath, ['main.mjs']));
});

test('runtimes: Bun runs the conformance suite and the portable checks', async () => {
  check('bun', await runCli(bun, ['main.mjs']));
});

test('runtimes: Deno runs them with no permission granted', async () => {
  check('deno', await runCli(deno, ['run', '--no-prompt', 'main.mjs']));
});

test('runtimes: workerd runs them in a Worker without nodejs_compat', async () => {
  const worker = `
    globalThis.SLUICE_RUNS = ${RUNS};
    import { run } from './suite.mjs';
    export default { async fetch() { return Response.json(await run()); } };
  `;
  const mf = new Miniflare({
    modules: [
      { type: 'ESModule', path: join(work, 'worker.mjs'), contents: worker },
      { type: 'ESModule', path: join(work, 'suite.mjs') },
    ],
    modulesRoot: work,
    compatibilityDate: '2025-04-01',
  });
  try {
    const res = await mf.dispatchFetch('http://localhost/');
    check('workerd', (await res.json()) as Outcome[]);
  } finally {
    await mf.dispose();
  }
});
