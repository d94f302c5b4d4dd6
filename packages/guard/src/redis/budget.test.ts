// budget.ts: records that never succeeded keep their evidence's lifetime while they are made slowly, and
// live maxRecords / rate (at least the floor) when a flood makes them fast.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RecordBudget } from './budget.js';

const MIN = 60_000;
const DAY = 86_400_000;

test('no cap while records come slowly; maxRecords / rate under a flood, never below the floor', () => {
  const b = new RecordBudget(1_000_000, 30 * MIN, 7 * DAY);
  let now = 1_700_000_000_000;
  assert.equal(b.capMs(now), 0, 'none made: no cap');
  b.note(30, now); // a slow stuffer's proxies: 30 an hour
  assert.equal(b.capMs(now), 0);
  b.note(100_000, now); // 100,000 in a minute: 1e6 records last 10 minutes at this rate, floor 30
  assert.equal(b.capMs(now), 30 * MIN);
  const big = new RecordBudget(1_000_000, 30 * MIN, 7 * DAY);
  big.note(1_000, now); // 1,000 a minute: 1e6 records last 1,000 minutes
  assert.equal(big.capMs(now), 1_000 * MIN);
  now += 2 * MIN; // the flood stopped two minutes ago: its minute has faded out
  assert.equal(big.capMs(now), 0);
});
