// A clock that steps back (an NTP correction, or app servers whose clocks disagree when times come from
// the client) must never admit more than a clock that stood still instead. Traces here are on one key, and
// their times may step back by up to three windows.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { Decision, PolicyOptions } from '../../src/index.js';
import { driven, policyOptionsArb } from './trace.js';

interface Step {
  at: number;
  cost: number;
}

// The shaper with a `delay` too, so its delayed band is stepped through.
const policyArb = policyOptionsArb({ shaperDelay: true });

/** Times that wander forwards and backwards (never below 0), from a random epoch offset. */
function steppingTraceArb(windowMs: number, capacity: number, minCost: number, unit: boolean): fc.Arbitrary<Step[]> {
  return fc
    .tuple(
      fc.integer({ min: 3 * windowMs, max: 2_000_000_000 }),
      fc.array(
        fc.record({
          dt: fc.oneof(
            fc.constant(0),
            fc.integer({ min: -windowMs, max: windowMs }),
            fc.integer({ min: -3 * windowMs, max: 3 * windowMs }),
            fc.integer({ min: -3, max: 3 }),
          ),
          cost: unit ? fc.constant(1) : fc.oneof(fc.constant(1), fc.integer({ min: minCost, max: capacity })),
        }),
        { minLength: 1, maxLength: 40 },
      ),
    )
    .map(([start, raw]) => {
      let at = start;
      return raw.map((r) => ({ at: (at = Math.max(0, at + r.dt)), cost: r.cost }));
    });
}

const caseArb = (minCost: number, unit = false) =>
  policyArb.chain((p) =>
    fc.tuple(fc.constant(p), steppingTraceArb(Number(p.window), p.burst ?? p.limit, minCost, unit)),
  );

/** Plays steps on one key; `clockFor` maps a step (and what was admitted so far) to the limiter's time. */
function admitted(policy: PolicyOptions, steps: readonly Step[], clockFor: (s: Step, lastAdmitted: number) => number) {
  const { limiter, at } = driven(policy);
  let lastAdmitted = -Infinity;
  const allowed: boolean[] = [];
  const decisions: Decision[] = [];
  let units = 0;
  for (const s of steps) {
    const now = clockFor(s, lastAdmitted);
    at(now);
    const d = limiter.limitSync('k', { cost: s.cost });
    allowed.push(d.allowed);
    decisions.push({ ...d, leaseId: undefined });
    if (d.allowed) {
      units += s.cost;
      if (s.cost > 0) lastAdmitted = Math.max(lastAdmitted, now);
    }
  }
  return { allowed, decisions, units };
}

const asIs = (s: Step) => s.at;

/** Each time replaced by the running maximum of the times so far: the clock stands still instead. */
function standingStill(steps: readonly Step[]): Step[] {
  let max = -Infinity;
  return steps.map((s) => ({ at: (max = Math.max(max, s.at)), cost: s.cost }));
}

// The rule, on requests of cost 1, where the number admitted is what a limit bounds. With mixed costs the
// count (or the sum of costs) admitted is not monotonic even in how much room there is: a bucket with less
// room turns down a request of cost 1 and can then take one of cost 3 that a fuller one turns down. Mixed
// costs are held to the decision-level property below instead.
test('a clock that steps back admits no more than one that stands still at the latest time seen', () => {
  fc.assert(
    fc.property(caseArb(1, true), ([policy, steps]) => {
      const stepped = admitted(policy, steps, asIs).units;
      const still = admitted(policy, standingStill(steps), asIs).units;
      assert.ok(
        stepped <= still,
        `${JSON.stringify(policy)}: ${stepped} admitted, ${still} with the clock standing still`,
      );
    }),
    { numRuns: 3000 },
  );
});

test('with any costs, a state never has more room at a time stepped back than at the latest time seen', () => {
  fc.assert(
    fc.property(caseArb(0), ([policy, steps]) => {
      const { limiter, at } = driven(policy);
      let latest = -Infinity;
      for (const [i, s] of steps.entries()) {
        latest = Math.max(latest, s.at);
        at(latest);
        const still = limiter.limitSync('k', { cost: 0 }).remaining;
        at(s.at);
        const stepped = limiter.limitSync('k', { cost: 0 }).remaining;
        assert.ok(
          stepped <= still,
          `${JSON.stringify(policy)}, step ${i}: ${stepped} remaining at ${s.at}, ${still} at ${latest}`,
        );
        limiter.limitSync('k', { cost: s.cost });
      }
    }),
    { numRuns: 2000 },
  );
});

test('fixed window, token bucket, sliding log, concurrency: a step back decides as the clock standing still at the latest admitted time', () => {
  // These keep the latest admitted time in their state (the fixed window: its window) and stand still
  // there; a rejection or a cost of 0 changes no state (GUIDE §2), so what it saw of the clock is not kept.
  // Every field is compared, so the sliding log's retryAfterMs and resetAfterMs are held to it too.
  const exact = caseArb(0).filter(([p]) =>
    ['fixed-window', 'sliding-log', 'token-bucket', 'concurrency'].includes(p.algorithm),
  );
  fc.assert(
    fc.property(exact, ([policy, steps]) => {
      const stepped = admitted(policy, steps, asIs);
      const still = admitted(policy, steps, (s, last) => Math.max(s.at, last));
      // The fixed window stands still at its window's start, so only its admissions are the same.
      if (policy.algorithm === 'fixed-window') assert.deepEqual(stepped.allowed, still.allowed, JSON.stringify(policy));
      else assert.deepEqual(stepped.decisions, still.decisions, JSON.stringify(policy));
    }),
    { numRuns: 1500 },
  );
});
