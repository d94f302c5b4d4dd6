// Several policies on one key, on any store: random traces of turns, each a few calls made at once on a
// few keys (so a batched store decides them in one call, several on one key), decided field for field as
// the memory store decides them one after another. Two sets: fixed-size state without a ban (the Redis
// script's decide_fixed path), and a sliding log among others with a ban (its log read from the batch's
// reads and its own writes). Memory and Redis run it from their own tests.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { Limiter, MemoryStore } from '../../src/index.js';
import type { Decision, PolicyOptions, Store } from '../../src/index.js';

const WINDOW = 1000;
export const severalFixedPolicies: PolicyOptions[] = [
  { name: 'fw', algorithm: 'fixed-window', limit: 6, window: 4 * WINDOW },
  { name: 'tb', algorithm: 'token-bucket', limit: 5, window: WINDOW, burst: 3 },
  { name: 'gcra', algorithm: 'gcra', limit: 4, window: WINDOW, burst: 6 },
  { name: 'sw4', algorithm: 'sliding-window', limit: 8, window: 2 * WINDOW, buckets: 4 },
  { name: 'shaper', algorithm: 'leaky-bucket', mode: 'shaper', limit: 5, window: WINDOW, burst: 4, delay: 2 },
];

/** A sliding log, which writes as it decides, with a ban and a fixed-size policy beside it. */
export const severalLogPolicies: PolicyOptions[] = [
  { name: 'log', algorithm: 'sliding-log', limit: 4, window: 2 * WINDOW },
  { name: 'fw', algorithm: 'fixed-window', limit: 6, window: 4 * WINDOW, blockFor: 1500 },
  { name: 'gcra', algorithm: 'gcra', limit: 4, window: WINDOW, burst: 6 },
  { name: 'log2', algorithm: 'sliding-log', limit: 3, window: WINDOW },
];

interface Call {
  key: string;
  cost: number;
}

const turnArb = fc.record({
  gap: fc.integer({ min: 0, max: 700 }),
  calls: fc.array(fc.record({ key: fc.constantFrom('a', 'b', 'c'), cost: fc.constantFrom(0, 1, 1, 1, 2) }), {
    minLength: 1,
    maxLength: 6,
  }),
});

const comparable = (d: Decision) => ({
  allowed: d.allowed,
  remaining: d.remaining,
  resetAfterMs: d.resetAfterMs,
  retryAfterMs: d.retryAfterMs,
  delayMs: d.delayMs,
  policy: d.policy,
  reason: d.reason,
});

export function severalFixedConformance(name: string, makeStore: () => Store, runs = 30): void {
  severalConformance(`${name}: several fixed-size policies on a key`, makeStore, severalFixedPolicies, 2, runs);
  severalConformance(
    `${name}: a sliding log beside other policies (a ban among them) on a key`,
    makeStore,
    severalLogPolicies,
    1,
    runs,
  );
}

function severalConformance(
  title: string,
  makeStore: () => Store,
  all: PolicyOptions[],
  fewest: number,
  runs: number,
): void {
  test(`${title}, calls made at once, decide as the memory store`, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(turnArb, { minLength: 5, maxLength: 25 }),
        fc.subarray(all, { minLength: fewest }),
        async (turns, policies) => {
          let now = 10_000;
          const clock = () => now;
          const tested = new Limiter({ policies, store: makeStore(), clock });
          const reference = new Limiter({ policies, store: new MemoryStore(), clock });
          const prefix = `several-fixed:${Math.random().toString(36).slice(2)}:`;
          for (const [t, turn] of turns.entries()) {
            now += turn.gap;
            const got = await Promise.all(turn.calls.map((c: Call) => tested.limit(prefix + c.key, { cost: c.cost })));
            const want = turn.calls.map((c: Call) => reference.limitSync(prefix + c.key, { cost: c.cost }));
            assert.deepEqual(
              got.map(comparable),
              want.map(comparable),
              `turn ${t} at ${now}: ${JSON.stringify(turn.calls)} with ${policies.map((p) => p.name).join('+')}`,
            );
          }
        },
      ),
      { numRuns: runs },
    );
  });
}
