/**
 * What a distributed strategy needs from its store: run one named Lua script on one key with a timeout,
 * count the calls, and answer through the store's failure policy when Redis cannot. RedisStore provides
 * it, so src/distributed/ never imports a Redis client.
 */
import type { Decision, Policy } from '../core/index.js';
import type { Clock } from '../core/types.js';

export interface ScriptRunner {
  /** Runs script `name` (scripts/<name>.lua) with these keys and arguments; rejects on error or timeout. */
  run(name: 'lease' | 'local-sync', keys: string[], args: string[]): Promise<unknown>;
  /** The Redis key for `key` under `suffix`, in the store's `prefix:{id}:...` layout. */
  keyFor(key: string, suffix: string): string;
  /** The failure policy's answer to a decision Redis could not make. */
  fallback(key: string, cost: number): Decision;
  /** 'client' sends the limiter's clock to the scripts (tests); 'server' lets them read Redis TIME. */
  readonly clientClock: boolean;
}

export interface StrategySpec {
  readonly policy: Policy;
  readonly clock: Clock;
  readonly runner: ScriptRunner;
}
