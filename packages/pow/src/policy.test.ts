// The difficulty policy: base, risk growth, load levels, cap, and option checks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_DIFFICULTY_POLICY as P, difficultyFor } from './policy.js';

test('a first challenge at no load asks for the base; each risk step and load level multiplies it', () => {
  assert.equal(difficultyFor(), P.baseDifficulty);
  assert.equal(difficultyFor({ risk: 1 }), P.baseDifficulty * 2);
  assert.equal(difficultyFor({ risk: 2 }), P.baseDifficulty * 4);
  assert.equal(difficultyFor({ load: 0.49 }), P.baseDifficulty);
  assert.equal(difficultyFor({ load: 0.5 }), P.baseDifficulty * 2);
  assert.equal(difficultyFor({ load: 0.9 }), P.baseDifficulty * 4);
  assert.equal(difficultyFor({ risk: 1, load: 0.96 }), P.baseDifficulty * 16);
});

test('difficulty never exceeds the cap, even for absurd risk', () => {
  assert.equal(difficultyFor({ risk: 10 }), P.maxDifficulty);
  assert.equal(difficultyFor({ risk: 100_000, load: 5 }), P.maxDifficulty);
});

test('bad inputs and policies are SluiceErrors', () => {
  assert.throws(() => difficultyFor({ risk: -1 }), /'risk' must be a non-negative integer, got -1/);
  assert.throws(
    () => difficultyFor({ load: Number.NaN }),
    /'load' must be a non-negative number or Infinity \(a fraction of capacity\), got NaN/,
  );
  assert.throws(() => difficultyFor({}, { ...P, maxDifficulty: 1 }), /'maxDifficulty' must be .* got 1/);
  assert.throws(
    () =>
      difficultyFor(
        {},
        {
          ...P,
          loadLevels: [
            { load: 0.5, factor: 2 },
            { load: 0.4, factor: 3 },
          ],
        },
      ),
    /'loadLevels\[1\].load'/,
  );
});
