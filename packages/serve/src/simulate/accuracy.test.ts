// `sluice simulate accuracy` on a small seeded run: the exact log is the yardstick (never above the limit,
// never disagreeing with itself), windows never limit a source that kept under the limit in every true
// window on the typical mix, and the same seed prints the same figures.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ACCURACY_DEFAULTS, simulateAccuracy } from './accuracy.js';
import { arrivals, planSources } from './accuracy-traffic.js';

const small = { ...ACCURACY_DEFAULTS, sources: 600, requests: 300_000, buckets: 40 };

test('accuracy: the exact log is exact; counters never limit an under-limit source on the typical mix', () => {
  const [typical, near] = simulateAccuracy(small);
  for (const m of [typical!, near!]) {
    assert.ok(m.requests >= small.requests, `${m.mix}: ${m.requests} requests`);
    const [fixed, sw1, swk, log] = m.algorithms;
    assert.equal(log!.overAdmitted, 0);
    assert.equal(log!.worst, 1);
    assert.equal(log!.disagreements, 0);
    assert.equal(log!.falsePositives, 0);
    // A fixed window is a true window, so it limits only sources that offered more than the limit in one.
    assert.equal(fixed!.falsePositives, 0);
    assert.ok(fixed!.worst > 1.5, `${m.mix}: the fixed window's boundary burst shows (${fixed!.worst})`);
    assert.ok(swk!.worst <= sw1!.worst, `${m.mix}: sub-windows never make the worst case worse`);
    assert.equal(swk!.stateBytes, 8 * (40 + 2));
  }
  assert.equal(typical!.algorithms[1]!.falsePositives, 0);
  assert.equal(typical!.algorithms[2]!.falsePositives, 0);
  assert.ok(near!.offending > 0 && typical!.offending > 0);
  assert.deepEqual(simulateAccuracy(small), [typical, near], 'the same seed gives the same figures');
});

test('accuracy traffic: the mixes are what the README says they are', () => {
  const typical = planSources('typical', 20_000, 3);
  const bots = typical.filter((p) => p.kind === 'bot');
  assert.ok(Math.abs(bots.length / 20_000 - 0.005) < 0.002, `${bots.length} bots`);
  assert.ok(bots.every((p) => p.load >= 2 && p.load <= 20));
  assert.ok(typical.filter((p) => p.kind === 'poisson').every((p) => p.load >= 0.01 && p.load <= 0.3));
  const near = planSources('near-limit', 20_000, 3);
  const hot = near.filter((p) => p.kind === 'steady' || p.kind === 'bursting');
  assert.ok(Math.abs(hot.length / 20_000 - 0.1) < 0.01, `${hot.length} near-limit sources`);
  // A steady source 1.05× over the limit offers about 1.05 × 100 per 60 s window.
  const [times, n] = arrivals({ kind: 'steady', load: 1.05, seed: 9 }, 100, 60_000, 0, 600_000, new Float64Array(16));
  assert.ok(Math.abs(n - 1050) < 110, `${n} requests in 10 windows`);
  for (let i = 1; i < n; i++) assert.ok(times[i]! >= times[i - 1]!);
});
