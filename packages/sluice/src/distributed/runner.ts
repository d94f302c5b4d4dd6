/** What a distributed strategy is built from: its one policy, its clock, and its store's ScriptRunner. */
import type { Policy } from '../core/index.js';
import type { Clock } from '../core/types.js';
import type { ScriptRunner } from '../stores/script-runner.js';

export type { ScriptRunner };

export interface StrategySpec {
  readonly policy: Policy;
  readonly clock: Clock;
  readonly runner: ScriptRunner;
}
