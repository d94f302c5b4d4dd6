// The @nestjs/throttler storage on the memory store: the throttler's storage contract for each algorithm.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { throttlerStorageContract } from '../../test/contracts/compat-stores.js';
import { throttlerE2eSuite } from '../../test/contracts/throttler-e2e.js';
import { MemoryStore } from '../stores/memory.js';
import { SluiceThrottlerStorage } from './nestjs-throttler.js';

throttlerStorageContract('memory', () => new MemoryStore());
for (const algorithm of ['sliding-window', 'fixed-window', 'token-bucket', 'gcra'] as const) {
  throttlerStorageContract(`memory ${algorithm}`, () => new MemoryStore(), algorithm);
}

test('throttler storage: bad options and arguments name the field and the value', async () => {
  assert.throws(
    () => new SluiceThrottlerStorage({ algorithm: 'leaky' as never }),
    /\[SluiceThrottlerStorage\] 'algorithm' must be one of 'sliding-log', .*got "leaky"/,
  );
  const s = new SluiceThrottlerStorage();
  await assert.rejects(
    s.increment('k', 0, 1, 0, 'default'),
    /throttler "default": 'ttl' must be a positive integer of milliseconds, got 0/,
  );
  await assert.rejects(s.increment('k', 1000, 1.5, 0, 'default'), /'limit' must be a non-negative integer, got 1.5/);
});

throttlerE2eSuite('memory', () => new MemoryStore());
