// Issue 28, the fifth finding: a Gate one window early. An upstream allowing 50 calls per epoch-aligned
// second on its own clock, answering 429 with Retry-After: 1 and sending X-RateLimit-Limit/-Remaining on
// every answer but no reset, was called through a Gate (fixed-window, 50 per 1s) and limitedFetch. When
// the Gate's clock ran ahead of the upstream's (the monotonic timeline against the upstream's wall clock),
// the Gate's window turned first and it sent the next 50 into the upstream's spent window: 429s. The cause
// was the reading of the headers: "remaining 0" with no reset only charged a penalty the local window had
// already counted, and did not hold the key until the upstream's window could have turned.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ManualTime } from '../fakes/manual-time.js';
import { Gate, limitedFetch } from '../../src/index.js';
import type { FetchLike } from '../../src/index.js';

const LIMIT = 50;

/** 50 calls per epoch-aligned second of the upstream's clock, which is `behindMs` behind the gate's. */
function upstream(t: ManualTime, behindMs: number) {
  let window = -1;
  let used = 0;
  const stats = { ok: 0, limited: 0 };
  const fetch: FetchLike = async () => {
    const now = t.now - behindMs;
    const w = Math.floor(now / 1000);
    if (w !== window) {
      window = w;
      used = 0;
    }
    if (used >= LIMIT) {
      stats.limited++;
      return new Response('slow down', {
        status: 429,
        headers: { 'retry-after': '1', 'x-ratelimit-limit': String(LIMIT), 'x-ratelimit-remaining': '0' },
      });
    }
    used++;
    stats.ok++;
    return new Response('ok', {
      status: 200,
      headers: { 'x-ratelimit-limit': String(LIMIT), 'x-ratelimit-remaining': String(LIMIT - used) },
    });
  };
  return { fetch, stats };
}

for (const behindMs of [0, 1, 30, 250, 700, 999]) {
  test(`a Gate one window early: with its clock ${behindMs} ms ahead of the upstream's and no reset header, 300 calls get no 429`, async () => {
    const t = new ManualTime(1_000_000_000_000 + 400); // mid-window on both clocks
    const gate = new Gate({
      policy: { algorithm: 'fixed-window', limit: LIMIT, window: '1s' },
      clock: t.clock,
      timers: t,
      timeoutMs: Infinity,
      maxQueue: 1000,
    });
    const up = upstream(t, behindMs);
    const f = limitedFetch(gate, 'api', { fetch: up.fetch, random: () => 0.5, now: () => t.now });
    const done: Promise<Response>[] = [];
    for (let i = 0; i < 300; i++) done.push(f('http://api.test/x'));
    for (let s = 0; s < 20 && up.stats.ok < 300; s++) await t.advance(500);
    await Promise.all(done);
    assert.equal(up.stats.limited, 0, `the upstream answered 429 ${up.stats.limited} times`);
    assert.equal(up.stats.ok, 300);
    // Holding the key a window after "remaining 0" costs at most one window per window: 300 calls in 6-8 s.
    assert.ok(t.now - (1_000_000_000_000 + 400) <= 10_000, `took ${t.now - 1_000_000_000_400} ms`);
  });
}

test('an upstream that says none are left but not when they reset holds the key for one window of the Gate, and the margin', async () => {
  const t = new ManualTime(400); // the Gate's own window turns at 1000; the upstream's may turn as late as 1400, 1420 with the margin
  const gate = new Gate({
    policy: { algorithm: 'fixed-window', limit: 100, window: '1s' },
    clock: t.clock,
    timers: t,
    timeoutMs: Infinity,
  });
  await gate.observe('k', { remaining: 0, resetAfterMs: undefined });
  let admittedAt = -1;
  void gate.wait('k').then(() => (admittedAt = t.now));
  await t.advance(1019);
  assert.equal(admittedAt, -1, 'nothing goes while the upstream may still be in its spent window');
  await t.advance(1);
  assert.equal(admittedAt, 1420, 'one window (1000 ms) and the default marginMs (20)');
});
