// RuleStats counts hits exactly: a client-chosen cost cannot push a counter past 2^53 - 1, where a double
// stops counting ones (issue 37, finding 7).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_EXACT_COUNT, RuleStats } from './rule-stats.js';

test('a client-chosen cost breaks the counters: past 2^53 - 1 every counter starts again from 0 (a counter reset), and ones still count', () => {
  const s = new RuleStats('d', 'r');
  s.totalHits = MAX_EXACT_COUNT - 5;
  s.withinLimit = MAX_EXACT_COUNT - 5;
  s.observe(0.001);
  s.count(5);
  assert.equal(s.totalHits, MAX_EXACT_COUNT, 'exactly at the bound: still counted');
  s.count(4_294_967_295);
  assert.equal(s.totalHits, 4_294_967_295, 'restarted, then counted');
  assert.deepEqual([s.withinLimit, s.latencyCount, s.latencySum], [0, 0, 0], 'every counter restarted together');
  s.count(1);
  assert.equal(s.totalHits, 4_294_967_296, 'a hit of 1 registers');
});
