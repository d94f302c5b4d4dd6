/**
 * The service's log of store trouble: a RedisStore's events (health.ts) as log lines. Outages are
 * rate-limited, at most one line per `everyMs`, and each logged outage gets one line when it ends: a
 * flapping Redis is summed up in the next line (how many more times it went down and came back), and the
 * window's end logs the state it was left in, so the last line about the store always says whether it
 * answers. What the server says of itself
 * (eviction policy, restart, a refused check) is told once per server and connection.
 */
import type { Logger } from 'pino';
import type { RedisStoreEvent } from '../stores/redis/health.js';

/** At most one outage or recovery line per this long, per store. */
export const STORE_LOG_EVERY_MS = 30_000;

/** The same list as SAFE_EVICTION_POLICIES of sluice/redis, which the service loads only with --redis*. */
const SAFE = 'allkeys-lru, allkeys-lfu or noeviction';

export interface StoreLogOptions {
  readonly everyMs?: number;
  readonly now?: () => number;
  readonly setTimer?: (f: () => void, ms: number) => void;
}

type Down = Extract<RedisStoreEvent, { type: 'connect-timeout' | 'disconnected' | 'unanswered' }>;
type Up = Extract<RedisStoreEvent, { type: 'recovered' }>;

/** A listener for RedisStore's `onEvent` that logs to `log` with `fields` (which store, the failure mode). */
export function storeEventLog(log: Logger, fields: Record<string, unknown>, options: StoreLogOptions = {}): (e: RedisStoreEvent) => void {
  const everyMs = options.everyMs ?? STORE_LOG_EVERY_MS;
  const now = options.now ?? Date.now;
  const setTimer = options.setTimer ?? ((f, ms) => setTimeout(f, ms).unref());
  let current: Down | Up | undefined;
  /** Whether the last line logged said the store is down. */
  let loggedDown = false;
  let nextAt = 0;
  /** Outages and recoveries since the last line that were not logged. */
  let unlogged = 0;
  let timerSet = false;

  const write = (e: Down | Up) => {
    const more = unlogged > 0 ? { unloggedTransitions: unlogged } : {};
    unlogged = 0;
    loggedDown = e.type !== 'recovered';
    if (loggedDown) nextAt = now() + everyMs;
    switch (e.type) {
      case 'connect-timeout':
        return log.warn({ ...fields, connectTimeoutMs: e.connectTimeoutMs, ...more }, `the store could not connect to Redis within ${e.connectTimeoutMs} ms; decisions follow the failure mode until it does`);
      case 'disconnected':
        return log.error({ ...fields, cause: e.cause, ...more }, 'the store lost its connection to Redis; decisions follow the failure mode until it is back');
      case 'unanswered':
        return log.error({ ...fields, cause: e.cause, ...more }, 'Redis is not answering the store; decisions follow the failure mode until it does');
      case 'recovered':
        return log.info({ ...fields, downMs: e.downMs, failedCalls: e.failedCalls, ...(e.lastCause === undefined ? {} : { lastCause: e.lastCause }), ...more }, 'Redis answers the store again');
    }
  };

  /** The window's end: log the state the store was left in, if the last line does not say it, or what went unlogged. */
  const trailing = () => {
    timerSet = false;
    if (current === undefined) return;
    const down = current.type !== 'recovered';
    if (down !== loggedDown || unlogged > 0) write(current);
  };

  const transition = (e: Down | Up) => {
    current = e;
    // A recovery ends an outage that was logged: it is logged at once (a logged outage has at most one).
    if (e.type === 'recovered' ? loggedDown : now() >= nextAt) {
      write(e);
      return;
    }
    unlogged++;
    if (!timerSet) {
      timerSet = true;
      setTimer(trailing, Math.max(0, nextAt - now()));
    }
  };

  return (e) => {
    switch (e.type) {
      case 'connect-timeout':
      case 'disconnected':
      case 'unanswered':
      case 'recovered':
        return transition(e);
      case 'eviction-policy':
        return log.warn(
          { ...fields, server: e.server, maxmemoryPolicy: e.policy, maxmemory: e.maxmemory },
          `Redis maxmemory-policy is ${e.policy}: it can evict the limiters' keys (every one has a TTL) and so reset their limits; set ${SAFE} (docs/redis.md, "Eviction and persistence")`,
        );
      case 'restarted':
        return log.warn({ ...fields, server: e.server, runId: e.runId, previousRunId: e.previousRunId }, 'a different Redis process answers (its run_id changed: a restart or a failover); counts it had not persisted or replicated start again');
      case 'checked':
        return log.debug({ ...fields, server: e.server, maxmemoryPolicy: e.policy, runId: e.runId }, 'Redis settings read');
      case 'check-refused':
        return log.warn(
          { ...fields, server: e.server, command: e.command, cause: e.cause },
          e.command.startsWith('CONFIG')
            ? `cannot read Redis's maxmemory-policy (${e.cause}); make sure it is ${SAFE}, or limits can be evicted`
            : `cannot read Redis's INFO server (${e.cause}); a restart of Redis will not be logged`,
        );
    }
  };
}
