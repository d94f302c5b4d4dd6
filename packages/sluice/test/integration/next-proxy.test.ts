// sluice/next as Next 16's proxy.js (middleware on the Node runtime) with RedisStore, in a real Next app
// (test/fixtures/next-proxy-app) built once and served by `next start`: two requests pass on to the route
// with the headers, the third gets the 429, and the count is in Redis.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { redisUrl, runPrefix } from '../../../testing/src/harness.js';
import { rmSync } from 'node:fs';
import { buildSluice, ROOT, startNextApp, type NextApp } from '../support/next-app.js';

const prefix = runPrefix('next-proxy');
let app: NextApp;
let sluice: string;
const io = new Redis(redisUrl());

before(async () => {
  sluice = buildSluice();
  app = await startNextApp(join(ROOT, 'test/fixtures/next-proxy-app'), sluice, {
    REDIS_URL: redisUrl(),
    SLUICE_TEST_PREFIX: prefix,
  });
});
after(async () => {
  if (process.env.NEXT_LOG !== undefined) console.error(app?.output());
  await app?.stop();
  if (sluice !== undefined) rmSync(sluice, { recursive: true, force: true });
  for (const k of await io.keys(`${prefix}:*`)) await io.unlink(k);
  io.disconnect();
});

test('proxy.js is no edge function: Next 16 runs it on the Node runtime', () => {
  const manifest = JSON.parse(readFileSync(join(app.dir, '.next/server/middleware-manifest.json'), 'utf8')) as {
    middleware: Record<string, unknown>;
  };
  assert.deepEqual(Object.keys(manifest.middleware), []);
  assert.match(app.buildLog, /Proxy \(Middleware\)/);
});

test('proxy on the Node runtime with RedisStore: two pass on with draft-8 headers, the third gets the 429', async () => {
  const get = (ip: string) => fetch(`${app.url}/api/hello`, { headers: { 'x-real-ip': ip } });
  const a = await get('203.0.113.7');
  assert.deepEqual([a.status, await a.text(), a.headers.get('x-runtime')], [200, 'hello', 'nodejs']);
  assert.equal(a.headers.get('ratelimit-policy'), '"api";q=2;w=60');
  assert.match(a.headers.get('ratelimit') ?? '', /^"api";r=1;t=\d+$/); // a sliding window's reset depends on where Redis's clock is in the window
  assert.equal((await get('203.0.113.7')).status, 200);
  const refused = await get('203.0.113.7');
  assert.equal(refused.status, 429);
  assert.ok(Number(refused.headers.get('retry-after')) > 0);
  assert.equal(refused.headers.get('content-type'), 'application/problem+json');
  assert.deepEqual(((await refused.json()) as { 'violated-policies': string[] })['violated-policies'], ['api']);
  assert.equal((await get('203.0.113.8')).status, 200, 'another address has its own limit');
  assert.deepEqual((await io.keys(`${prefix}:*`)).sort(), [
    `${prefix}:{203.0.113.7}:api`,
    `${prefix}:{203.0.113.8}:api`,
  ]);
});
