// Each named check passes its edge values through, typed, and refuses the rest with one wording:
// `<field> must be <requirement>, got <value>`, a SluiceError with the caller's code.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { SluiceError, show } from './errors.js';
import { check } from './option-checks.js';

/** Asserts that `fn` throws a SluiceError with `code` whose message is exactly `[sluice] <message>`. */
function refuses(fn: () => unknown, message: string, code = 'ERR_SLUICE_INVALID_OPTION'): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof SluiceError, `not a SluiceError: ${String(e)}`);
    assert.equal(e.code, code);
    assert.equal(e.message, `[sluice] ${message}`);
    return true;
  });
}

const NOT_NUMBERS: unknown[] = ['1', 1n, null, undefined, true, {}, [1], () => 1];

test('positiveInteger passes 1 and MAX_SAFE_INTEGER, refuses 0, fractions, unsafe and non-numbers', () => {
  assert.equal(check.positiveInteger(1, "X 'n'"), 1);
  assert.equal(check.positiveInteger(Number.MAX_SAFE_INTEGER, "X 'n'"), Number.MAX_SAFE_INTEGER);
  for (const bad of [0, -1, 1.5, Number.MAX_SAFE_INTEGER + 1, NaN, Infinity, -0, ...NOT_NUMBERS]) {
    refuses(
      () => check.positiveInteger(bad, "RedisStore 'maxInFlight'"),
      `RedisStore 'maxInFlight' must be a positive integer, got ${show(bad)}`,
    );
  }
});

test('nonNegativeInteger passes 0, refuses -1, fractions and non-numbers', () => {
  assert.equal(check.nonNegativeInteger(0, "'cost'"), 0);
  assert.equal(check.nonNegativeInteger(-0, "'cost'"), -0);
  for (const bad of [-1, 0.5, NaN, Infinity, ...NOT_NUMBERS]) {
    refuses(() => check.nonNegativeInteger(bad, "'cost'"), `'cost' must be a non-negative integer, got ${show(bad)}`);
  }
});

test('integerInRange passes both ends, refuses one past either and fractions', () => {
  assert.equal(check.integerInRange(400, 400, 599, "'status'"), 400);
  assert.equal(check.integerInRange(599, 400, 599, "'status'"), 599);
  for (const bad of [399, 600, 450.5, NaN, '429']) {
    refuses(
      () => check.integerInRange(bad, 400, 599, "'status'"),
      `'status' must be an integer from 400 to 599, got ${show(bad)}`,
    );
  }
});

test('positiveNumber passes fractions above 0, refuses 0, NaN and Infinity unless orInfinity', () => {
  assert.equal(check.positiveNumber(Number.MIN_VALUE, "'t'"), Number.MIN_VALUE);
  assert.equal(check.positiveNumber(0.5, "'t'"), 0.5);
  for (const bad of [0, -0.1, NaN, Infinity, -Infinity, ...NOT_NUMBERS]) {
    refuses(
      () => check.positiveNumber(bad, "Gate 'releasePollMs'", { unit: 'milliseconds' }),
      `Gate 'releasePollMs' must be a positive number of milliseconds, got ${show(bad)}`,
    );
  }
  assert.equal(check.positiveNumber(Infinity, "'t'", { orInfinity: true }), Infinity);
  refuses(
    () => check.positiveNumber(NaN, "Gate 'timeoutMs'", { unit: 'milliseconds', orInfinity: true }),
    "Gate 'timeoutMs' must be a positive number of milliseconds or Infinity, got NaN",
  );
});

test('nonNegativeNumber passes 0 and fractions, refuses negatives, NaN and Infinity unless orInfinity', () => {
  assert.equal(check.nonNegativeNumber(0, "'d'"), 0);
  assert.equal(check.nonNegativeNumber(0.25, "'d'"), 0.25);
  for (const bad of [-Number.MIN_VALUE, -1, NaN, Infinity, ...NOT_NUMBERS]) {
    refuses(() => check.nonNegativeNumber(bad, "'d'"), `'d' must be a non-negative number, got ${show(bad)}`);
  }
  assert.equal(check.nonNegativeNumber(Infinity, "'d'", { orInfinity: true }), Infinity);
  refuses(
    () => check.nonNegativeNumber(-Infinity, "'d'", { orInfinity: true }),
    "'d' must be a non-negative number or Infinity, got -Infinity",
  );
});

