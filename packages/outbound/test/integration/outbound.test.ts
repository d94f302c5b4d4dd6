// limitedFetch against a real rate-limited HTTP server on 127.0.0.1, from one process: it never exceeds
// the server's limit, honours Retry-After, loses and duplicates no call, and cancelled waiters free
// their places without ever reaching the server.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Gate, limitedFetch, type FetchLike } from '../../src/index.js';
import { SluiceError } from '../../../sluice/src/index.js';
import { RateLimitedApi } from './rate-limited-api.js';

// The server refills 50/s from a bucket of 50; the gate runs at the same rate with a bucket of 10, so
// up to 800 ms of delay between admission and arrival can never push the server over.
const api = new RateLimitedApi({ rate: 50, burst: 50 });
before(() => api.start());
after(() => api.close());

const policy = { name: 'api', algorithm: 'token-bucket', limit: 50, window: '1s', burst: 10 } as const;

/** fetch with a record of when each request left and each answer came back. */
function recorded() {
  const events: { kind: 'send' | 'recv'; at: number; status?: number; retryAfterMs?: number }[] = [];
  const fetch: FetchLike = async (input, init) => {
    events.push({ kind: 'send', at: performance.now() });
    const res = await globalThis.fetch(input, init);
    const ra = res.headers.get('retry-after');
    events.push({
      kind: 'recv',
      at: performance.now(),
      status: res.status,
      retryAfterMs: ra === null ? undefined : Number(ra) * 1000,
    });
    return res;
  };
  return { events, fetch };
}

test('150 concurrent calls: none exceeds the server limit, each arrives once and completes', async () => {
  const start = api.hits.length;
  const gate = new Gate({ policies: [policy] });
  const f = limitedFetch(gate, 'api');
  const ids = Array.from({ length: 150 }, (_, i) => `single-${i}`);
  const bodies = await Promise.all(ids.map(async (id) => (await f(`${api.url}/v1/thing?id=${id}`)).text()));
  assert.deepEqual(bodies, ids, 'every call completed with its own answer');
  const hits = api.hits.slice(start);
  assert.equal(hits.filter((h) => h.status === 429).length, 0, 'no 429: the server limit was never exceeded');
  assert.equal(hits.length, 150, 'no call lost or sent twice');
  assert.equal(new Set(hits.map((h) => h.id)).size, 150);
});

test('Retry-After is honoured: after a 429 nothing is sent on the key until it has passed, then all complete', async () => {
  const start = api.hits.length;
  const gate = new Gate({ policies: [policy] });
  const rec = recorded();
  const f = limitedFetch(gate, 'api', { fetch: rec.fetch, backoffMs: 100 });
  api.outage(1500); // answered as 429 with Retry-After: 2
  const ids = Array.from({ length: 20 }, (_, i) => `outage-${i}`);
  const res = await Promise.all(ids.map((id) => f(`${api.url}/v1/thing?id=${id}`)));
  assert.deepEqual(
    res.map((r) => r.status),
    ids.map(() => 200),
    'every call completed after the outage',
  );
  const refusals = rec.events.filter((e) => e.kind === 'recv' && e.status === 429);
  assert.ok(refusals.length >= 1, 'the outage was seen');
  for (const r of refusals) {
    const early = rec.events.filter((e) => e.kind === 'send' && e.at > r.at && e.at < r.at + r.retryAfterMs! - 2);
    assert.equal(
      early.length,
      0,
      `a request left ${early[0] && (early[0].at - r.at).toFixed(1)} ms after a 429 that said wait ${r.retryAfterMs} ms`,
    );
  }
  const served = api.hits
    .slice(start)
    .filter((h) => h.status === 200)
    .map((h) => h.id);
  assert.deepEqual(
    served.sort(),
    [...ids].sort(),
    'each call served exactly once; the refused attempts were retried, not duplicated',
  );
});

test('cancelled waiters free their places and never reach the server', async () => {
  const start = api.hits.length;
  const gate = new Gate({
    policies: [{ name: 'slow', algorithm: 'token-bucket', limit: 5, window: '1s', burst: 1 }],
    maxQueue: 5,
  });
  const f = limitedFetch(gate, 'slow');
  await f(`${api.url}/v1/thing?id=cancel-first`);
  const doomed = Array.from({ length: 5 }, (_, i) =>
    f(`${api.url}/v1/thing?id=cancel-doomed-${i}`, { signal: AbortSignal.timeout(50) }),
  );
  await assert.rejects(
    f(`${api.url}/v1/thing?id=cancel-overflow`),
    (e: unknown) => e instanceof SluiceError && e.code === 'ERR_SLUICE_QUEUE_FULL',
  );
  for (const d of doomed) await assert.rejects(d, (e: unknown) => (e as Error).name === 'TimeoutError');
  assert.equal(gate.pending(), 0);
  const later = await Promise.all(Array.from({ length: 5 }, (_, i) => f(`${api.url}/v1/thing?id=cancel-later-${i}`)));
  assert.deepEqual(
    later.map((r) => r.status),
    [200, 200, 200, 200, 200],
  );
  const ids = api.hits.slice(start).map((h) => h.id);
  assert.deepEqual(ids, [
    'cancel-first',
    'cancel-later-0',
    'cancel-later-1',
    'cancel-later-2',
    'cancel-later-3',
    'cancel-later-4',
  ]);
});
