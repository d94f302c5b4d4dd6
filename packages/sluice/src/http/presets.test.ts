// The inbound presets' behaviour, limit by limit, against what the APIs document:
// - GitHub (docs.github.com, "Rate limits for the REST API" and "... for the GraphQL API"): 60 requests an
//   hour per IP unauthenticated, 5,000 an hour per user, GraphQL 5,000 points an hour by query cost;
//   x-ratelimit-limit, -remaining, -used, -reset (UTC epoch seconds) and -resource on every response; over
//   the limit a 403 or 429 with x-ratelimit-remaining 0 (sluice answers 429, with retry-after).
// - Stripe (docs.stripe.com/rate-limits, as the preset cites it): per account, 100 read and 100 write
//   operations a second in live mode, 25 and 25 in test mode, token buckets; 429 over the limit.
// Counts are decided on the engine directly (thousands of requests); the responses through node:http.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { test } from 'node:test';
import { listen, manualClock } from '../../test/contracts/http-adapter.js';
import { withRateLimit } from '../middleware/node-http/index.js';
import { HttpRateLimiter, type Outcome } from './engine.js';
import type { RateLimitOptions, RequestInfo } from './options.js';
import { github, stripe } from './presets.js';

const HOUR = 3_600_000;

function info(method: string, path: string, headers: Record<string, string>, remote = '198.51.100.7'): RequestInfo {
  return { method, path, remoteAddress: remote, ip: '', header: (n) => headers[n] };
}

/** The engine of a preset on a manual clock, and how many of `n` requests it admits. */
function engine(options: RateLimitOptions<unknown>) {
  const c = manualClock(); // 1_800_000_000_000: an hour boundary, so each window starts whole
  const e = new HttpRateLimiter<unknown>({ ...options, clock: c.clock }, 'test');
  const decide = async (i: RequestInfo): Promise<Outcome<unknown>> => (await e.check(undefined, i))!;
  const admitted = async (n: number, i: () => RequestInfo) => {
    let ok = 0;
    for (let k = 0; k < n; k++) if (!(await decide(i())).limited) ok++;
    return ok;
  };
  return { c, decide, admitted };
}

const user = (_req: unknown, i: RequestInfo) => i.header('authorization')?.replace(/^token /, '');

test('github: 60 requests an hour per IP unauthenticated, 5,000 per user, each user and IP apart', async () => {
  const { c, admitted } = engine(github({ user }));
  const anon = (ip: string) => () => info('GET', '/repos/o/r', {}, ip);
  const authed = (u: string) => () => info('GET', '/repos/o/r', { authorization: `token ${u}` });
  assert.equal(await admitted(61, anon('198.51.100.7')), 60);
  assert.equal(await admitted(1, anon('198.51.100.8')), 1, 'another IP has its own 60');
  assert.equal(await admitted(5001, authed('octocat')), 5000, 'authenticated requests do not count against the IP');
  assert.equal(await admitted(1, authed('hubot')), 1);
  c.now += HOUR - 1;
  assert.equal(await admitted(1, anon('198.51.100.7')), 0, 'still the same hour');
  c.now += 1;
  assert.equal(await admitted(60, anon('198.51.100.7')), 60, 'a new hour, a new 60');
  assert.equal(await admitted(1, authed('octocat')), 1);
});

test('github: GraphQL is charged its points, 5,000 an hour per user, apart from the REST budget', async () => {
  const body = {
    query:
      'query { viewer { repositories(first: 100) { nodes { issues(first: 100) { nodes { labels(first: 10) { nodes { name } } } } } } } }',
  };
  const { decide, admitted } = engine(github({ user, graphql: { body: () => body } }));
  const gql = () => info('POST', '/graphql', { authorization: 'token octocat' });
  const first = await decide(gql());
  // GitHub's sum: 1 repositories + 100 issues + 100 × 100 labels requests = 10,101, / 100 rounded: 101 points.
  assert.deepEqual(
    [first.cost, first.decision.limit, first.decision.remaining, first.decision.policy],
    [101, 5000, 4899, 'graphql'],
  );
  assert.equal(await admitted(49, gql), 48, '49 queries use 4,949 points; the 50th needs 101 of the 51 left');
  assert.equal(
    await admitted(1, () => info('GET', '/user', { authorization: 'token octocat' })),
    1,
    'REST counts apart',
  );
  // Not valid GraphQL costs 1 point, as the server rejects it without work.
  const broken = engine(github({ user, graphql: { body: () => ({ query: '{ viewer {' }) } }));
  assert.equal((await broken.decide(gql())).cost, 1);
});

