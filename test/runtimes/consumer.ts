// A consumer of the packed package on each runtime: test/package/pack.test.ts installs the tarball into a
// fresh project and calls runtimeConsumerTests() with it. The same script decides on Node, Bun and Deno;
// on workerd a Worker bundled from the project as wrangler would (conditions workerd, worker, browser)
// decides in memory and through DurableObjectStore and its SluiceDurableObject.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { Miniflare } from 'miniflare';

const root = resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

const decide = `
import { Limiter, MemoryStore } from 'sluice';
import { createChallenge, solveChallenge, verifySolution, MemorySpentStore } from '@sluice/pow';
import { Gate } from '@sluice/outbound';
import { Guard, MemoryGuardState } from '@sluice/guard';
export async function decide() {
  const limiter = new Limiter({ policies: [{ algorithm: 'gcra', limit: 2, window: '1s' }, { algorithm: 'concurrency', limit: 9, window: '1s' }], store: new MemoryStore({ maxKeys: 10 }) });
  const d = [];
  for (let i = 0; i < 3; i++) d.push((await limiter.limit('k')).allowed);
  const secret = 'consumer-secret-0123456789';
  const solution = await solveChallenge(createChallenge({ secret, difficulty: 32, scope: 's', ttlMs: 60000 }));
  const pow = (await verifySolution(solution, { secret, scope: 's', store: new MemorySpentStore() })).ok;
  const gate = (await new Gate({ policy: { algorithm: 'gcra', limit: 5, window: '1s' } }).wait('api')).allowed;
  const guard = (await new Guard({ secret, state: new MemoryGuardState() }).check({ account: 'a', ip: '203.0.113.7' })).action;
  return [d, pow, gate, guard];
}
`;
const expected = [[true, true, false], true, true, 'allow'];

export function runtimeConsumerTests(consumer: string): void {
  const setup = () => {
    writeFileSync(join(consumer, 'decide.mjs'), decide);
    writeFileSync(
      join(consumer, 'main.mjs'),
      `import { decide } from './decide.mjs';\nconsole.log(JSON.stringify(await decide()));\n`,
    );
  };
  const cli = async (cmd: string, args: string[]) =>
    JSON.parse((await run(cmd, args, { cwd: consumer, env: { ...process.env, NO_COLOR: '1' } })).stdout) as unknown;

  test('the packed package decides on Node, Bun and Deno', async () => {
    setup();
    assert.deepEqual(await cli(process.execPath, ['main.mjs']), expected, 'node');
    assert.deepEqual(await cli(join(root, 'node_modules/.bin/bun'), ['main.mjs']), expected, 'bun');
    // @sluice/guard on Deno is the full entry (the "node" condition), whose Redis state reads its Lua script.
    assert.deepEqual(
      await cli(join(root, 'node_modules/.bin/deno'), ['run', '--no-prompt', '--allow-read=node_modules', 'main.mjs']),
      expected,
      'deno',
    );
  });

  test('the packed package decides in a Worker on workerd, in memory and in its Durable Object', async () => {
    setup();
    writeFileSync(
      join(consumer, 'worker.mjs'),
      `import { Limiter } from 'sluice';
       import { DurableObjectStore } from 'sluice/cloudflare';
       import { decide } from './decide.mjs';
       export { SluiceDurableObject } from 'sluice/cloudflare';
       export default {
         async fetch(request, env) {
           const limiter = new Limiter({ policy: { algorithm: 'sliding-log', limit: 1, window: '1m' }, store: new DurableObjectStore({ namespace: env.SLUICE }) });
           const a = await limiter.limit('user:1'); const b = await limiter.limit('user:1');
           return Response.json([await decide(), a.allowed, b.allowed, b.retryAfterMs > 0]);
         },
       };`,
    );
    await build({
      entryPoints: [join(consumer, 'worker.mjs')],
      outfile: join(consumer, 'dist/worker.mjs'),
      bundle: true,
      format: 'esm',
      platform: 'neutral',
      mainFields: ['module', 'main'],
      conditions: ['workerd', 'worker', 'browser'],
      external: ['cloudflare:workers'],
      logLevel: 'error',
    });
    const mf = new Miniflare({
      modules: true,
      scriptPath: join(consumer, 'dist/worker.mjs'),
      modulesRoot: join(consumer, 'dist'),
      compatibilityDate: '2025-04-01',
      durableObjects: { SLUICE: { className: 'SluiceDurableObject', useSQLite: true } },
    });
    try {
      assert.deepEqual(await (await mf.dispatchFetch('http://localhost/')).json(), [expected, true, false, true]);
    } finally {
      await mf.dispose();
    }
  });
}
