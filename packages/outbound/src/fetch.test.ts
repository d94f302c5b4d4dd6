// limitedFetch against a scripted upstream on a manual clock: pauses, retries only what is safe to
// repeat, bounded retries, header reconciliation, cancellation, and the presets' key split.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ManualTime } from '../test/fakes/manual-time.js';
import { Gate, github, limitedFetch, stripe, type FetchLike } from './index.js';

interface Seen {
  at: number;
  method: string;
  body: string;
}

/** An upstream that answers from a script (the last answer repeats) and logs what reached it. */
function upstream(t: ManualTime, answers: (() => Response)[]) {
  const seen: Seen[] = [];
  const fetch: FetchLike = async (input, init) => {
    const req = new Request(input, init);
    seen.push({ at: t.now, method: req.method, body: await req.text() });
    return answers[Math.min(seen.length - 1, answers.length - 1)]!();
  };
  return { seen, fetch };
}

const ok = () => new Response('ok', { status: 200 });
const limited =
  (headers: Record<string, string> = { 'retry-after': '2' }) =>
  () =>
    new Response('slow down', { status: 429, headers });

function setup(answers: (() => Response)[], limit = 100) {
  const t = new ManualTime(0);
  const gate = new Gate({
    policies: [{ name: 'rate', algorithm: 'token-bucket', limit, window: '1s' }],
    clock: t.clock,
    timers: t,
    timeoutMs: Infinity,
  });
  const up = upstream(t, answers);
  const f = limitedFetch(gate, 'api', { fetch: up.fetch, random: () => 0.5, backoffMs: 400, now: () => t.now });
  return { t, gate, up, f };
}

test('429 with Retry-After pauses the key for everyone and retries a GET after it, with jitter', async () => {
  const { t, up, f } = setup([limited(), ok]);
  const first = f('http://api.test/a');
  await t.advance(0);
  const other = f('http://api.test/b'); // arrives during the pause
  await t.advance(1999);
  assert.equal(up.seen.length, 1, 'nothing reaches the upstream during Retry-After');
  await t.advance(10_000);
  assert.equal((await first).status, 200);
  assert.equal((await other).status, 200);
  assert.deepEqual(
    up.seen.map((s) => s.at),
    [0, 2000, 2200],
    'the waiting call goes when the pause ends; the retry after 2000 + 0.5 × 400 ms',
  );
});

test('POST is never retried without an Idempotency-Key; with one, the same body is sent again', async () => {
  const { t, up, f } = setup([limited(), ok]);
  const res = f('http://api.test/charge', { method: 'POST', body: 'amount=5' });
  await t.advance(5000);
  assert.equal((await res).status, 429, 'the limited answer is returned, not retried');
  assert.equal(up.seen.length, 1);

  const second = setup([limited(), ok]);
  const keyed = second.f('http://api.test/charge', {
    method: 'POST',
    body: 'amount=5',
    headers: { 'idempotency-key': 'k-1' },
  });
  await second.t.advance(5000);
  assert.equal((await keyed).status, 200);
  assert.deepEqual(
    second.up.seen.map((s) => [s.method, s.body]),
    [
      ['POST', 'amount=5'],
      ['POST', 'amount=5'],
    ],
  );
  const patch = setup([limited(), ok]);
  const p = patch.f('http://api.test/x', { method: 'PATCH', body: '{}' });
  await patch.t.advance(5000);
  assert.equal((await p).status, 429);
});

test('retries are bounded: after maxRetries the last limited answer is returned', async () => {
  const { t, up, f } = setup([limited({ 'retry-after': '1' })]);
  const res = f('http://api.test/a', { method: 'PUT', body: 'x' });
  await t.advance(60_000);
  assert.equal((await res).status, 429);
  assert.equal(up.seen.length, 4, 'one call and 3 retries');
  // Backoff doubles: 1000 + 0.5·400, 1000 + 0.5·800, 1000 + 0.5·1600 after each answer.
  assert.deepEqual(
    up.seen.map((s) => s.at),
    [0, 1200, 2600, 4400],
  );
});

test('503 is a limit only with Retry-After; a Retry-After beyond maxRetryAfterMs is not waited out', async () => {
  const plain = setup([() => new Response('down', { status: 503 }), ok]);
  const a = plain.f('http://api.test/a');
  await plain.t.advance(10_000);
  assert.equal((await a).status, 503);
  assert.equal(plain.up.seen.length, 1);

  const told = setup([() => new Response('busy', { status: 503, headers: { 'retry-after': '3' } }), ok]);
  const b = told.f('http://api.test/a');
  await told.t.advance(10_000);
  assert.equal((await b).status, 200);
  assert.deepEqual(
    told.up.seen.map((s) => s.at),
    [0, 3200],
  );

  const far = setup([limited({ 'retry-after': '3600' }), ok]);
  const c = far.f('http://api.test/a');
  await far.t.advance(0);
  assert.equal((await c).status, 429);
  assert.equal(far.up.seen.length, 1);
});