test("github: every response carries GitHub's headers; over the limit a 429 with remaining 0 and retry-after", async () => {
  const c = manualClock();
  const server = createServer(withRateLimit((_req, res) => res.end('ok'), { ...github({ user }), clock: c.clock }));
  const r = await listen(server);
  try {
    const headers = (res: Response) =>
      ['limit', 'remaining', 'used', 'reset', 'resource'].map((n) => res.headers.get(`x-ratelimit-${n}`));
    const resetAt = () => Math.ceil((Date.now() + HOUR) / 1000); // the manual clock sits on an hour boundary
    const first = await fetch(r.url);
    await first.text();
    const h = headers(first);
    assert.deepEqual([h[0], h[1], h[2], h[4]], ['60', '59', '1', 'core']);
    assert.ok(
      Math.abs(Number(h[3]) - resetAt()) <= 1,
      `x-ratelimit-reset ${h[3]} is the window's end in epoch seconds (${resetAt()})`,
    );
    assert.equal(first.headers.get('ratelimit'), null, 'legacy headers only');
    for (let i = 0; i < 59; i++) await (await fetch(r.url)).text();
    const over = await fetch(r.url);
    assert.equal(over.status, 429);
    assert.deepEqual(
      headers(over).filter((_, i) => i !== 3),
      ['60', '0', '60', 'core'],
    );
    assert.equal(over.headers.get('retry-after'), '3600');
    assert.equal(((await over.json()) as { status: number }).status, 429);
    c.now += 1_800_000;
    const later = await fetch(r.url);
    await later.text();
    assert.deepEqual([later.status, later.headers.get('retry-after')], [429, '1800']);
    const authed = await fetch(r.url, { headers: { authorization: 'token octocat' } });
    await authed.text();
    assert.deepEqual(
      headers(authed).filter((_, i) => i !== 3),
      ['5000', '4999', '1', 'core'],
    );
  } finally {
    await r.close();
  }
});

test('stripe live mode: per account, 100 reads and 100 writes a second, token buckets refilling one each 10 ms', async () => {
  const { c, admitted } = engine(stripe());
  const key =
    (method: string, k = 'sk_live_1') =>
    () =>
      info(method, '/v1/charges', { authorization: `Bearer ${k}` });
  assert.equal(await admitted(101, key('GET')), 100);
  assert.equal(await admitted(101, key('POST')), 100, 'writes have a bucket of their own');
  assert.equal(await admitted(1, key('HEAD')), 0, 'HEAD reads');
  assert.equal(await admitted(1, key('OPTIONS')), 0, 'OPTIONS reads');
  assert.equal(await admitted(1, key('DELETE')), 0, 'DELETE writes');
  assert.equal(await admitted(1, key('PATCH')), 0, 'PATCH writes');
  assert.equal(await admitted(1, key('GET', 'sk_live_2')), 1, 'another account has its own buckets');
  c.now += 10;
  assert.equal(await admitted(2, key('GET')), 1, 'one read token back after 10 ms');
  c.now += 1000;
  assert.equal(await admitted(101, key('GET')), 100, 'a full bucket after a second idle, never more');
});

test('stripe test mode: 25 and 25 a second; without an API key a request is charged to its IP', async () => {
  const { c, admitted } = engine(stripe({ mode: 'test' }));
  assert.equal(await admitted(26, () => info('GET', '/v1/customers', { authorization: 'Bearer sk_test_1' })), 25);
  assert.equal(await admitted(26, () => info('POST', '/v1/customers', { authorization: 'Bearer sk_test_1' })), 25);
  c.now += 40;
  assert.equal(
    await admitted(2, () => info('POST', '/v1/customers', { authorization: 'Bearer sk_test_1' })),
    1,
    'one token each 40 ms',
  );
  assert.equal(await admitted(26, () => info('GET', '/v1/customers', {}, '203.0.113.9')), 25);
  assert.equal(await admitted(1, () => info('GET', '/v1/customers', {}, '203.0.113.10')), 1);
  assert.throws(() => stripe({ mode: 'sandbox' as never }), {
    code: 'ERR_SLUICE_INVALID_OPTION',
    message: /'mode' must be 'live' or 'test', got "sandbox"/,
  });
});

test('stripe: over the limit a 429 with Retry-After rounded up to 1 s, and the bucket named in the headers', async () => {
  const c = manualClock();
  const server = createServer(
    withRateLimit((_req, res) => res.end('ok'), { ...stripe({ mode: 'test' }), clock: c.clock }),
  );
  const r = await listen(server);
  try {
    const headers = { authorization: 'Bearer sk_test_1' };
    for (let i = 0; i < 25; i++) await (await fetch(r.url, { headers })).text();
    const over = await fetch(r.url, { headers });
    assert.equal(over.status, 429);
    assert.equal(over.headers.get('retry-after'), '1');
    assert.equal(over.headers.get('ratelimit'), '"read";r=0;t=1');
    assert.equal(over.headers.get('ratelimit-policy'), '"read";q=25;w=1');
    assert.deepEqual(((await over.json()) as { 'violated-policies': string[] })['violated-policies'], ['read']);
  } finally {
    await r.close();
  }
});
