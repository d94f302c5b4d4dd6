import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { FailureRateMonitor, normalTail, poissonUpper } from './anomaly.js';

const settings = { bucketMs: 60_000, span: 60, warmup: 30, sigma: 3, minFailures: 10 };

/** Feeds `perBucket` failures into each of `buckets` minutes from `start`, spread over the minute. */
function feed(m: FailureRateMonitor, start: number, buckets: number, perBucket: number): number {
  for (let b = 0; b < buckets; b++)
    for (let i = 0; i < perBucket; i++) m.note(start + b * 60_000 + Math.floor((i * 60_000) / perBucket));
  return start + buckets * 60_000;
}

test('never fires before the warm-up, however many fail', () => {
  const m = new FailureRateMonitor(settings);
  const t = feed(m, 0, 29, 1000);
  assert.equal(m.anomalous(t - 1), false);
});

test('a shift beyond 3 sigma fires within the bucket, and a steady rate does not', () => {
  const m = new FailureRateMonitor(settings);
  const t = feed(m, 0, 120, 20); // a steady 20 a minute
  assert.equal(m.anomalous(t), false);
  assert.ok(Math.abs(m.baselineMean - 20) < 1e-9);
  // The sd floor is sqrt(20) ≈ 4.47, so 20 + 3·4.47 ≈ 33.4 failures in a minute; but 20 a minute is
  // Poisson, and a Poisson count goes beyond 35 in 0.13 % of minutes, as a normal one beyond 3 sigma.
  for (let i = 0; i < 35; i++) m.note(t + i);
  assert.equal(m.anomalous(t + 40), false);
  m.note(t + 41);
  assert.equal(m.anomalous(t + 42), true, '36 failures within the first second of a minute');
});

test('global-failure-anomaly false alarms at 4 failures a minute: "3 sigma" fires in 0.13 % of ordinary minutes, as for a normal count', () => {
  // At 50,000 users a site fails some 4 logins a minute. mean + 3·sqrt(mean) is 10, and a Poisson count
  // reaches 11 in 0.28 % of minutes: about thirty false alarms a week, each challenging the strangers of
  // two minutes. The threshold is the Poisson count with the normal's chance instead.
  const m = new FailureRateMonitor(settings);
  let t = feed(m, 0, 120, 4);
  assert.ok(Math.abs(m.baselineMean - 4) < 1e-9);
  assert.equal(m.threshold(), 11);
  // Ordinary minutes, drawn from a Poisson distribution with mean 4 by a seeded generator: false alarms.
  let seed = 12345;
  const random = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
  const poisson = (mean: number) => {
    let k = 0;
    for (let p = random(); p > Math.exp(-mean); p *= random()) k++;
    return k;
  };
  let alarms = 0;
  const minutes = 20_000;
  for (let b = 0; b < minutes; b++) {
    const n = poisson(4);
    for (let i = 0; i < n; i++) m.note(t + i);
    if (m.anomalous(t + 59_999) && m.currentCount(t + 59_999) > m.threshold()) alarms++;
    t += 60_000;
  }
  assert.ok(alarms / minutes < 0.002, `${alarms} of ${minutes} minutes`);
});

test('poissonUpper is the least count whose Poisson tail is at most the chance, for small means and large', () => {
  const tail = (mean: number, k: number) => {
    let pmf = Math.exp(-mean);
    let cdf = pmf;
    for (let i = 1; i <= k; i++) cdf += pmf *= mean / i;
    return 1 - cdf;
  };
  for (const mean of [0.1, 0.5, 1, 4, 20, 100, 600]) {
    const chance = normalTail(3);
    const k = poissonUpper(mean, chance);
    assert.ok(tail(mean, k) <= chance && (k === 0 || tail(mean, k - 1) > chance), `mean ${mean}: ${k}`);
  }
  assert.equal(poissonUpper(0, 0.001), 0);
  // Beyond a mean of 1000 the skew-corrected normal quantile: within two of the count summed to it.
  assert.ok(Math.abs(poissonUpper(1001, normalTail(3)) - poissonUpper(999, normalTail(3)) - 2) <= 2);
  assert.ok(Math.abs(normalTail(3) - 0.0013499) < 1e-6 && Math.abs(normalTail(0) - 0.5) < 1e-6);
});

