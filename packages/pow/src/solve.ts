/**
 * solveChallenge: the Node solver, for tests and for legitimate automation (a monitoring job that logs in).
 * It runs on the calling thread and yields to the event loop between slices, so it can be cancelled.
 */
import { puzzleHash48, puzzleSeed, show, SluiceError } from 'sluice/kit';
import { formatSolution, parseToken } from './token.js';

export interface SolveOptions {
  /** Aborts the solve; the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Called after each solved sub-puzzle with (solved, total, hashes so far). */
  onProgress?: (solved: number, total: number, hashes: number) => void;
}

const SLICE = 1 << 16;

/** Finds one nonce per sub-puzzle and resolves to the solution string that verifySolution accepts. */
export async function solveChallenge(
  challenge: { token: string } | string,
  options: SolveOptions = {},
): Promise<string> {
  const token = typeof challenge === 'string' ? challenge : challenge?.token;
  const parsed = parseToken(token);
  if (parsed === undefined) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `solveChallenge: 'challenge' must be a challenge from createChallenge() or its token, got ${show(challenge)}`,
    );
  }
  const { puzzles, target } = parsed.fields;
  const seed = puzzleSeed(parsed.mac);
  const nonces = new Uint32Array(puzzles);
  let hashes = 0;
  for (let i = 0; i < puzzles; i++) {
    let nonce = 0;
    for (;;) {
      const end = nonce + SLICE;
      while (nonce < end && puzzleHash48(seed, i, nonce | 0) >= target) nonce++;
      hashes += SLICE - (end - nonce);
      if (nonce < end) break;
      if (nonce >= 2 ** 32)
        throw new SluiceError(
          'ERR_SLUICE_INVALID_OPTION',
          `solveChallenge: sub-puzzle ${i} has no 32-bit solution; lower the difficulty`,
        );
      await new Promise<void>((resolve) => setImmediate(resolve));
      options.signal?.throwIfAborted();
    }
    nonces[i] = nonce;
    hashes++;
    options.onProgress?.(i + 1, puzzles, hashes);
  }
  return formatSolution(token as string, nonces);
}
