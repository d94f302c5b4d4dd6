/**
 * What a distributed strategy (src/distributed/) needs from its store: run one named Lua script on one
 * key with a timeout, count the calls, and answer through the store's failure policy when Redis cannot.
 * RedisStore provides it. The contract lives with the stores, so stores never import distributed/ and
 * distributed/ never imports a Redis client.
 */
import type { Decision } from '../core/index.js';

export type StrategyScript = 'lease' | 'local-sync' | 'regions-decide' | 'regions-merge' | 'regions-heard';

/** A peer region's Redis, as the regions strategy names it (src/distributed/regions/). */
export interface PeerRegion {
  readonly name: string;
  readonly client: unknown;
  readonly timeoutMs: number;
}

export interface ScriptRunner {
  /** Runs script `name` (scripts/<name>.lua) with these keys and arguments; rejects on error or timeout. */
  run(name: StrategyScript, keys: string[], args: string[]): Promise<unknown>;
  /**
   * With RedisStore's `regions`: runs a script on a peer region's Redis, through a connection of its own
   * (its own timeout, and its outages told once each, as the store's are). Absent on other stores.
   */
  runOn?(peer: PeerRegion, name: StrategyScript, keys: string[], args: string[]): Promise<unknown>;
  /** Whether the store's client, or (with `regions`) a peer's, is a Redis Cluster. */
  isCluster?(peer?: PeerRegion): boolean;
  /**
   * The cluster hash slot every key of `key` (under any suffix) is in: its calls to a Cluster go one
   * slot each. Absent on stores without slots.
   */
  slotOf?(key: string): number;
  /** The Redis key for `key` under `suffix`, in the store's `prefix:{id}:...` layout. */
  keyFor(key: string, suffix: string): string;
  /** The failure policy's answer to a decision Redis could not make. */
  fallback(key: string, cost: number): Decision;
  /** 'client' sends the limiter's clock to the scripts (tests); 'server' lets them read Redis TIME. */
  readonly clientClock: boolean;
}
