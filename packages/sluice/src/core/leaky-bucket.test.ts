// The shaper against nginx limit_req: rate=10r/s is { limit: 10, window: '1s' }, nginx burst=B is
// burst: B + 1, nginx delay=D is delay: D + 1, nodelay is nodelay.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Limiter } from '../index.js';
import type { PolicyOptions } from '../index.js';

function shaper(extra: Partial<PolicyOptions>) {
  const clock = { now: 5_000 };
  const limiter = new Limiter({
    policy: { algorithm: 'leaky-bucket', mode: 'shaper', limit: 10, window: '1s', ...extra },
    clock: () => clock.now,
  });
  const burst = (n: number) =>
    Array.from({ length: n }, () => {
      const d = limiter.limitSync('client');
      return d.allowed ? d.delayMs : 'rejected';
    });
  return { clock, burst };
}

test('nginx burst=5: six admitted from idle, spaced one emission interval apart; the rest rejected', () => {
  const { burst } = shaper({ burst: 6 });
  assert.deepEqual(burst(8), [0, 100, 200, 300, 400, 500, 'rejected', 'rejected']);
});

test('nginx burst=5 delay=3: the first four pass at once, the rest keep the rate', () => {
  const { burst } = shaper({ burst: 6, delay: 4 });
  assert.deepEqual(burst(7), [0, 0, 0, 0, 100, 200, 'rejected']);
});

test('nginx burst=5 nodelay: everything admitted is forwarded at once but still counted', () => {
  const { clock, burst } = shaper({ burst: 6, nodelay: true });
  assert.deepEqual(burst(7), [0, 0, 0, 0, 0, 0, 'rejected']);
  clock.now += 100; // one slot has drained
  assert.deepEqual(burst(2), [0, 'rejected']);
});

test('forwarded times keep the rate as the queue drains', () => {
  const { clock, burst } = shaper({ burst: 3 });
  const forwarded: number[] = [];
  for (let i = 0; i < 12; i++) {
    const [d] = burst(1);
    if (d !== 'rejected') forwarded.push(clock.now + d!);
    clock.now += 40; // arrivals every 40 ms against a 100 ms emission interval
  }
  const gaps = forwarded.slice(1).map((t, i) => t - forwarded[i]!);
  assert.ok(
    gaps.every((g) => g >= 100),
    `gaps ${gaps}`,
  );
  assert.equal(forwarded.length, 7);
});

test('the meter rejects instead of delaying', () => {
  const { burst } = shaper({ mode: 'meter', burst: 3 });
  assert.deepEqual(burst(4), [0, 0, 0, 'rejected']);
});
