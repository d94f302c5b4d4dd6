// Header rendering in every style, from decisions built by hand, and the problem+json body.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { makeDecision } from '../core/decision.js';
import { compilePolicies } from '../core/policy.js';
import { HeaderRenderer, retryAfterSeconds, type HeaderStyle } from './headers.js';
import { problemDetails } from './problem.js';

const policies = compilePolicies([
  { name: 'burst', algorithm: 'token-bucket', limit: 10, window: '1m' },
  { name: 'daily', algorithm: 'fixed-window', limit: 1000, window: '1d' },
  { name: 'in-flight', algorithm: 'concurrency', limit: 4, window: '30s' },
]);
const allowed = makeDecision({
  allowed: true,
  limit: 10,
  remaining: 9,
  resetAfterMs: 6000,
  retryAfterMs: 0,
  delayMs: 0,
  policy: 'burst',
});
const denied = makeDecision({
  allowed: false,
  limit: 10,
  remaining: 0,
  resetAfterMs: 60000,
  retryAfterMs: 5001,
  delayMs: 0,
  policy: 'burst',
});

function render(style: HeaderStyle, d = allowed, now = 1_700_000_000_000): Record<string, string> {
  const out: Record<string, string> = {};
  new HeaderRenderer(style, policies).write(d, { setHeader: (n: string, v: string) => (out[n] = v) }, now);
  return out;
}

test('legacy: X-RateLimit-* as GitHub sends them, reset in epoch seconds', () => {
  assert.deepEqual(render('legacy'), {
    'x-ratelimit-limit': '10',
    'x-ratelimit-remaining': '9',
    'x-ratelimit-used': '1',
    'x-ratelimit-reset': '1700000006',
    'x-ratelimit-resource': 'burst',
  });
  assert.equal(render('legacy', denied, 1_700_000_000_500)['x-ratelimit-reset'], '1700000006'); // now + 5001 ms, rounded up
});

test('draft-6: RateLimit-Policy of the deciding policy plus three fields', () => {
  assert.deepEqual(render('draft-6'), {
    'ratelimit-policy': '10;w=60',
    'ratelimit-limit': '10',
    'ratelimit-remaining': '9',
    'ratelimit-reset': '6',
  });
});

test('draft-7: one RateLimit field', () => {
  assert.deepEqual(render('draft-7'), { 'ratelimit-policy': '10;w=60', ratelimit: 'limit=10, remaining=9, reset=6' });
});

test('draft-8: every policy in RateLimit-Policy, the deciding one in RateLimit', () => {
  assert.deepEqual(render('draft-8'), {
    'ratelimit-policy': '"burst";q=10;w=60, "daily";q=1000;w=86400, "in-flight";q=4;qu="concurrent-requests"',
    ratelimit: '"burst";r=9;t=6',
  });
});

test('none: nothing', () => {
  assert.deepEqual(render('none'), {});
});

test('on a denial every reset value equals Retry-After, rounded up to whole seconds', () => {
  assert.equal(retryAfterSeconds(denied), 6);
  assert.equal(render('draft-6', denied)['ratelimit-reset'], '6');
  assert.equal(render('draft-7', denied).ratelimit, 'limit=10, remaining=0, reset=6');
  assert.equal(render('draft-8', denied).ratelimit, '"burst";r=0;t=6');
  assert.equal(
    retryAfterSeconds(
      makeDecision({
        allowed: false,
        limit: 1,
        remaining: 0,
        resetAfterMs: 1,
        retryAfterMs: 1,
        delayMs: 0,
        policy: 'burst',
      }),
    ),
    1,
  );
  assert.equal(
    retryAfterSeconds(
      makeDecision({
        allowed: false,
        limit: 1,
        remaining: 0,
        resetAfterMs: 1,
        retryAfterMs: 3000,
        delayMs: 0,
        policy: 'burst',
      }),
    ),
    3,
  );
});

test('sub-second windows are stated as 1 s; names are escaped as sf-strings; non-ASCII names are refused', () => {
  const odd = compilePolicies([{ name: 'a "q" \\ b', algorithm: 'gcra', limit: 5, window: '500ms' }]);
  const out: Record<string, string> = {};
  new HeaderRenderer('draft-8', odd).write(
    makeDecision({
      allowed: true,
      limit: 5,
      remaining: 4,
      resetAfterMs: 100,
      retryAfterMs: 0,
      delayMs: 0,
      policy: 'a "q" \\ b',
    }),
    { setHeader: (n: string, v: string) => (out[n] = v) },
  );
  assert.equal(out['ratelimit-policy'], '"a \\"q\\" \\\\ b";q=5;w=1');
  assert.throws(
    () =>
      new HeaderRenderer('draft-8', compilePolicies([{ name: 'débit', algorithm: 'gcra', limit: 5, window: '1s' }])),
    {
      code: 'ERR_SLUICE_INVALID_OPTION',
      message: /policy name "débit" cannot be sent in 'draft-8' headers/,
    },
  );
});

test('a target with setTrustedHeader gets the same fields through it, except a name Node would refuse', () => {
  for (const style of ['legacy', 'draft-6', 'draft-7', 'draft-8'] as const) {
    for (const d of [allowed, denied]) {
      const trusted: Record<string, string> = {};
      const checked: string[] = [];
      const target = {
        setHeader: (n: string, v: string) => ((trusted[n] = v), checked.push(n)),
        setTrustedHeader: (n: string, v: string) => (trusted[n] = v),
      };
      new HeaderRenderer(style, policies).write(d, target, 1_700_000_000_000);
      assert.deepEqual(trusted, render(style, d), style);
      assert.deepEqual(checked, [], style);
    }
  }
  // A policy name with a control character: legacy's X-RateLimit-Resource goes to setHeader, which refuses it.
  const odd = compilePolicies([{ name: 'a\nb', algorithm: 'gcra', limit: 5, window: '1s' }]);
  const checked: string[] = [];
  const target = { setHeader: (n: string) => checked.push(n), setTrustedHeader: () => undefined };
  new HeaderRenderer('legacy', odd).write(
    makeDecision({
      allowed: true,
      limit: 5,
      remaining: 4,
      resetAfterMs: 100,
      retryAfterMs: 0,
      delayMs: 0,
      policy: 'a\nb',
    }),
    target,
  );
  assert.deepEqual(checked, ['x-ratelimit-resource']);
});

test("draft-7 with a decision whose limit is not its policy's still states the decision's limit", () => {
  assert.equal(
    render(
      'draft-7',
      makeDecision({
        allowed: true,
        limit: 7,
        remaining: 3,
        resetAfterMs: 2000,
        retryAfterMs: 0,
        delayMs: 0,
        policy: 'burst',
      }),
    ).ratelimit,
    'limit=7, remaining=3, reset=2',
  );
});

test('problem+json: RFC 9457 members with the draft-10 quota-exceeded type', () => {
  assert.deepEqual(problemDetails(denied, 429), {
    type: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
    title: 'Request cannot be satisfied as assigned quota has been exceeded',
    status: 429,
    detail: 'Rate limit "burst" exceeded; retry after 6 seconds.',
    'violated-policies': ['burst'],
  });
});
