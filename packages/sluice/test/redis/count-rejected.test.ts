// Issue 49, finding 1: `countRejected` (Envoy's counting) decides alike in the reference model, the memory
// store and the Redis scripts, on random sequences of costs (peeks and costs above the limit included), with
// one policy (the single path) and two (a counting minute and a plain hour: the general path), as a
// property. Redis runs on the limiter's clock (clock: 'client') so that the three share one timeline.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { Limiter } from '../../src/index.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import type { PolicyOptions } from '../../src/core/types.js';
import { connectBothClients, runPrefix } from '../../../testing/src/harness.js';

const { io } = await connectBothClients();
const prefix = runPrefix('count-rejected');

/** Envoy's fixed window: every hit counted (INCRBY), allowed while the count after it is within the limit. */
function envoyModel(limit: number, windowMs: number) {
  const counts = new Map<number, number>();
  return (now: number, cost: number): boolean => {
    const w = Math.floor(now / windowMs);
    const after = (counts.get(w) ?? 0) + cost;
    counts.set(w, after);
    return after <= limit;
  };
}

const steps = fc.array(
  fc.record({ advanceMs: fc.integer({ min: 0, max: 25_000 }), cost: fc.integer({ min: 0, max: 7 }) }),
  { minLength: 1, maxLength: 40 },
);

test('countRejected: the model, the memory store and Redis agree on every decision (one counting policy)', async () => {
  let run = 0;
  await fc.assert(
    fc.asyncProperty(steps, async (seq) => {
      let now = 1_800_000_000_000;
      const clock = () => now;
      const policy: PolicyOptions = {
        name: 'q',
        algorithm: 'fixed-window',
        limit: 5,
        window: '1m',
        countRejected: true,
      };
      const memory = new Limiter({ policy, store: new MemoryStore(), clock });
      const redis = new Limiter({
        policy,
        store: new RedisStore({ client: io, prefix, timeoutMs: 5000, onError: 'closed', clock: 'client' }),
        clock,
      });
      const model = envoyModel(5, 60_000);
      const key = `one-${++run}`;
      for (const { advanceMs, cost } of seq) {
        now += advanceMs;
        const expected = model(now, cost);
        const m = memory.limitSync(key, { cost });
        const r = await redis.limit(key, { cost });
        assert.deepEqual([m.allowed, r.allowed, r.reason], [expected, expected, undefined], `cost ${cost} at ${now}`);
        assert.deepEqual([r.remaining, r.resetAfterMs, r.retryAfterMs], [m.remaining, m.resetAfterMs, m.retryAfterMs]);
      }
    }),
    { numRuns: 40 },
  );
});

test('countRejected with two policies: a refused request counts in the counting one only, alike in memory and Redis', async () => {
  let run = 0;
  await fc.assert(
    fc.asyncProperty(steps, async (seq) => {
      let now = 1_800_000_000_000;
      const clock = () => now;
      const policies: PolicyOptions[] = [
        { name: 'minute', algorithm: 'fixed-window', limit: 4, window: '1m', countRejected: true },
        { name: 'hour', algorithm: 'fixed-window', limit: 12, window: '1h' },
      ];
      const memory = new Limiter({ policies, store: new MemoryStore(), clock });
      const redis = new Limiter({
        policies,
        store: new RedisStore({ client: io, prefix, timeoutMs: 5000, onError: 'closed', clock: 'client' }),
        clock,
      });
      const key = `two-${++run}`;
      for (const { advanceMs, cost } of seq) {
        now += advanceMs;
        const c = Math.min(cost, 12);
        const m = memory.limitSync(key, { cost: c });
        const r = await redis.limit(key, { cost: c });
        assert.deepEqual(
          [r.allowed, r.remaining, r.resetAfterMs, r.retryAfterMs, r.policy],
          [m.allowed, m.remaining, m.resetAfterMs, m.retryAfterMs, m.policy],
          `cost ${c} at ${now}`,
        );
      }
    }),
    { numRuns: 40 },
  );
});
