/**
 * The Guard of `@sluice/guard` on Node, Bun and Deno: given a RedisStore and no state, it keeps the guard's
 * state on the store's client (RedisGuardState). It finds that state by importing it, not by the state
 * registering itself when loaded: a bundler that believes package.json's `sideEffects: false` keeps what
 * is imported and used, and drops a module whose only use is what it does as it loads.
 */
import { Guard as PortableGuard } from './guard.js';
import { redisGuardStateOf } from './redis/state.js';
import type { GuardState } from './state.js';

export class Guard extends PortableGuard {
  protected static override stateFor(store: unknown): GuardState | undefined {
    return redisGuardStateOf(store) ?? super.stateFor(store);
  }
}