test('an attack is not learnt: the anomaly holds for as long as the rate stays high', () => {
  const m = new FailureRateMonitor(settings);
  let t = feed(m, 0, 60, 5);
  t = feed(m, t, 300, 500); // five hours of attack
  assert.equal(m.anomalous(t - 1), true);
  assert.ok(m.baselineMean < 6, `baseline stayed near 5, got ${m.baselineMean}`);
  // The attack stops: the bucket after the last attacked one still holds the flag, the next one does not.
  assert.equal(m.anomalous(t + 30_000), true);
  assert.equal(m.anomalous(t + 60_000 + 1), false);
});

test('on a quiet site a handful of typos is not an anomaly (at least minFailures must fail)', () => {
  const m = new FailureRateMonitor(settings);
  m.anomalous(0); // the first look starts the clock; the silent hour after it is learnt as zeros
  const t = feed(m, 0, 60, 0);
  for (let i = 0; i < 9; i++) m.note(t + i);
  assert.equal(m.anomalous(t + 10), false);
  m.note(t + 10);
  assert.equal(m.anomalous(t + 11), true);
});

test('silence longer than ten spans resets the baseline and the warm-up', () => {
  const m = new FailureRateMonitor(settings);
  const t = feed(m, 0, 60, 5);
  const later = t + 601 * 60_000;
  for (let i = 0; i < 100; i++) m.note(later + i);
  assert.equal(m.anomalous(later + 100), false);
  assert.equal(m.baselineBuckets, 0);
});

// Shared mode against a model of the fleet: monitors that note failures and sync, in any order and at any
// time, through a shared count per bucket (what MemoryGuardState and Redis keep).
test('shared: a monitor never counts more than the fleet failed; after every monitor syncs twice, each counts exactly what the fleet did', () => {
  const event = fc.oneof(
    fc.record({ kind: fc.constant('note' as const), who: fc.nat(2), dt: fc.nat(30_000) }),
    fc.record({ kind: fc.constant('sync' as const), who: fc.nat(2), dt: fc.nat(30_000) }),
    fc.record({ kind: fc.constant('sync-fails' as const), who: fc.nat(2), dt: fc.nat(30_000) }),
  );
  fc.assert(
    fc.property(fc.array(event, { maxLength: 200 }), (events) => {
      const monitors = [0, 1, 2].map(() => new FailureRateMonitor({ ...settings, shared: true }));
      const shared = new Map<number, number>();
      const truth = new Map<number, number>();
      const sync = (m: FailureRateMonitor, now: number, fails = false) => {
        const adds = m.takeUnshared(now);
        if (fails) return m.unshare(adds);
        const totals = adds.map(([b, n]) => {
          shared.set(b, (shared.get(b) ?? 0) + n);
          return shared.get(b)!;
        });
        adds.forEach(([b], i) => {
          m.applyShared(b, totals[i]!);
        });
      };
      let now = 1_700_000_000_000;
      for (const e of events) {
        now += e.dt;
        const m = monitors[e.who]!;
        if (e.kind === 'note') {
          m.note(now);
          const b = Math.floor(now / settings.bucketMs);
          truth.set(b, (truth.get(b) ?? 0) + 1);
        } else sync(m, now, e.kind === 'sync-fails');
        const bucket = Math.floor(now / settings.bucketMs);
        for (const x of monitors) assert.ok(x.currentCount(now) <= (truth.get(bucket) ?? 0));
      }
      for (let round = 0; round < 2; round++) for (const m of monitors) sync(m, now);
      const bucket = Math.floor(now / settings.bucketMs);
      for (const m of monitors) assert.equal(m.currentCount(now), truth.get(bucket) ?? 0);
    }),
  );
});
