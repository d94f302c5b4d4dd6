// The share monitor: a binomial test of a bucket's hits against the baseline share, with a prior for the cold start.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ShareMonitor, type ShareSettings } from './share-monitor.js';

const HOUR = 3_600_000;
const T0 = 1_700_000_000_000 - (1_700_000_000_000 % HOUR);
const settings: ShareSettings = {
  bucketMs: HOUR,
  span: 24,
  warmup: 6,
  prior: 0.1,
  floor: 0.002,
  sigma: 4,
  minHits: 10,
};

/** `attempts` spread over the bucket starting at `at`, `hits` of them hits. */
function fill(m: ShareMonitor, at: number, attempts: number, hits: number): void {
  for (let i = 0; i < attempts; i++) m.note(at + Math.floor((i * HOUR) / attempts), i < hits);
}

test('cold start: before any baseline the prior is tested against, so the first bucket can fire', () => {
  const m = new ShareMonitor(settings);
  fill(m, T0, 100, 9);
  assert.equal(m.anomalous(T0 + HOUR - 1), false, 'nine hits: below minHits');
  const hot = new ShareMonitor(settings);
  fill(hot, T0, 100, 40); // 40 % against a 10 % prior: z = (40 - 10) / 3 = 10
  assert.equal(hot.anomalous(T0 + HOUR - 1), true);
  const mild = new ShareMonitor(settings);
  fill(mild, T0, 100, 20); // z = (20 - 10) / 3 = 3.3 < 4
  assert.equal(mild.anomalous(T0 + HOUR - 1), false);
});

test('the baseline replaces the prior after the warm-up; a share the prior allowed then fires', () => {
  const m = new ShareMonitor(settings);
  for (let b = 0; b < 6; b++) fill(m, T0 + b * HOUR, 1000, 5); // 0.5 % an hour
  assert.equal(m.baselineBuckets, 5, 'the sixth bucket is still the current one');
  fill(m, T0 + 6 * HOUR, 1000, 5);
  assert.equal(m.baselineBuckets, 6);
  assert.ok(m.expectedShare() < 0.05, `learnt ${m.expectedShare()}`);
  // 5 % was well under the prior of 10 %; against a baseline near 0.5 % it is an anomaly, seen as the bucket fills.
  const at = T0 + 7 * HOUR;
  for (let i = 0; i < 300; i++) m.note(at + i, i % 20 === 0);
  assert.equal(m.anomalous(at + 300), true);
});

test('an anomalous bucket is not learnt and holds through the next; then it ends', () => {
  const m = new ShareMonitor(settings);
  for (let b = 0; b < 8; b++) fill(m, T0 + b * HOUR, 1000, 5);
  assert.equal(m.anomalous(T0 + 8 * HOUR), false);
  const before = m.expectedShare();
  fill(m, T0 + 8 * HOUR, 1000, 200);
  assert.equal(m.anomalous(T0 + 9 * HOUR), true, 'held through the next bucket');
  assert.equal(m.expectedShare(), before, 'the attack was not learnt');
  fill(m, T0 + 9 * HOUR, 1000, 5);
  assert.equal(m.anomalous(T0 + 10 * HOUR), false);
});

test('the floor: a baseline of nothing does not make a few hits an anomaly', () => {
  const m = new ShareMonitor(settings);
  for (let b = 0; b < 8; b++) fill(m, T0 + b * HOUR, 1000, 0);
  fill(m, T0 + 8 * HOUR, 10_000, 12); // 0.12 % against the 0.2 % floor
  assert.equal(m.anomalous(T0 + 9 * HOUR - 1), false);
});

test('a persisted baseline is adopted unless the monitor learnt more; ill-formed ones are ignored', () => {
  const learnt = new ShareMonitor(settings);
  for (let b = 0; b < 8; b++) fill(learnt, T0 + b * HOUR, 1000, 5);
  const snap = learnt.snapshot()!;
  assert.equal(snap.learnt, 7);
  const fresh = new ShareMonitor(settings);
  assert.equal(fresh.snapshot(), undefined);
  fresh.restore({ share: Number.NaN, learnt: 3 });
  fresh.restore({ share: 0.5, learnt: 0 });
  assert.equal(fresh.baselineBuckets, 0);
  fresh.restore(snap);
  assert.equal(fresh.expectedShare(), learnt.expectedShare());
  // 5 % from its first bucket: the prior would have let it pass; the fleet's baseline does not.
  for (let i = 0; i < 300; i++) fresh.note(T0 + 20 * HOUR + i, i % 20 === 0);
  assert.equal(fresh.anomalous(T0 + 20 * HOUR + 300), true);
  learnt.restore({ share: 0.9, learnt: 2 });
  assert.equal(learnt.snapshot()!.share, snap.share, 'a shorter baseline does not replace a longer one');
});

test('shared mode: counts taken for the fleet come back as the totals tested; a failed share is given back', () => {
  const a = new ShareMonitor(settings, true);
  fill(a, T0, 100, 30);
  const taken = a.takeUnshared(T0 + HOUR - 1);
  assert.deepEqual(taken.attempts, [[Math.floor(T0 / HOUR), 100]]);
  assert.deepEqual(taken.hits, [[Math.floor(T0 / HOUR), 30]]);
  a.unshare(taken);
  const again = a.takeUnshared(T0 + HOUR - 1);
  assert.deepEqual(again.hits, taken.hits, 'given back, taken again');
  // The fleet's totals (three guards' worth) become what is tested.
  a.applyShared(Math.floor(T0 / HOUR), 300, 90);
  assert.deepEqual(a.current(T0 + HOUR - 1), { attempts: 300, hits: 90 });
});
