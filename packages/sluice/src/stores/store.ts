/**
 * The store contract: a store keeps per-key state and applies an algorithm's verdicts atomically. It never
 * does rate-limit arithmetic itself; that lives in core/ (and, for Redis, in each algorithm's Lua twin).
 */
import type { Algorithm, Clock, Decision, MaybePromise, Policy } from '../core/index.js';
import type { ScriptRunner } from './script-runner.js';

export interface TableSpec {
  readonly policies: readonly Policy[];
  readonly algorithms: readonly Algorithm[];
  /** Stores that keep their own time (Redis reads TIME on the server) may ignore it. */
  readonly clock: Clock;
}

/** One limiter's view of a store: its policies, decided together per key. */
export interface StoreTable {
  /** True when every method returns a plain value, never a Promise (the memory store). */
  readonly sync: boolean;
  /** Decides every policy for `key`; charges all of them only if all admit and cost > 0. */
  decide(key: string, cost: number, leaseId: string | undefined): MaybePromise<Decision>;
  /**
   * decide() with per-call limits: `algorithms` (one per policy, in order; core createOverride) decide on
   * the key's state in place of the table's own. Tables that cannot leave it out, and the limiter refuses
   * per-call limits on them.
   */
  decideWith?(
    key: string,
    cost: number,
    leaseId: string | undefined,
    algorithms: readonly Algorithm[],
  ): MaybePromise<Decision>;
  /** Charges (delta > 0) or refunds (delta < 0) without a limit check, then peeks. */
  adjust(key: string, delta: number): MaybePromise<Decision>;
  /** Ends a concurrency lease early. */
  release(key: string, leaseId: string): MaybePromise<boolean>;
  /** Forgets `key` entirely. */
  reset(key: string): MaybePromise<void>;
  /**
   * The limiter is done with the table: what it holds in this process is freed (the memory store drops
   * its keys and stops counting them; a strategy returns what it holds). Optional: a store keeping state
   * elsewhere (Redis, with TTLs) has nothing to free.
   */
  close?(): MaybePromise<void>;
}

export interface Store {
  bind(spec: TableSpec): StoreTable;
  /** Stores that can run the 'lease' and 'local-sync' strategies' scripts (RedisStore) provide this. */
  runner?(spec: TableSpec): ScriptRunner;
  /** RedisStore's `regions` option, as given: set, its limiters use the 'regions' strategy. */
  readonly regions?: unknown;
  /** Stores with a connection (RedisStore) resolve once it is up; the others have nothing to wait for. */
  ready?(): Promise<void>;
}
