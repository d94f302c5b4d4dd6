// Properties every algorithm shares, whatever its arithmetic: a rejected request changes nothing, a cost
// of 0 changes nothing, and retryAfterMs is a promise kept (and, for the exact algorithms, not padded).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { PolicyOptions } from '../../src/index.js';
import { driven, play, policyOptionsArb, traceArb } from './trace.js';

const policyArb = policyOptionsArb();

const capacityOf = (p: PolicyOptions) => p.burst ?? p.limit;
const caseArb = policyArb.chain((p) => fc.tuple(fc.constant(p), traceArb(Number(p.window), capacityOf(p), 40)));

test('a rejected request, and a request of cost 0, change no state', () => {
  fc.assert(
    fc.property(caseArb, ([policy, steps]) => {
      const { limiter, at } = driven(policy);
      for (const s of steps) {
        at(s.at);
        const before = limiter.limitSync(s.key, { cost: 0 });
        const d = limiter.limitSync(s.key, { cost: s.cost });
        if (!d.allowed || s.cost === 0) {
          assert.deepEqual(limiter.limitSync(s.key, { cost: 0 }), before, `${JSON.stringify(s)} changed state`);
        }
      }
    }),
    { numRuns: 400 },
  );
});

test('a retry after retryAfterMs passes; for exact algorithms one millisecond earlier does not', () => {
  fc.assert(
    fc.property(caseArb, ([policy, steps]) => {
      const { decisions } = play(policy, steps);
      const i = decisions.findIndex((d) => !d.allowed);
      if (i < 0) return;
      const prefix = steps.slice(0, i);
      const denied = steps[i]!;
      const r = decisions[i]!.retryAfterMs;
      assert.ok(r >= 1, `denied with retryAfterMs ${r}`);
      const late = play(policy, prefix);
      late.at(denied.at + r);
      assert.equal(late.limiter.limitSync(denied.key, { cost: denied.cost }).allowed, true, `retry at +${r} ms denied`);
      // GCRA and the shaper keep a float TAT, so their retry may be rounded up by 1 ms at a tie.
      const exact = !(policy.algorithm === 'gcra' || (policy.algorithm === 'leaky-bucket' && policy.mode === 'shaper'));
      if (exact && r > 1) {
        const early = play(policy, prefix);
        early.at(denied.at + r - 1);
        assert.equal(
          early.limiter.limitSync(denied.key, { cost: denied.cost }).allowed,
          false,
          `retry at +${r - 1} ms already passes`,
        );
      }
    }),
    { numRuns: 400 },
  );
});

test('remaining requests of cost 1 all pass back to back, and the next one does not', () => {
  fc.assert(
    fc.property(caseArb, ([policy, steps]) => {
      const { limiter, at } = play(policy, steps);
      const last = steps[steps.length - 1]!;
      at(last.at);
      const peek = limiter.limitSync(last.key, { cost: 0 });
      for (let n = 0; n < peek.remaining; n++)
        assert.equal(limiter.limitSync(last.key).allowed, true, `request ${n + 1} of ${peek.remaining} denied`);
      assert.equal(limiter.limitSync(last.key).allowed, false, 'one more than remaining passed');
    }),
    { numRuns: 300 },
  );
});
