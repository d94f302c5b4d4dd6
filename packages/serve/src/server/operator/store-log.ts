/**
 * The service's log of store trouble: a RedisStore's events (health.ts) as log lines. The budget is per
 * outage, not per window of time: each outage's first line is written at once (so an outage right after a
 * blip is never held back by the blip's line), and its end is one line naming the server, how long the
 * whole outage lasted and what failed meanwhile. StoreHealth already makes a flapping Redis one outage
 * until it has answered steadily for 2 s; past MAX_OUTAGES_PER_WINDOW outages in a window, the rest are
 * summed up in one line at the window's end saying how the store was left. What the server says of itself
 * (eviction policy, restart, a refused check) is told once per server and connection.
 */
import type { Logger } from 'pino';
import type { RedisStoreEvent } from 'sluice/kit';

/** The window of the flapping backstop. */
export const STORE_LOG_EVERY_MS = 60_000;
/** Outages logged each with their own lines within one window; those past it are summed up at its end. */
export const MAX_OUTAGES_PER_WINDOW = 10;

/** The same list as SAFE_EVICTION_POLICIES of sluice/redis, which the service loads only with --redis*. */
const SAFE = 'allkeys-lru, allkeys-lfu or noeviction';

export interface StoreLogOptions {
  readonly everyMs?: number;
  readonly maxOutages?: number;
  readonly now?: () => number;
  readonly setTimer?: (f: () => void, ms: number) => void;
}

type Down = Extract<RedisStoreEvent, { type: 'connect-timeout' | 'disconnected' | 'unanswered' }>;
type Up = Extract<RedisStoreEvent, { type: 'recovered' }>;

/** A listener for RedisStore's `onEvent` that logs to `log` with `fields` (which store, the failure mode). */
export function storeEventLog(
  log: Logger,
  fields: Record<string, unknown>,
  options: StoreLogOptions = {},
): (e: RedisStoreEvent) => void {
  const everyMs = options.everyMs ?? STORE_LOG_EVERY_MS;
  const maxOutages = options.maxOutages ?? MAX_OUTAGES_PER_WINDOW;
  const now = options.now ?? Date.now;
  const setTimer = options.setTimer ?? ((f, ms) => setTimeout(f, ms).unref());
  /** The outage under way (logged or not), or undefined while the store answers. */
  let outage: Down | undefined;
  /** Whether the outage under way got its line (its recovery then gets one too). */
  let logged = false;
  /** Outages logged in the window that started at windowStart. */
  let windowStart = -Infinity;
  let inWindow = 0;
  /** Outages (and their recoveries) past the window's budget, for the summary at its end. */
  let unlogged = 0;
  let timerSet = false;

  const down = (e: Down, more: object = {}) => {
    const at = { ...fields, ...(e.server === undefined ? {} : { server: e.server }), ...more };
    switch (e.type) {
      case 'connect-timeout':
        return log.warn(
          { ...at, connectTimeoutMs: e.connectTimeoutMs, ...(e.cause === undefined ? {} : { cause: e.cause }) },
          `the store could not connect to Redis within ${e.connectTimeoutMs} ms; decisions follow the failure mode until it does`,
        );
      case 'disconnected':
        return log.error(
          { ...at, cause: e.cause },
          'the store lost its connection to Redis; decisions follow the failure mode until it is back',
        );
      case 'unanswered':
        return log.error(
          { ...at, cause: e.cause },
          'Redis is not answering the store; decisions follow the failure mode until it does',
        );
    }
  };

  const up = (e: Up, more: object = {}) =>
    log.info(
      {
        ...fields,
        ...(e.server === undefined ? {} : { server: e.server }),
        downMs: e.downMs,
        failedCalls: e.failedCalls,
        ...(e.lastCause === undefined ? {} : { lastCause: e.lastCause }),
        ...more,
      },
      'Redis answers the store again',
    );

  /** The window's end: the outages past its budget in one line, saying whether the store answers now. */
  const summary = () => {
    timerSet = false;
    if (unlogged === 0) return;
    const more = { unloggedOutages: unlogged };
    unlogged = 0;
    if (outage !== undefined) {
      down(outage, more);
      logged = true; // its recovery gets a line
    } else
      log.info(
        { ...fields, ...more },
        'Redis answers the store again; it went down and came back more often than logged',
      );
  };

  const begin = (e: Down) => {
    if (outage !== undefined) return; // the same outage goes on (a connect-timeout then a disconnect, say)
    outage = e;
    const t = now();
    if (t - windowStart >= everyMs) {
      windowStart = t;
      inWindow = 0;
    }
    if (inWindow < maxOutages) {
      inWindow++;
      logged = true;
      down(e);
      return;
    }
    logged = false;
    unlogged++;
    if (!timerSet) {
      timerSet = true;
      setTimer(summary, Math.max(0, windowStart + everyMs - t));
    }
  };

  const end = (e: Up) => {
    outage = undefined;
    if (logged) up(e);
    logged = false;
  };

  return (e) => {
    switch (e.type) {
      case 'connect-timeout':
      case 'disconnected':
      case 'unanswered':
        return begin(e);
      case 'recovered':
        return end(e);
      case 'eviction-policy':
        return log.warn(
          { ...fields, server: e.server, maxmemoryPolicy: e.policy, maxmemory: e.maxmemory },
          `Redis maxmemory-policy is ${e.policy}: it can evict the limiters' keys (every one has a TTL) and so reset their limits; set ${SAFE} (docs/redis.md, "Eviction and persistence")`,
        );
      case 'restarted':
        return log.warn(
          { ...fields, server: e.server, runId: e.runId, previousRunId: e.previousRunId },
          'a different Redis process answers (its run_id changed: a restart or a failover); counts it had not persisted or replicated start again',
        );
      case 'checked':
        return log.debug(
          { ...fields, server: e.server, maxmemoryPolicy: e.policy, runId: e.runId },
          'Redis settings read',
        );
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
