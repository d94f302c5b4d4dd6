// What every runtime runs (Node, Bun, Deno, workerd), bundled by bundle.ts: the store conformance suite on
// the memory store, and the portable paths' own checks: the root package with its default clock, sluice/hono,
// @sluice/pow, @sluice/outbound and the guard's decisions. The fast-check runs come from `globalThis.SLUICE_RUNS`.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Hono } from 'hono';
import { Guard, MemoryGuardState } from '@sluice/guard';
import { Limiter, MemoryStore } from 'sluice';
import { rateLimit } from 'sluice/hono';
import { Gate, limitedFetch } from '@sluice/outbound';
import { createChallenge, MemorySpentStore, solveChallenge, verifySolution } from '@sluice/pow';
import { storeConformance } from '../../packages/sluice/test/contracts/store-conformance.js';

const runs = (globalThis as { SLUICE_RUNS?: number }).SLUICE_RUNS ?? 20;
storeConformance('memory', () => new MemoryStore(), { runs });

test('portable: the default clock, several policies and a concurrency lease', async () => {
  const l = new Limiter({
    policies: [
      { name: 'g', algorithm: 'gcra', limit: 2, window: '1m' },
      { name: 'c', algorithm: 'concurrency', limit: 5, window: '1m' },
    ],
  });
  const a = await l.limit('k');
  const b = await l.limit('k');
  const c = await l.limit('k');
  assert.deepEqual([a.allowed, b.allowed, c.allowed, c.policy], [true, true, false, 'g']);
  assert.equal(typeof a.leaseId, 'string');
  assert.equal(await l.release('k', a.leaseId!), true);
  // Many decisions in a row: the coarse clock's cached reading must keep working wherever timers differ.
  const many = new Limiter({ policy: { algorithm: 'fixed-window', limit: 1000, window: '1h' } });
  let allowed = 0;
  for (let i = 0; i < 1500; i++) if ((await many.limit('x')).allowed) allowed++;
  assert.equal(allowed, 1000);
});

test('portable: sluice/hono limits a Hono app (keyed by a header, digested)', async () => {
  const app = new Hono();
  app.use(
    rateLimit({
      policy: { algorithm: 'gcra', limit: 1, window: '1m' },
      key: { header: 'x-api-key' },
      headers: 'draft-7',
    }),
  );
  app.get('/', (c) => c.text('ok'));
  const first = await app.request('/', { headers: { 'x-api-key': 'secret-1' } });
  const second = await app.request('/', { headers: { 'x-api-key': 'secret-1' } });
  const other = await app.request('/', { headers: { 'x-api-key': 'secret-2' } });
  assert.deepEqual(
    [first.status, first.headers.get('ratelimit'), second.status, second.headers.get('retry-after'), other.status],
    [200, 'limit=1, remaining=0, reset=60', 429, '60', 200],
  );
});

test('portable: @sluice/pow makes, solves and verifies a challenge once', async () => {
  const secret = 'runtime-test-secret-0123456789';
  const store = new MemorySpentStore();
  const ch = createChallenge({ secret, difficulty: 64, scope: 'login:alice', ttlMs: 60_000 });
  const solution = await solveChallenge(ch);
  const first = await verifySolution(solution, { secret, scope: 'login:alice', store });
  const replay = await verifySolution(solution, { secret, scope: 'login:alice', store });
  const forged = await verifySolution(
    solution.replace(/^(.{30})./, (m, p: string) => p + (m[30] === 'A' ? 'B' : 'A')),
    { secret, scope: 'login:alice', store: new MemorySpentStore() },
  );
  assert.deepEqual([first.ok, replay.ok, forged.ok], [true, false, false]);
});

test('portable: @sluice/outbound gates calls and limitedFetch retries a 429 after Retry-After', async () => {
  const gate = new Gate({ policy: { algorithm: 'gcra', limit: 1000, window: '1s' } });
  const d = await gate.wait('api');
  assert.equal(d.allowed, true);
  let calls = 0;
  const fake = async () =>
    ++calls === 1 ? new Response('slow', { status: 429, headers: { 'retry-after': '0' } }) : new Response('ok');
  const f = limitedFetch(gate, 'api', { fetch: fake, backoffMs: 1, maxBackoffMs: 1 });
  const res = await f('https://api.example.test/x');
  assert.deepEqual([res.status, await res.text(), calls], [200, 'ok', 2]);
});

test('portable: the guard allows, blocks a denied network, and counts failures', async () => {
  const guard = new Guard({
    secret: 'runtime-test-secret-0123',
    store: new MemoryStore(),
    state: new MemoryGuardState(),
    denyList: ['192.0.2.0/24'],
  });
  const ok = await guard.check({ account: 'alice', ip: '203.0.113.7' });
  const denied = await guard.check({ account: 'alice', ip: '192.0.2.9' });
  const r = await guard.record({ account: 'alice', ip: '203.0.113.7', success: false, password: 'nope' });
  assert.deepEqual([ok.action, denied.action, denied.reasons, r.counted], ['allow', 'block', ['ip-deny-list'], true]);
  const unkeyed = new Guard({ state: new MemoryGuardState() }); // a random secret, with a warning, and no crash
  assert.equal((await unkeyed.check({ account: 'bob', ip: '203.0.113.8' })).action, 'allow');
});

export { run } from './shims/node-test.js';
