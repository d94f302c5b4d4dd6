// The memory guard state against reference models (fast-check), and its bounds.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { MemoryGuardState } from './memory-state.js';

const spec = (maxDistinct = 32) => ({ distinctWindowMs: 60_000, ratioWindowMs: 60_000, maxDistinct });

type Op =
  | { kind: 'fail'; path: 'familiar' | 'unfamiliar'; pw: string | undefined; dt: number }
  | { kind: 'ok'; path: 'familiar' | 'unfamiliar'; dt: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('fail' as const),
      path: fc.constantFrom('familiar' as const, 'unfamiliar' as const),
      pw: fc.option(fc.constantFrom('a', 'b', 'c', 'd', 'e'), { nil: undefined }),
      dt: fc.integer({ min: 0, max: 30_000 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('ok' as const),
      path: fc.constantFrom('familiar' as const, 'unfamiliar' as const),
      dt: fc.integer({ min: 0, max: 30_000 }),
    }),
  },
);

test('property: consecutive failures per path, last-three password repeats, forgetting, as the model', () => {
  const memoryMs = 60_000;
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 60 }), (ops) => {
      const s = new MemoryGuardState();
      let now = 1_000_000;
      // The model: two counters, the last three counted password tags, the time of the last counted failure.
      let fam = 0,
        unf = 0,
        last: string[] = [],
        lastAt = -Infinity;
      for (const op of ops) {
        now += op.dt;
        if (lastAt + memoryMs <= now) {
          fam = 0;
          unf = 0;
          last = [];
        }
        if (op.kind === 'ok') {
          // A familiar success forgets only the familiar counter; a stranger's forgets both.
          s.records.succeedAccount('acct', op.path, ['src'], now, 10 * memoryMs, 8);
          fam = 0;
          last = [];
          if (op.path === 'unfamiliar') unf = 0;
          if (unf === 0) lastAt = -Infinity;
          continue;
        }
        const got = s.records.failAccount('acct', op.path, op.pw, now, memoryMs);
        const repeat = op.pw !== undefined && last.includes(op.pw);
        if (!repeat) {
          if (op.path === 'familiar') fam++;
          else unf++;
          lastAt = now;
          if (op.pw !== undefined) last = [op.pw, ...last].slice(0, 3);
        }
        assert.deepEqual(got, { counted: !repeat, failures: op.path === 'familiar' ? fam : unf, total: fam + unf });
      }
    }),
  );
});

test('property: distinct failed accounts per source are exact within the sliding window', () => {
  const windowMs = 60_000;
  fc.assert(
    fc.property(
      fc.array(fc.record({ account: fc.integer({ min: 0, max: 15 }), dt: fc.integer({ min: 0, max: 20_000 }) }), {
        maxLength: 80,
      }),
      (steps) => {
        const s = new MemoryGuardState();
        let now = 5_000_000;
        const seen = new Map<number, number>();
        for (const step of steps) {
          now += step.dt;
          seen.set(step.account, now);
          const v = s.records.noteSource('src', `acct-${step.account}`, true, now, {
            distinctWindowMs: windowMs,
            ratioWindowMs: windowMs,
            maxDistinct: 32,
          });
          // The model: accounts last seen within (now − window, now].
          const expected = [...seen.values()].filter((at) => at + windowMs > now).length;
          assert.equal(v.distinctFailedAccounts, expected);
        }
      },
    ),
  );
});

test('distinct accounts are capped: the count reads the cap, "at least"', () => {
  const s = new MemoryGuardState();
  let v;
  for (let i = 0; i < 100; i++) v = s.records.noteSource('src', `acct-${i}`, true, 1000 + i, spec(11));
  assert.equal(v!.distinctFailedAccounts, 11);
  assert.ok(s.dump().length < 2000, 'the set stays at the cap');
});

test('bounds: a flood of sources stays at maxSources and leaves accounts alone', () => {
  const s = new MemoryGuardState({ maxSources: 1000, maxAccounts: 10 });
  s.records.failAccount('victim', 'unfamiliar', undefined, 1, 60_000);
  for (let i = 0; i < 10_000; i++) s.records.noteSource(`src-${i}`, 'victim', true, 2 + i, spec());
  assert.equal(s.sourceCount, 1000);
  assert.equal(s.accountCount, 1);
  const kept = (from: number, to: number) => {
    let n = 0;
    for (let i = from; i < to; i++) if (s.records.readSource(`src-${i}`, 20_000, spec()) !== undefined) n++;
    return n;
  };
  // The oldest go first: exactly the newest thousand are left.
  assert.equal(kept(0, 9000), 0);
  assert.equal(kept(9000, 10_000), 1000);
  assert.equal(s.records.readAccount('victim', 20_000)?.unfamiliarFailures, 1);
});

test('records expire: sources two windows after their last attempt, accounts after failureMemory and familiarity', () => {
  const s = new MemoryGuardState();
  s.records.noteSource('src', 'a', true, 0, spec());
  assert.ok(s.records.readSource('src', 119_999, spec()) !== undefined);
  assert.equal(s.records.readSource('src', 120_000, spec()), undefined);
  s.records.failAccount('acct', 'unfamiliar', undefined, 0, 60_000);
  assert.equal(s.records.readAccount('acct', 60_000), undefined);
  s.records.succeedAccount('acct', 'unfamiliar', ['home'], 0, 1000, 8);
  assert.deepEqual(s.records.readAccount('acct', 999)?.familiar, ['home']);
  assert.equal(s.records.readAccount('acct', 1000), undefined);
});

test('familiar sources: newest first, deduplicated, at most maxFamiliar', () => {
  const s = new MemoryGuardState();
  for (const src of ['a', 'b', 'c', 'a', 'd']) s.records.succeedAccount('acct', 'familiar', [src], 0, 1000, 3);
  assert.deepEqual(s.records.readAccount('acct', 1)?.familiar, ['d', 'a', 'c']);
});

test('one set, two windows: the long count keeps entries the short window forgot, and the newest at the cap', () => {
  const s = new MemoryGuardState();
  const both = { distinctWindowMs: 60_000, longDistinctWindowMs: 600_000, ratioWindowMs: 60_000, maxDistinct: 4 };
  for (let i = 0; i < 3; i++) s.records.noteSource('src', `old-${i}`, true, i * 1000, both);
  let v = s.records.readSource('src', 200_000, both)!;
  assert.deepEqual([v.distinctFailedAccounts, v.distinctFailedAccountsLong], [0, 3]);
  // Two more: over the cap of four the oldest goes, so the short count stays exact and the long one reads "at least".
  s.records.noteSource('src', 'new-0', true, 200_000, both);
  v = s.records.noteSource('src', 'new-1', true, 200_001, both);
  assert.deepEqual([v.distinctFailedAccounts, v.distinctFailedAccountsLong], [2, 4]);
  v = s.records.readSource('src', 600_000 + 2000, both)!;
  assert.deepEqual(
    [v.distinctFailedAccounts, v.distinctFailedAccountsLong],
    [0, 2],
    'old-1 and old-2 left the long window',
  );
  // The record lives its longest window after its last attempt (the set's here; two ratio windows at most).
  assert.ok(s.records.readSource('src', 200_001 + 600_000 - 1, both) !== undefined);
  assert.equal(s.records.readSource('src', 200_001 + 600_000, both), undefined);
});
