// Parsing what upstreams say: Retry-After in both forms, GitHub's headers, and three IETF drafts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseRateLimit, parseRetryAfter } from './headers.js';

const NOW = Date.UTC(2026, 10, 30, 7, 0, 0);

test('Retry-After: delta seconds, an HTTP date, a past date, garbage', () => {
  assert.equal(parseRetryAfter('120', NOW), 120_000);
  assert.equal(parseRetryAfter(' 0 ', NOW), 0);
  assert.equal(parseRetryAfter('Mon, 30 Nov 2026 07:00:05 GMT', NOW), 5000);
  assert.equal(parseRetryAfter('Mon, 30 Nov 2026 06:59:00 GMT', NOW), 0);
  assert.equal(parseRetryAfter('soon', NOW), undefined);
  assert.equal(parseRetryAfter('-5', NOW), undefined);
  assert.equal(parseRetryAfter(null, NOW), undefined);
});

test('GitHub: X-RateLimit-Remaining with X-RateLimit-Reset in epoch seconds', () => {
  const h = new Headers({
    'x-ratelimit-limit': '5000',
    'x-ratelimit-remaining': '4987',
    'x-ratelimit-reset': String(NOW / 1000 + 1800),
  });
  assert.deepEqual(parseRateLimit(h, NOW), { remaining: 4987, resetAfterMs: 1_800_000 });
  // Delta seconds under the same name (some APIs): no epoch is that small.
  assert.deepEqual(parseRateLimit(new Headers({ 'x-ratelimit-remaining': '3', 'x-ratelimit-reset': '30' }), NOW), {
    remaining: 3,
    resetAfterMs: 30_000,
  });
});

test('IETF draft-6: RateLimit-Remaining and RateLimit-Reset in delta seconds', () => {
  const h = new Headers({
    'ratelimit-limit': '10',
    'ratelimit-remaining': '2',
    'ratelimit-reset': '7',
    'ratelimit-policy': '10;w=60',
  });
  assert.deepEqual(parseRateLimit(h, NOW), { remaining: 2, resetAfterMs: 7000 });
});

test('IETF draft-7: RateLimit: limit=, remaining=, reset=', () => {
  assert.deepEqual(parseRateLimit(new Headers({ ratelimit: 'limit=10, remaining=9, reset=42' }), NOW), {
    remaining: 9,
    resetAfterMs: 42_000,
  });
});

test('IETF draft-8 and later: the most restrictive of several "name";r=;t= items, commas in names allowed', () => {
  const h = new Headers({ ratelimit: '"per-second";r=50;t=1, "per, hour";r=3;t=1200;pk=:cGsx:' });
  assert.deepEqual(parseRateLimit(h, NOW), { remaining: 3, resetAfterMs: 1_200_000 });
  assert.deepEqual(parseRateLimit(new Headers({ ratelimit: '"default";r=0' }), NOW), {
    remaining: 0,
    resetAfterMs: undefined,
  });
});

test('IETF fields win over GitHub ones; no fields, no view', () => {
  const h = new Headers({ ratelimit: '"d";r=1;t=2', 'x-ratelimit-remaining': '100' });
  assert.deepEqual(parseRateLimit(h, NOW), { remaining: 1, resetAfterMs: 2000 });
  assert.equal(parseRateLimit(new Headers({ 'content-type': 'text/plain' }), NOW), undefined);
  assert.equal(parseRateLimit(new Headers({ 'x-ratelimit-remaining': 'many' }), NOW), undefined);
});
