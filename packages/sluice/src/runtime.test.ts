// What sluice takes from its host (runtime.ts), and the default clock where timers cannot be unref'd.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  bytesEqual,
  emitWarning,
  hex,
  instanceTag,
  nodeEnv,
  randomBytes,
  unrefTimer,
  utf8,
  utf8Length,
} from './runtime.js';

test("regression: 'ticker.unref is not a function' where setInterval returns a number (Deno, Workers)", async (t) => {
  const real = globalThis.setInterval;
  let started = 0;
  t.mock.method(globalThis, 'setInterval', (...args: Parameters<typeof setInterval>) => {
    started++;
    const timer = real(...args);
    clearInterval(timer);
    return 42 as unknown as ReturnType<typeof setInterval>; // a number, as on Workers
  });
  let now = 1_000;
  t.mock.method(performance, 'now', () => now);
  // A fresh copy of the clock module, so its ticker state starts empty under the stubs.
  const { coarseClock } = (await import(`./clock.js?numbers=${Date.now()}`)) as typeof import('./clock.js');
  const first = coarseClock();
  now += 250;
  // With no tick to bound a cached reading's age, the next call reads the clock again.
  assert.equal(coarseClock() - first, 250);
  for (let i = 0; i < 100; i++) coarseClock();
  assert.equal(started, 1, 'tried the timer once, then reads the clock on every call');
});

test('unrefTimer: unrefs a Node timer, refuses a number where there is no Deno.unrefTimer', () => {
  const timer = setInterval(() => {}, 1000);
  try {
    assert.equal(unrefTimer(timer), true);
    assert.equal(timer.hasRef(), false);
  } finally {
    clearInterval(timer);
  }
  assert.equal(unrefTimer(7), false);
});

test('instanceTag carries the pid and random bits; randomBytes, hex and bytesEqual', () => {
  assert.match(instanceTag(), new RegExp(`^${process.pid.toString(36)}\\.[0-9a-z]+$`));
  assert.notEqual(instanceTag(), instanceTag());
  const big = randomBytes(70_000); // past Web Crypto's 65,536 bytes a call
  assert.equal(big.length, 70_000);
  assert.ok(big.subarray(65_536).some((b) => b !== 0));
  assert.equal(hex(new Uint8Array([0, 15, 16, 255])), '000f10ff');
  assert.equal(bytesEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2])), true);
  assert.equal(bytesEqual(new Uint8Array([1, 2]), new Uint8Array([1, 3])), false);
  assert.equal(bytesEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2, 3])), false);
  assert.equal(nodeEnv(), process.env.NODE_ENV);
});

test("regression: 'A Node.js API is used (process.emitWarning)' on Next.js's edge runtime, whose emitWarning throws: the warning goes to console.warn", (t) => {
  t.mock.method(process, 'emitWarning', () => {
    throw new Error('A Node.js API is used (process.emitWarning) which is not supported in the Edge Runtime.');
  });
  const warn = t.mock.method(console, 'warn', () => {});
  emitWarning('[sluice] a warning', { type: 'SluiceWarning', code: 'WRN_SLUICE_TEST' });
  assert.deepEqual(
    warn.mock.calls.map((c) => c.arguments),
    [['SluiceWarning [WRN_SLUICE_TEST]: [sluice] a warning']],
  );
});

// The regions table counted a message's bytes with Buffer.byteLength, which Workers and browsers lack.
test('utf8Length counts the UTF-8 bytes Buffer.byteLength and TextEncoder count, lone surrogates and pairs included', () => {
  for (const s of ['', 'ascii', 'é', '€', '😀', '\ud83d', '\ude00', 'a\ud83d\ude00b', '\ud83d\ud83d\ude00']) {
    assert.equal(utf8Length(s), Buffer.byteLength(s), JSON.stringify(s));
  }
  fc.assert(
    fc.property(
      fc.string({ unit: 'binary', maxLength: 40 }),
      (s) => utf8Length(s) === Buffer.byteLength(s) && utf8Length(s) === utf8(s).length,
    ),
    { numRuns: 2000 },
  );
});
