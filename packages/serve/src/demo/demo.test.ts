// Checks that `sluice demo` is deterministic and that its measured numbers respect each algorithm's bound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compareOnTrace, type Measurement } from './compare.js';
import { runDemo } from './index.js';
import { BURST, CONCURRENCY, LIMIT, WINDOW_MS } from './scale.js';
import { ATTACK_SPAN_MS, boundaryAttackTrace, demoTraces, steadyTrace } from './traces.js';
import { maxInWindow, spanMs } from './window-count.js';

function byLabel(results: readonly Measurement[], label: string): Measurement {
  const found = results.find((m) => m.label === label);
  assert.ok(found, `no measurement labelled ${label}`);
  return found;
}

const BUCKETS = ['token-bucket', 'gcra', 'leaky-bucket meter', 'leaky-bucket shaper'];
const COUNTERS = ['sliding-window k=1', 'sliding-window k=10'];

test('maxInWindow counts the half-open window (t − W, t]', () => {
  assert.equal(
    maxInWindow(
      [
        { at: 0, cost: 1 },
        { at: 10, cost: 1 },
      ],
      10,
    ),
    1,
  ); // 0 is outside (0, 10]
  assert.equal(
    maxInWindow(
      [
        { at: 1, cost: 1 },
        { at: 10, cost: 1 },
      ],
      10,
    ),
    2,
  );
  assert.equal(
    maxInWindow(
      [
        { at: 5, cost: 3 },
        { at: 0, cost: 2 },
        { at: 9, cost: 1 },
      ],
      10,
    ),
    6,
  ); // unsorted, costs
  assert.equal(maxInWindow([], 10), 0);
});

test('traces are deterministic, sorted and on whole milliseconds', () => {
  assert.deepEqual(demoTraces(), demoTraces());
  for (const trace of demoTraces()) {
    for (let i = 0; i < trace.requests.length; i++) {
      const r = trace.requests[i]!;
      assert.ok(Number.isInteger(r.at) && r.at >= 0, `${trace.id}: time ${r.at}`);
      assert.ok(Number.isInteger(r.cost) && r.cost > 0, `${trace.id}: cost ${r.cost}`);
      if (i > 0) assert.ok(r.at >= trace.requests[i - 1]!.at, `${trace.id}: request ${i} out of order`);
    }
  }
});

test('steady offers 1.5× the limit rate; boundary attack puts the limit on each side of the edge', () => {
  const steady = steadyTrace().requests;
  const perWindow = (steady.length * WINDOW_MS) / (steady.at(-1)!.at - steady[0]!.at);
  assert.ok(Math.abs(perWindow / LIMIT - 1.5) < 0.05, `steady offers ${perWindow} per window`);

  const attack = boundaryAttackTrace().requests;
  const edge = WINDOW_MS;
  assert.equal(attack.filter((r) => r.at >= edge - ATTACK_SPAN_MS && r.at < edge).length, LIMIT);
  assert.equal(attack.filter((r) => r.at >= edge && r.at < edge + ATTACK_SPAN_MS).length, LIMIT);
});

test('the demo report is the same on every run', async () => {
  const first = await runDemo();
  assert.equal(await runDemo(), first);
  for (const trace of demoTraces()) assert.ok(first.includes(`${trace.title}: `), `report lacks ${trace.title}`);
});

test('boundary attack: fixed-window admits about 2× the limit; the others hold it', async () => {
  const trace = boundaryAttackTrace();
  const results = await compareOnTrace(trace);

  const fixed = byLabel(results, 'fixed-window');
  assert.ok(fixed.maxInWindow >= 1.9 * LIMIT, `fixed-window max in window ${fixed.maxInWindow}`);
  assert.ok(spanMs(fixed.admissions) < 2 * ATTACK_SPAN_MS, 'and within milliseconds');

  assert.ok(byLabel(results, 'sliding-log').maxInWindow <= LIMIT);

  // From idle, a bucket admits at most its burst plus what refills while the trace lasts (limit per window).
  // A window counter discounts the previous window by at most elapsed/W, so within `span` ms of the edge it
  // admits at most limit·span/W beyond the limit. Here span ≈ 40 ms, so both bounds are 101.
  const refillDuringTrace = Math.ceil((LIMIT * spanMs(trace.requests)) / WINDOW_MS);
  for (const label of BUCKETS) {
    const m = byLabel(results, label);
    assert.ok(m.maxInWindow <= BURST + refillDuringTrace, `${label}: ${m.maxInWindow}`);
  }
  for (const label of COUNTERS) {
    const m = byLabel(results, label);
    assert.ok(m.maxInWindow <= LIMIT + refillDuringTrace, `${label}: ${m.maxInWindow}`);
  }
});

test('on every trace, each algorithm stays within its own worst-case bound', async () => {
  for (const trace of demoTraces()) {
    const results = await compareOnTrace(trace);
    const maxCost = Math.max(...trace.requests.map((r) => r.cost));
    const at = (label: string) => `${trace.id}/${label}`;
    // Exact: nothing beyond the limit in any true window.
    assert.ok(byLabel(results, 'sliding-log').maxInWindow <= LIMIT, at('sliding-log'));
    // One full window plus the next, or a counter's whole previous window wrongly discounted.
    for (const label of ['fixed-window', ...COUNTERS])
      assert.ok(byLabel(results, label).maxInWindow <= 2 * LIMIT, at(label));
    // A full bucket, then one window of refill.
    for (const label of BUCKETS) assert.ok(byLabel(results, label).maxInWindow <= BURST + LIMIT, at(label));
    // The shaper's output starts are spaced by cost × (W / limit): at most limit, plus the last request's
    // extra units, forwarded in any window; and at most limit/10 (+ the same) in any 1 s.
    const shaper = byLabel(results, 'leaky-bucket shaper');
    assert.ok(shaper.forwardedMaxInWindow <= LIMIT + maxCost - 1, at('shaper output'));
    assert.ok(shaper.forwardedMaxInShortWindow <= LIMIT / 10 + maxCost - 1, at('shaper output per second'));
    // Each slot is reused at most once per hold, so W / hold uses per slot in a window.
    const concurrency = results.find((m) => m.algorithm === 'concurrency')!;
    assert.ok(concurrency.maxInWindow <= (CONCURRENCY.inFlight * WINDOW_MS) / CONCURRENCY.holdMs, at('concurrency'));
    assert.ok(concurrency.maxInShortWindow <= CONCURRENCY.inFlight, at('concurrency per second'));
    // gcra and both leaky-bucket modes admit exactly as the token bucket does.
    const bucket = byLabel(results, 'token-bucket').admissions;
    for (const label of BUCKETS) assert.deepEqual(byLabel(results, label).admissions, bucket, at(label));
  }
});

test('state per key: slots × 8 B for fixed-size state; log entries merge within a millisecond', async () => {
  const results = await compareOnTrace(boundaryAttackTrace());
  assert.equal(byLabel(results, 'gcra').stateBytes, 8);
  assert.equal(byLabel(results, 'token-bucket').stateBytes, 16);
  assert.equal(byLabel(results, 'fixed-window').stateBytes, 16);
  assert.equal(byLabel(results, 'sliding-window k=1').stateBytes, 3 * 8);
  assert.equal(byLabel(results, 'sliding-window k=10').stateBytes, 12 * 8);
  // 100 admitted requests at 5 per millisecond are 20 log entries of 16 B.
  assert.equal(byLabel(results, 'sliding-log').stateBytes, (LIMIT / 5) * 16);
  assert.equal(byLabel(results, 'leaky-bucket shaper').maxDelayMs > 0, true);
});
