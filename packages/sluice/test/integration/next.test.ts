// sluice/next in a real Next.js app (test/fixtures/next-app), built once with `next build` and served by
// `next start`, with sluice linked to a build of this repository: the middleware on the edge runtime
// and route handlers on the Node runtime (memory and Redis stores) and on the edge runtime, each answering
// 429 with the rate-limit headers and the problem+json body, keyed by the address in x-real-ip.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { redisUrl, runPrefix } from '../../../testing/src/harness.js';
import { rmSync } from 'node:fs';
import { buildSluice, ROOT, startNextApp, type NextApp } from '../support/next-app.js';

const prefix = runPrefix('next');
let app: NextApp;
let sluice: string;
const io = new Redis(redisUrl());

before(async () => {
  sluice = buildSluice();
  app = await startNextApp(join(ROOT, 'test/fixtures/next-app'), sluice, {
    REDIS_URL: redisUrl(),
    SLUICE_TEST_PREFIX: prefix,
  });
});
after(async (t) => {
  if (process.env.NEXT_LOG !== undefined) console.error(app?.output());
  await app?.stop();
  if (sluice !== undefined) rmSync(sluice, { recursive: true, force: true });
  for (const k of await io.keys(`${prefix}:*`)) await io.unlink(k);
  io.disconnect();
});

/** Three requests from one client address, then one from another. */
async function burst(path: string): Promise<Response[]> {
  const get = (ip: string) => fetch(`${app.url}${path}`, { headers: { 'x-real-ip': ip } });
  const out = [];
  for (let i = 0; i < 3; i++) out.push(await get('203.0.113.7'));
  out.push(await get('203.0.113.8'));
  return out;
}

/** A refused answer: 429, Retry-After, problem+json naming the policy. */
async function assertRefused(r: Response, policy: string): Promise<void> {
  assert.equal(r.status, 429);
  assert.ok(Number(r.headers.get('retry-after')) > 0, `retry-after ${r.headers.get('retry-after')}`);
  assert.equal(r.headers.get('content-type'), 'application/problem+json');
  const body = (await r.json()) as { status: number; 'violated-policies': string[]; type: string };
  assert.equal(body.status, 429);
  assert.deepEqual(body['violated-policies'], [policy]);
  assert.equal(body.type, 'https://iana.org/assignments/http-problem-types#quota-exceeded');
}

test('next build put the middleware on the edge runtime and each route handler on the runtime it asked for', () => {
  const manifest = JSON.parse(readFileSync(join(app.dir, '.next/server/middleware-manifest.json'), 'utf8')) as {
    middleware: Record<string, unknown>;
    functions: Record<string, unknown>;
  };
  assert.deepEqual(Object.keys(manifest.middleware), ['/'], 'middleware.js is an edge function');
  assert.deepEqual(Object.keys(manifest.functions), ['/edge/route'], 'only the edge route handler is an edge function');
});

test('middleware on the edge runtime: two pass on to the route with draft-8 headers, the third gets the 429', async () => {
  const [a, b, c, other] = await burst('/mw');
  assert.deepEqual([a!.status, await a!.text(), a!.headers.get('x-runtime')], [200, 'ok', 'edge']);
  assert.equal(a!.headers.get('ratelimit-policy'), '"mw";q=2;w=60');
  assert.equal(a!.headers.get('ratelimit'), '"mw";r=1;t=30');
  assert.equal(b!.headers.get('ratelimit'), '"mw";r=0;t=60');
  await assertRefused(c!, 'mw');
  assert.match(c!.headers.get('ratelimit') ?? '', /^"mw";r=0;t=\d+$/);
  assert.equal(other!.status, 200, 'another client address has its own limit');
});

test('route handler on the Node runtime, memory store', async () => {
  const [a, b, c, other] = await burst('/node-memory');
  assert.deepEqual(await a!.json(), { runtime: 'nodejs', remaining: 1 });
  assert.equal(a!.headers.get('ratelimit-policy'), '"node";q=2;w=60');
  assert.equal(b!.status, 200);
  await assertRefused(c!, 'node');
  assert.equal(other!.status, 200);
});

test('route handler on the Node runtime, RedisStore on ioredis: the state is in Redis', async () => {
  const [a, b, c, other] = await burst('/node-redis');
  const first = (await a!.json()) as { stats: { errors: number; timeouts: number } };
  assert.deepEqual(
    { ...first, stats: undefined },
    { runtime: 'nodejs', remaining: 1, reason: null, stats: undefined },
    JSON.stringify(first.stats),
  );
  assert.deepEqual([first.stats.errors, first.stats.timeouts], [0, 0]);
  assert.equal(a!.headers.get('ratelimit'), 'limit=2, remaining=1, reset=30');
  assert.equal(b!.status, 200);
  await assertRefused(c!, 'redis');
  assert.equal(other!.status, 200);
  const keys = (await io.keys(`${prefix}:*`)).sort();
  assert.deepEqual(keys, [`${prefix}:{203.0.113.7}:redis`, `${prefix}:{203.0.113.8}:redis`]);
});

test('route handler on the edge runtime, memory store', async () => {
  const [a, b, c, other] = await burst('/edge');
  assert.deepEqual(await a!.json(), { runtime: 'edge', remaining: 1 });
  assert.equal(a!.headers.get('ratelimit-policy'), '"edge";q=2;w=60');
  assert.equal(b!.status, 200);
  await assertRefused(c!, 'edge');
  assert.equal(other!.status, 200);
});

test('a request without the address header is an error, not a shared bucket', async () => {
  const r = await fetch(`${app.url}/node-memory`);
  await r.text();
  assert.equal(r.status, 500);
});