test('an upstream reporting fewer calls left than sluice believes is matched', async () => {
  const { t, gate, f } = setup([() => new Response('ok', { headers: { ratelimit: '"default";r=10;t=1' } })]);
  await f('http://api.test/a');
  await t.advance(0);
  assert.equal((await gate.limiter.get('api')).remaining, 10, 'the bucket had 99 left; the upstream said 10');
});

test("GitHub's 403 with X-RateLimit-Remaining: 0 pauses until X-RateLimit-Reset, then retries", async () => {
  const t0 = 1_800_000_000_000;
  const t = new ManualTime(t0);
  const preset = github();
  const gate = new Gate({ policies: preset.policies, clock: t.clock, timers: t, timeoutMs: Infinity });
  const up = upstream(t, [
    () =>
      new Response('rate limited', {
        status: 403,
        headers: { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(t0 / 1000 + 30) },
      }),
    () =>
      new Response('ok', {
        headers: { 'x-ratelimit-remaining': '4999', 'x-ratelimit-reset': String(t0 / 1000 + 3600) },
      }),
  ]);
  const gh = limitedFetch(gate, preset.key, { fetch: up.fetch, random: () => 0, now: () => t.now });
  const res = gh('https://api.github.com/user');
  await t.advance(29_999);
  assert.equal(up.seen.length, 1);
  await t.advance(1);
  assert.equal((await res).status, 200);
  assert.deepEqual(
    up.seen.map((s) => s.at - t0),
    [0, 30_000],
  );
});

test('aborting during the backoff rejects with the reason and sends nothing more', async () => {
  const { t, up, f } = setup([limited({ 'retry-after': '5' }), ok]);
  const ac = new AbortController();
  const res = f('http://api.test/a', { signal: ac.signal });
  await t.advance(1000);
  ac.abort(new Error('user left'));
  await assert.rejects(res, /user left/);
  await t.advance(10_000);
  assert.equal(up.seen.length, 1);
});

test('network errors are not retried and reach the caller as they are', async () => {
  const t = new ManualTime(0);
  const gate = new Gate({ policy: { algorithm: 'gcra', limit: 10, window: '1s' }, clock: t.clock, timers: t });
  let calls = 0;
  const f = limitedFetch(gate, 'api', { fetch: async () => (calls++, Promise.reject(new TypeError('fetch failed'))) });
  await assert.rejects(f('http://api.test/'), /fetch failed/);
  assert.equal(calls, 1);
});

test('Stripe preset: reads and writes have separate budgets of the published size', async () => {
  const t = new ManualTime(0);
  const preset = stripe({ mode: 'test' });
  const gate = new Gate({ policies: preset.policies, clock: t.clock, timers: t });
  const up = upstream(t, [ok]);
  const f = limitedFetch(gate, preset.key, { fetch: up.fetch });
  const calls: Promise<Response>[] = [];
  for (let i = 0; i < 30; i++)
    calls.push(
      f('https://api.stripe.com/v1/charges'),
      f('https://api.stripe.com/v1/charges', { method: 'POST', body: 'a=1' }),
    );
  await t.advance(0);
  assert.equal(up.seen.filter((s) => s.method === 'GET').length, 22, '90% of 25 from idle');
  assert.equal(up.seen.filter((s) => s.method === 'POST').length, 22);
  await t.advance(1000);
  await Promise.all(calls);
  assert.equal(up.seen.length, 60);
  assert.equal(
    preset.key(new Request('https://api.stripe.com/v1/x', { method: 'DELETE' })),
    'stripe:test:default:write',
  );
  assert.deepEqual(stripe().policies[0], {
    name: 'stripe-live',
    algorithm: 'token-bucket',
    limit: 100,
    window: '1s',
    burst: 90,
  });
});

test('limitedFetch options are checked when it is built', () => {
  const gate = new Gate({ policy: { algorithm: 'gcra', limit: 10, window: '1s' } });
  assert.throws(
    () => limitedFetch(gate, 'k', { cost: '1' as never }),
    /'cost' must be a non-negative integer or a function of the request, got "1"/,
  );
  assert.throws(
    () => limitedFetch(gate, 'k', { maxRetries: 1.5 }),
    /'maxRetries' must be a non-negative integer, got 1\.5/,
  );
  assert.throws(() => limitedFetch(gate, 'k', { retries: 3 } as never), /unknown limitedFetch option 'retries'/);
  assert.throws(() => limitedFetch(gate, 42 as never), /'key' must be a string or a function of the request/);
});

test('a cost function weighs each request', async () => {
  const t = new ManualTime(0);
  const gate = new Gate({
    policy: { name: 'points', algorithm: 'token-bucket', limit: 10, window: '1s' },
    clock: t.clock,
    timers: t,
  });
  const up = upstream(t, [ok]);
  const f = limitedFetch(gate, 'api', { fetch: up.fetch, cost: (req) => (req.method === 'GET' ? 1 : 5) });
  await f('http://api.test/a', { method: 'POST', body: 'x' });
  await f('http://api.test/b');
  assert.equal((await gate.limiter.get('api')).remaining, 4);
});
