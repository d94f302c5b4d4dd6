// sluice/express-rate-limit on the memory store: express-rate-limit's store contract, and the store's own checks.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Options } from 'express-rate-limit';
import { expressRateLimitStoreContract, rateLimitRedisStoreContract } from '../../test/contracts/compat-stores.js';
import { MemoryStore } from '../stores/memory.js';
import { SluiceStore } from './express-rate-limit.js';

expressRateLimitStoreContract('memory', () => new MemoryStore());

test('express-rate-limit store: bad options name the field and the value', () => {
  assert.throws(
    () => new SluiceStore({ algorithm: 'gcra' as never }),
    /\[SluiceStore\] 'algorithm' must be 'fixed-window' or 'sliding-window' .*got "gcra"/,
  );
  assert.throws(
    () => new SluiceStore({ buckets: 4 }),
    /'buckets' is a positive integer for algorithm 'sliding-window' only, got 4/,
  );
  assert.throws(() => new SluiceStore({ windowMs: 1 } as never), /unknown option 'windowMs'/);
  const store = new SluiceStore();
  assert.throws(
    () => store.init({ windowMs: 0 } as Options),
    /'windowMs' must be a positive integer of milliseconds, got 0/,
  );
  // express-rate-limit only logs an init error, so every call after it says what went wrong.
  return assert.rejects(store.increment('k'), /'windowMs' must be a positive integer/);
});

test('express-rate-limit store: a limit at or above what it counts per window is refused at init', () => {
  const store = new SluiceStore({ algorithm: 'sliding-window' });
  assert.throws(
    () => store.init({ windowMs: 86_400_000, limit: 1e9 } as Options),
    /'limit' 1000000000 is at or above the most this store counts per window \(104249991\)/,
  );
  new SluiceStore().init({ windowMs: 86_400_000, limit: 1e9 } as Options);
});

test('express-rate-limit store: used before init, it says to pass it to rateLimit()', async () => {
  await assert.rejects(
    new SluiceStore().increment('k'),
    /init\(\) was not called: pass the store to express-rate-limit's rateLimit\(\{ store \}\)/,
  );
});

test("express-rate-limit store: localKeys is true on a MemoryStore (counts are this process's only)", () => {
  assert.equal(new SluiceStore().localKeys, true);
});

// Regression, issue 49 finding 7: rate-limit-redis's resetExpiryOnChange threw "unknown option" even at its
// default (false), which a migrating user's options carry over as they are.
test("express-rate-limit store: rate-limit-redis's resetExpiryOnChange: false is accepted, true is refused with the way forward", () => {
  new SluiceStore({ resetExpiryOnChange: false }).init({ windowMs: 60_000, limit: 5 } as Options);
  assert.throws(
    () => new SluiceStore({ resetExpiryOnChange: true } as never),
    /\[SluiceStore\] rate-limit-redis's 'resetExpiryOnChange' is not supported, got true: windows here are epoch-aligned .* Remove it \(false is its default\), or .*algorithm: 'sliding-window'.*'blockFor'/,
  );
});

rateLimitRedisStoreContract('memory', () => new MemoryStore());
