/**
 * What Redis last said about each key, for the insurance failure policy: during an outage the best local
 * guess of a key's state is its last answer from Redis, not a fresh bucket (Envoy's local cache keeps
 * over-limit keys denied for the same reason). Bounded: at most `maxKeys` keys, the one answered longest
 * ago forgotten first. About 130 bytes per key with keys of a dozen characters (the key string, the Map
 * entry and one small record; measured with `node --expose-gc`, 100,000 keys), so the default 10,000
 * keys hold about 1.3 MB per limiter.
 */
import type { Decision } from '../../core/index.js';

/** Default `rememberKeys`. */
export const REMEMBER_KEYS = 10_000;

export interface LastAnswer {
  /** What Redis said was left (the tightest policy's remaining, for several policies). */
  readonly remaining: number;
  /** Clock time until which Redis denied the key (its retryAfterMs from the answer); 0 when it allowed. */
  readonly deniedUntil: number;
  /** Clock time at which the key's state on Redis is idle again (its resetAfterMs): after it the answer says nothing. */
  readonly idleAt: number;
  /** Whether insurance has started this key's local state from this answer already. */
  seeded: boolean;
}

export class LastAnswers {
  private readonly answers = new Map<string, LastAnswer>();

  constructor(readonly maxKeys: number) {}

  get size(): number {
    return this.answers.size;
  }

  /** Remembers Redis's answer `d` to a decision on `key`, made at clock time `now`. */
  note(key: string, d: Decision, now: number): void {
    const answers = this.answers;
    // Re-inserted, so the Map's order is the order of the last answers and its first key the oldest.
    if (!answers.delete(key) && answers.size >= this.maxKeys) answers.delete(answers.keys().next().value!);
    answers.set(key, {
      remaining: d.remaining,
      deniedUntil: d.allowed ? 0 : now + d.retryAfterMs,
      idleAt: now + d.resetAfterMs,
      seeded: false,
    });
  }

  get(key: string): LastAnswer | undefined {
    return this.answers.get(key);
  }

  forget(key: string): void {
    this.answers.delete(key);
  }
}
