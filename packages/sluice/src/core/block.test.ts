// blockFor's validation: every bad field is an error naming the field and quoting the value.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compilePolicy, SluiceError } from './index.js';
import type { PolicyOptions } from './index.js';

const base = { name: 'p', algorithm: 'fixed-window', limit: 10, window: '1m' } as const;

function rejects(blockFor: unknown, message: RegExp, algorithm: PolicyOptions['algorithm'] = 'fixed-window'): void {
  assert.throws(
    () => compilePolicy({ ...base, algorithm, blockFor } as PolicyOptions),
    (e: unknown) => e instanceof SluiceError && e.code === 'ERR_SLUICE_INVALID_POLICY' && message.test(e.message),
    String(message),
  );
}

test('blockFor: bad values name the field and the value', () => {
  rejects(0, /policy "p": 'blockFor' must be a positive whole number of milliseconds, got 0/);
  rejects('soon', /policy "p": 'blockFor' must be milliseconds or a duration such as '500ms'.*got "soon"/);
  rejects({}, /'blockFor.duration' is required, got undefined/);
  rejects(
    { duration: '1m', factor: 0.5, max: '1h' },
    /'blockFor.factor' must be a number from 1 \(bans do not grow\) to 1000, got 0.5/,
  );
  rejects({ duration: '1m', factor: '2', max: '1h' }, /'blockFor.factor' must be a number .* got "2"/);
  rejects({ duration: '1m' }, /'blockFor.max' is required when bans grow \('blockFor.factor' 2\)/);
  rejects(
    { duration: '1h', max: '1m' },
    /'blockFor.max' \(60000 ms\) cannot be shorter than 'blockFor.duration' \(3600000 ms\)/,
  );
  rejects(
    { duration: '1m', max: '1h', decay: -1 },
    /'blockFor.decay' must be a positive whole number of milliseconds, got -1/,
  );
  rejects({ duration: '1m', for: '1h' }, /unknown field 'blockFor.for'; known fields are duration, factor, max, decay/);
  rejects('1m', /'blockFor' does not apply to concurrency/, 'concurrency');
});

test('blockFor: defaults are stated, not guessed', () => {
  assert.deepEqual(compilePolicy({ ...base, blockFor: '5m' }).block, {
    durationMs: 300_000,
    factor: 1,
    maxMs: 300_000,
    decayMs: 300_000,
  });
  assert.deepEqual(compilePolicy({ ...base, blockFor: { duration: '1m', max: '1h' } }).block, {
    durationMs: 60_000,
    factor: 2,
    maxMs: 3_600_000,
    decayMs: 3_600_000,
  });
  assert.deepEqual(compilePolicy({ ...base, blockFor: { duration: '1m', factor: 1 } }).block, {
    durationMs: 60_000,
    factor: 1,
    maxMs: 60_000,
    decayMs: 60_000,
  });
  assert.equal(compilePolicy(base).block, undefined);
});