test('boolean passes true and false only', () => {
  assert.equal(check.boolean(true, "'dryRun'"), true);
  assert.equal(check.boolean(false, "'dryRun'"), false);
  for (const bad of [0, 1, 'true', null, undefined]) {
    refuses(() => check.boolean(bad, "'dryRun'"), `'dryRun' must be true or false, got ${show(bad)}`);
  }
});

test('function passes functions and classes, refuses the rest with its note', () => {
  const f = () => 0;
  assert.equal(check.function(f, "'clock'"), f);
  assert.equal(check.function(class {}, "'clock'") !== undefined, true);
  for (const bad of [0, 'Date.now', {}, null]) {
    refuses(
      () => check.function(bad, "Guard 'clock'", { note: 'returning milliseconds' }),
      `Guard 'clock' must be a function returning milliseconds, got ${show(bad)}`,
    );
  }
});

test('oneOf names two choices with "or" and more with "one of"', () => {
  assert.equal(check.oneOf('deny', ['allow', 'deny'], "'onFull'"), 'deny');
  refuses(
    () => check.oneOf('drop', ['allow', 'deny'], "MemoryStore 'onFull'"),
    `MemoryStore 'onFull' must be 'allow' or 'deny', got "drop"`,
  );
  refuses(() => check.oneOf(undefined, ['a', 'b', 'c'], "'x'"), "'x' must be one of 'a', 'b', 'c', got undefined");
  refuses(() => check.oneOf('1', [1, 2, 3], "'n'"), `'n' must be one of 1, 2, 3, got "1"`);
});

test('duration is parseDuration: strings and whole milliseconds, refused as a policy field', () => {
  assert.equal(check.duration('1.5s', "'window'"), 1500);
  assert.equal(check.duration(250, "'window'"), 250);
  refuses(
    () => check.duration(0, "'window'"),
    "'window' must be a positive whole number of milliseconds, got 0",
    'ERR_SLUICE_INVALID_POLICY',
  );
});

test('code, unit, note and hint shape the message; the hint is computed only on refusal', () => {
  let hinted = 0;
  const hint = (v: unknown) => {
    hinted++;
    return ` (pass the number ${Number(v)}, not a string)`;
  };
  assert.equal(check.positiveInteger(5, "'limit'", { hint }), 5);
  assert.equal(hinted, 0);
  refuses(
    () => check.positiveInteger('5', `policy "p": 'limit'`, { code: 'ERR_SLUICE_INVALID_POLICY', hint }),
    `policy "p": 'limit' must be a positive integer, got "5" (pass the number 5, not a string)`,
    'ERR_SLUICE_INVALID_POLICY',
  );
  refuses(
    () => check.nonNegativeInteger(-1, "Gate 'marginMs'", { unit: 'milliseconds', note: '(0 for no margin)' }),
    "Gate 'marginMs' must be a non-negative integer of milliseconds (0 for no margin), got -1",
  );
  refuses(() => check.refuse("'lease.ttlMs'", 'at most 1000', 2000), "'lease.ttlMs' must be at most 1000, got 2000");
});

test('property: positiveInteger and nonNegativeInteger agree with their definitions on any value', () => {
  fc.assert(
    fc.property(fc.oneof(fc.integer(), fc.double(), fc.bigInt(), fc.string(), fc.constant(null)), (v) => {
      const positive = typeof v === 'number' && Number.isSafeInteger(v) && v > 0;
      const nonNegative = typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
      const passes = (fn: () => unknown) => {
        try {
          return fn() === v;
        } catch (e) {
          assert.ok(e instanceof SluiceError);
          assert.ok(e.message.includes("'v' must be") && e.message.endsWith(`got ${show(v)}`));
          return false;
        }
      };
      assert.equal(
        passes(() => check.positiveInteger(v, "'v'")),
        positive,
      );
      assert.equal(
        passes(() => check.nonNegativeInteger(v, "'v'")),
        nonNegative,
      );
    }),
  );
});

test('the checks are frozen: a product cannot swap one out for everyone', () => {
  assert.ok(Object.isFrozen(check));
});
