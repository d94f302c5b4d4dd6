// Regressions of issue 49 finding 7 (rate-limiter-flexible's side): what a user moving from
// rate-limiter-flexible meets with `points: 0`, numeric-string costs and a cost above the limit, beside
// rate-limiter-flexible's own RateLimiterMemory, so the differences docs/migrating.md lists are shown.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { Limiter } from '../../src/index.js';

const isSluice = (code: string, message: RegExp) => (e: unknown) =>
  (e as { code?: string }).code === code && message.test((e as Error).message);

test('points 0: rate-limiter-flexible refuses every consume; sluice refuses limit 0 at construction, naming the field, the value and what to do', async () => {
  const flexible = new RateLimiterMemory({ points: 0, duration: 60 });
  await assert.rejects(flexible.consume('k'), (r: unknown) => r instanceof RateLimiterRes);
  assert.throws(
    () => new Limiter({ policy: { name: 'login', algorithm: 'fixed-window', limit: 0, window: '1m' } }),
    isSluice(
      'ERR_SLUICE_INVALID_POLICY',
      /policy "login": 'limit' must be a positive integer, got 0 \(a limit of 0 would refuse every request, which needs no limiter: refuse it yourself, or list the key in the middleware's 'deny'\)/,
    ),
  );
});

test('a numeric-string cost or limit: the error names the field and the value, and says to pass the number', async () => {
  const limiter = new Limiter({ policy: { name: 'login', algorithm: 'fixed-window', limit: 5, window: '1m' } });
  await assert.rejects(
    limiter.limit('k', { cost: '2' as never }),
    isSluice(
      'ERR_SLUICE_INVALID_COST',
      /'cost' must be a non-negative integer, got "2" \(a string: pass the number, Number\("2"\)\)/,
    ),
  );
  await assert.rejects(
    limiter.penalty('k', '3' as never),
    isSluice(
      'ERR_SLUICE_INVALID_COST',
      /penalty 'cost' must be a non-negative integer, got "3" \(a string: pass the number/,
    ),
  );
  assert.throws(
    () => new Limiter({ policy: { name: 'login', algorithm: 'fixed-window', limit: '5' as never, window: '1m' } }),
    isSluice(
      'ERR_SLUICE_INVALID_POLICY',
      /'limit' must be a positive integer, got "5" \(a string: pass the number, Number\("5"\)\)/,
    ),
  );
  // Not a number at all: no hint to convert it.
  await assert.rejects(limiter.limit('k', { cost: 'two' as never }), (e: Error) => /got "two"$/.test(e.message));
});

test("a cost above the limit: rate-limiter-flexible rejects consume() (and bans with blockDuration); sluice's limit() rejects with ERR_SLUICE_COST_EXCEEDS_CAPACITY and changes nothing", async () => {
  const flexible = new RateLimiterMemory({ points: 5, duration: 60, blockDuration: 600 });
  await assert.rejects(
    flexible.consume('k', 6),
    (r: unknown) => r instanceof RateLimiterRes && r.msBeforeNext > 60_000,
  );
  await assert.rejects(
    flexible.consume('k', 1),
    (r: unknown) => r instanceof RateLimiterRes,
    'rate-limiter-flexible banned the key',
  );

  const sluice = new Limiter({
    policy: { name: 'p', algorithm: 'fixed-window', limit: 5, window: '1m', blockFor: '10m' },
  });
  await assert.rejects(
    sluice.limit('k', { cost: 6 }),
    isSluice('ERR_SLUICE_COST_EXCEEDS_CAPACITY', /'cost' 6 can never pass policy "p", whose capacity is 5/),
  );
  assert.equal((await sluice.limit('k')).allowed, true, 'sluice neither counted nor banned it');
});
