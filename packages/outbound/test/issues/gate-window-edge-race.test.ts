// Issue 37, finding 9 (third part): the outbound Gate in one process on a loaded host caused 16 upstream
// 429s of 300. Its window edges raced the upstream's own clock: a Gate whose fixed window (or sliding
// log) is exactly the upstream's turns its window a few ms before the upstream does, whenever its clock
// runs ahead or a call's trip to the upstream is a little slower than the one before, and at full rate
// it then sends a whole window's calls into the upstream's spent one. The fix is a safety margin
// (`marginMs`, default 20): a sliding log's window is 20 ms longer, and calls a fixed window held back
// wait 20 ms past its edge, so the Gate's rate stays just under the upstream's. Here the upstream is counted post hoc: each admitted call arrives at the upstream its
// trip time later, and the upstream's epoch-aligned windows run `behindMs` behind the Gate's clock.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ManualTime } from '../fakes/manual-time.js';
import { Gate } from '../../src/index.js';
import { seededRandom } from '../../../sluice/src/support/random.js';

const LIMIT = 50;
const CALLS = 600; // twelve windows at full rate

/**
 * Calls at full rate through a Gate with `policy`; returns how many of them an upstream allowing LIMIT per
 * epoch-aligned second of its own clock (`behindMs` behind the Gate's) would refuse, and when the last went.
 */
async function run(
  policy: { algorithm: 'fixed-window' | 'sliding-log'; limit: number; window: string },
  behindMs: number,
  maxTripJitterMs: number,
  marginMs?: number,
) {
  const start = 1_000_000_000_000; // a window edge on the Gate's clock: both shapes send their bursts on it
  const t = new ManualTime(start);
  const gate = new Gate({
    policy,
    clock: t.clock,
    timers: t,
    timeoutMs: Infinity,
    maxQueue: CALLS,
    ...(marginMs === undefined ? {} : { marginMs }),
  });
  const random = seededRandom(37); // the same trip times on every run
  const arrivals: number[] = [];
  const done: Promise<void>[] = [];
  let lastAdmittedAt = start;
  for (let i = 0; i < CALLS; i++) {
    done.push(
      gate.wait('api').then(() => {
        lastAdmittedAt = t.now;
        arrivals.push(t.now + 1 + random() * maxTripJitterMs);
      }),
    );
  }
  for (let s = 0; s < 40 && arrivals.length < CALLS; s++) await t.advance(500);
  await Promise.all(done);
  const perWindow = new Map<number, number>();
  let refused = 0;
  for (const at of arrivals) {
    const w = Math.floor((at - behindMs) / 1000);
    const n = (perWindow.get(w) ?? 0) + 1;
    perWindow.set(w, n);
    if (n > LIMIT) refused++;
  }
  return { refused, tookMs: lastAdmittedAt - start };
}

for (const algorithm of ['fixed-window', 'sliding-log'] as const) {
  for (const [behindMs, jitterMs] of [
    [2, 4],
    [5, 10],
    [10, 12],
    [15, 15],
    [18, 19],
  ] as const) {
    test(`window edges race the upstream's clock: a ${algorithm} Gate ${behindMs} ms ahead, trips of 1 ms plus up to ${jitterMs} ms, sends nothing into a spent upstream window`, async () => {
      const r = await run({ algorithm, limit: LIMIT, window: '1s' }, behindMs, jitterMs);
      assert.equal(r.refused, 0, `the upstream would have refused ${r.refused} of ${CALLS} calls`);
    });
  }
}

test('without the margin (marginMs: 0) the same race sends into spent upstream windows: the scenario bites', async () => {
  const r = await run({ algorithm: 'fixed-window', limit: LIMIT, window: '1s' }, 5, 10, 0);
  assert.ok(r.refused > 0, `only ${r.refused} refused`);
});

test('the default margin at full rate: a sliding log 2 % slower on a 1 s window; a fixed window no slower, its held calls 20 ms later', async () => {
  const fast = await run({ algorithm: 'sliding-log', limit: LIMIT, window: '1s' }, 0, 0, 0);
  const safe = await run({ algorithm: 'sliding-log', limit: LIMIT, window: '1s' }, 0, 0);
  // 600 calls = 12 windows; the first 50 go at once, the last batch at the start of the 12th window.
  assert.equal(fast.tookMs, 11 * 1000);
  assert.equal(safe.tookMs, 11 * 1020, 'the sliding log is 1020 ms long');
  const fixed = await run({ algorithm: 'fixed-window', limit: LIMIT, window: '1s' }, 0, 0);
  assert.equal(
    fixed.tookMs,
    11 * 1000 + 20,
    'a fixed window stays on the epoch, and its held-back calls go 20 ms past each edge',
  );
});
