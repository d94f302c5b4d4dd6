// The Node solver: progress and cancellation.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createChallenge, solveChallenge } from './index.js';

const secret = 'solver test secret, long enough';

test('progress is reported once per solved sub-puzzle', async () => {
  const seen: number[] = [];
  await solveChallenge(createChallenge({ secret, difficulty: 400, puzzles: 5, scope: 's' }), {
    onProgress: (solved, total) => seen.push(solved * 10 + total),
  });
  assert.deepEqual(seen, [15, 25, 35, 45, 55]);
});

test('an aborted solve rejects with the signal reason', async () => {
  const controller = new AbortController();
  const big = createChallenge({ secret, difficulty: 2 ** 30, puzzles: 16, scope: 's' });
  setTimeout(() => controller.abort(new Error('user left')), 20);
  await assert.rejects(solveChallenge(big, { signal: controller.signal }), /user left/);
});

test('something that is not a challenge is a SluiceError', async () => {
  await assert.rejects(
    solveChallenge('nope'),
    /'challenge' must be a challenge from createChallenge\(\) or its token, got "nope"/,
  );
});
