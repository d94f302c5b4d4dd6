// Calendar windows on Redis time: the app sends the bounds of its period and of both neighbours, and the
// script counts in the one that holds Redis's TIME, so an app clock a little off (here, by most of a day)
// still counts today's window and reports today's reset.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Limiter } from '../../src/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { connectBothClients, runPrefix } from '../../../testing/src/harness.js';

const { io } = await connectBothClients();
const prefix = runPrefix('calendar-time');

/** Redis's clock in ms. */
async function redisNow(): Promise<number> {
  const [s, us] = (await io.time()) as unknown as [string | number, string | number];
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

for (const [what, skewMs] of [
  ['behind', -20 * 3_600_000],
  ['ahead', 20 * 3_600_000],
  ['in step', 0],
] as const) {
  test(`calendar day on Redis time, the app clock ${what}: the window is Redis's today`, async () => {
    const store = new RedisStore({ client: io, prefix, timeoutMs: 2000, onError: 'closed' });
    const l = new Limiter({
      policy: { name: 'daily', algorithm: 'fixed-window', limit: 2, window: 'day', timeZone: 'UTC' },
      store,
      clock: () => Date.now() + skewMs,
    });
    const key = `skew:${what}:${Math.random()}`;
    const t = await redisNow();
    const d = await l.limit(key);
    const midnight = Math.floor(t / 86_400_000) * 86_400_000 + 86_400_000;
    assert.equal(d.reason, undefined);
    assert.ok(
      Math.abs(t + d.resetAfterMs - midnight) < 2000,
      `resets at Redis's next UTC midnight, off by ${t + d.resetAfterMs - midnight} ms`,
    );
  });
}

test('calendar day on Redis time: an app clock off by more than a period is refused, not guessed (failure policy)', async () => {
  const store = new RedisStore({ client: io, prefix, timeoutMs: 2000, onError: 'closed' });
  const l = new Limiter({
    policy: { name: 'daily', algorithm: 'fixed-window', limit: 2, window: 'day' },
    store,
    clock: () => Date.now() - 3 * 86_400_000,
  });
  const d = await l.limit(`skew-far:${Math.random()}`);
  assert.deepEqual([d.allowed, d.reason], [false, 'store-error']);
});
