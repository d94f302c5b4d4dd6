/**
 * What the parts that keep state on one Redis client (RedisStore, the guard's Redis state, RedisSpentStore)
 * tell their owner about it: the client not connected by its deadline, a lost connection or calls that go
 * unanswered, the recovery, and, each time the client (re)connects, what the server says of itself: an
 * eviction policy that can drop limiter keys (`CONFIG GET maxmemory*`), and a different server process
 * than before (`INFO server`'s run_id: a restart or a failover, after which the keys it had not persisted
 * or replicated are gone).
 *
 * One StoreHealth per client, whatever number of parts use it: an outage of the client is one outage.
 * Only transitions are reported, and an outage ends only once Redis has answered for RECOVERY_SETTLE_MS
 * with no failure, so a Redis that answers some calls and refuses others (at maxmemory under noeviction,
 * reads pass and writes fail with OOM) is one outage and one recovery, not one pair per call.
 *
 * Each part passes `onEvent` (every event, for its owner to log) and `logger` (lines, or false). Where no
 * part on the client passes either, the outage and the recovery are each one line on stderr: a wrong Redis
 * URL is never silent.
 */
import { SluiceError, show } from '../../core/index.js';
import { check } from '../../core/option-checks.js';
import type { RedisAdapter, ServerCommand } from './adapter.js';
// Scheduling captured at import: a test's fake timers (Jest, Vitest) must not hold the store's reports.
import { realClearTimeout, realSetTimeout } from '../../runtime.js';

/** Eviction policies that keep every limiter key (all of which carry a TTL) until its state is idle. */
export const SAFE_EVICTION_POLICIES = ['noeviction', 'allkeys-lru', 'allkeys-lfu'] as const;

/**
 * `volatile-*` evicts only keys with a TTL, which every limiter key has: on a Redis shared with data
 * without TTLs the limits are exactly what goes first. `allkeys-random` drops a hot limiter key as soon as
 * a cold one.
 */
export function evictsLimits(policy: string): boolean {
  return policy.startsWith('volatile-') || policy === 'allkeys-random';
}

export type RedisStoreEvent =
  /** No connection within `connectTimeoutMs` of the first part's creation: decisions meanwhile are the failure policy's. */
  | {
      readonly type: 'connect-timeout';
      readonly connectTimeoutMs: number;
      readonly server?: string;
      readonly cause?: string | undefined;
    }
  /** The connection was lost (`cause`: the client's last error, if it gave one). */
  | { readonly type: 'disconnected'; readonly cause: string; readonly server?: string }
  /** A call failed while the client was connected: no answer within timeoutMs (a frozen server), or an error reply (OOM, say). */
  | { readonly type: 'unanswered'; readonly cause: string; readonly server?: string }
  /**
   * Answers again, steadily (RECOVERY_SETTLE_MS without a failure), after one of the three above: `downMs`
   * from the outage's start until Redis answered for good, `failedCalls` failed meanwhile, the last with `lastCause`.
   */
  | {
      readonly type: 'recovered';
      readonly downMs: number;
      readonly failedCalls: number;
      readonly lastCause: string | undefined;
      readonly server?: string;
    }
  /** The server's maxmemory-policy can evict limiter keys (see evictsLimits); `maxmemory` 0 means no limit is set yet. */
  | { readonly type: 'eviction-policy'; readonly server: string; readonly policy: string; readonly maxmemory: number }
  /** A different Redis process answers than before (a restart or a failover): its run_id changed. */
  | { readonly type: 'restarted'; readonly server: string; readonly runId: string; readonly previousRunId: string }
  /** What a server said of itself when the client (re)connected: undefined where it would not say. */
  | {
      readonly type: 'checked';
      readonly server: string;
      readonly policy: string | undefined;
      readonly runId: string | undefined;
    }
  /** The server refused a check (an ACL without CONFIG or INFO, a renamed command): what it would have told is unknown. */
  | { readonly type: 'check-refused'; readonly server: string; readonly command: string; readonly cause: string };

export type RedisStoreListener = (event: RedisStoreEvent) => void;

/** Where lines go: console, a pino or winston logger, anything with these three. */
export interface StoreLogger {
  error(message: string): void;
  warn(message: string): void;
  info(message: string): void;
}

/** What one part on the client wants told, and what it does while Redis cannot answer (for the outage line). */
export interface HealthReport {
  /** Every event, as it comes. */
  readonly onEvent?: RedisStoreListener | undefined;
  /** Lines for the events an operator must read; false for none; undefined for the default (see the file's comment). */
  readonly logger?: StoreLogger | false | undefined;
  /** What the part does meanwhile, for the outage line: "RedisStore allows every request (onError 'open')". */
  readonly meanwhile: string;
}

/**
 * The `onEvent` and `logger` options of a part, checked: `<owner> 'onEvent' must be a function`, and a
 * logger must have error, warn and info.
 */
export function checkReporting(
  owner: string,
  options: { onEvent?: unknown; logger?: unknown },
): { onEvent: RedisStoreListener | undefined; logger: StoreLogger | false | undefined } {
  const { onEvent, logger } = options;
  if (onEvent !== undefined) check.function(onEvent, `${owner} 'onEvent'`);
  if (logger !== undefined && logger !== false) {
    const l = logger as Partial<StoreLogger> | null;
    if (
      typeof l !== 'object' ||
      l === null ||
      typeof l.error !== 'function' ||
      typeof l.warn !== 'function' ||
      typeof l.info !== 'function'
    ) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `${owner} 'logger' must be false or have error(), warn() and info() (console, a pino or winston logger), got ${show(logger)}`,
      );
    }
  }
  return { onEvent: onEvent as RedisStoreListener | undefined, logger: logger as StoreLogger | false | undefined };
}

/** How long Redis must answer with no failure before an outage is over. */
export const RECOVERY_SETTLE_MS = 2000;

/** The default logger: one line on stderr per event it is given. Captured at import (fake timers and console spies alike see the real one). */
const stderr: StoreLogger = {
  error: (m) => console.error(m),
  warn: (m) => console.warn(m),
  info: (m) => console.warn(m),
};

/** An error's text for a line or an event, without the '[sluice] ' every SluiceError starts with. */
const message = (err: unknown): string => String((err as Error)?.message ?? err).replace(/^\[sluice\] /, '');

/** Replies that say the server will not run a check for this user (ACL, renamed or missing command), rather than a dropped connection. */
const REFUSED = /NOPERM|unknown command|^ERR/i;

/** Longest wait for a check's reply: a frozen server must not hold the next connection's checks. */
const CHECK_TIMEOUT_MS = 2000;

function within<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = realSetTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    (timer as { unref?: () => void }).unref?.();
  });
  return Promise.race([p, timeout]).finally(() => realClearTimeout(timer));
}

/** Replies of `CONFIG GET maxmemory*`: a flat array of names and values (RESP2), or a map (RESP3, node-redis typed). */
function configPairs(reply: unknown): Map<string, string> {
  const out = new Map<string, string>();
  if (Array.isArray(reply))
    for (let i = 0; i + 1 < reply.length; i += 2) out.set(String(reply[i]), String(reply[i + 1]));
  else if (reply instanceof Map) for (const [k, v] of reply) out.set(String(k), String(v));
  else if (typeof reply === 'object' && reply !== null)
    for (const [k, v] of Object.entries(reply)) out.set(k, String(v));
  return out;
}

export interface StoreHealthOptions {
  readonly now?: () => number;
  /** Schedules `f` in `ms` (unref'd); tests pass their own. */
  readonly setTimer?: (f: () => void, ms: number) => void;
  readonly settleMs?: number;
}

const unrefTimer = (f: () => void, ms: number): void => {
  (realSetTimeout(f, ms) as { unref?: () => void }).unref?.();
};

export class StoreHealth {
  private state: 'starting' | 'up' | 'down' | 'recovering' = 'starting';
  private downSince = 0;
  /** When Redis last started answering again after a failure (while recovering). */
  private answeringSince = 0;
  private failedCalls = 0;
  private lastCause: string | undefined;
  /** The client's last error and when, for the cause of a disconnect that follows it. */
  private lastError: { text: string; at: number } | undefined;
  /** run_id by server name, from the last check. */
  private readonly runIds = new Map<string, string>();
  /** `server policy` pairs already reported, so a reconnect does not report the same setting again. */
  private readonly reported = new Set<string>();
  private checking = false;
  private settling = false;
  private readonly reports: HealthReport[] = [];
  private readonly now: () => number;
  private readonly setTimer: (f: () => void, ms: number) => void;
  private readonly settleMs: number;
  /** Whether a call must tell the state how it went (a field read on the hot path instead of a call). */
  troubled = true;

  constructor(
    private readonly adapter: RedisAdapter,
    connectTimeoutMs: number,
    options: StoreHealthOptions = {},
  ) {
    this.now = options.now ?? (() => performance.now());
    this.setTimer = options.setTimer ?? unrefTimer;
    this.settleMs = options.settleMs ?? RECOVERY_SETTLE_MS;
    adapter.onError((err) => (this.lastError = { text: message(err), at: this.now() }));
    adapter.onClose(() => this.closed());
    adapter.onReady(() => this.readyAgain());
    if (adapter.ready()) this.readyAgain();
    else {
      this.setTimer(() => {
        if (this.state !== 'starting') return;
        this.down();
        this.emit({ type: 'connect-timeout', connectTimeoutMs, server: adapter.name, cause: this.lastError?.text });
      }, connectTimeoutMs);
    }
  }

  /** A part that uses this client, with what it wants told. */
  join(report: HealthReport): void {
    this.reports.push(report);
  }

  /** Whether Redis is answering (false from a failure until the outage is over). */
  get answering(): boolean {
    return this.state === 'up';
  }

  /** The outage under way, for an error message: its cause and since when; undefined when there is none. */
  outage(): { readonly cause: string; readonly downMs: number } | undefined {
    if (this.state === 'up' || this.state === 'starting') return undefined;
    const client = this.lastError?.text;
    const last = this.lastCause;
    let cause = last ?? client ?? 'no connection yet';
    if (last !== undefined && client !== undefined && !last.includes(client))
      cause = `${last}; the client's last error: ${client}`;
    return { cause, downMs: Math.round(this.now() - this.downSince) };
  }

  /** A call failed (a timeout, a refusal, an error reply). */
  failed(err: unknown): void {
    const cause = message(err);
    if (this.state === 'up') {
      this.down();
      this.emit({ type: 'unanswered', cause, server: this.adapter.name });
    } else if (this.state === 'recovering') this.state = 'down'; // the same outage goes on
    this.failedCalls++;
    this.lastCause = cause;
  }

  /** A call was answered: the end of an outage once Redis has answered for settleMs. */
  answered(): void {
    if (this.state === 'down') this.recovering();
    else if (this.state === 'starting') this.up(false);
  }

  private closed(): void {
    const recent =
      this.lastError !== undefined && this.now() - this.lastError.at < 1000 ? this.lastError.text : undefined;
    const cause = recent ?? 'the connection closed (the server stopped, or the network dropped it)';
    if (this.state === 'recovering') {
      this.state = 'down';
      this.lastCause = cause;
      return;
    }
    if (this.state !== 'up') return;
    this.down();
    this.lastCause = cause;
    this.emit({ type: 'disconnected', cause, server: this.adapter.name });
  }

  private readyAgain(): void {
    if (this.state === 'down') this.recovering();
    else if (this.state === 'starting') this.up(false);
    void this.check();
  }

  private down(): void {
    this.state = 'down';
    this.troubled = true;
    this.downSince = this.now();
    this.failedCalls = 0;
    this.lastCause = undefined;
  }

  private recovering(): void {
    this.state = 'recovering';
    this.answeringSince = this.now();
    if (!this.settling) {
      this.settling = true;
      this.setTimer(() => this.settle(), this.settleMs);
    }
  }

  /** The settle timer: over if Redis has answered for settleMs since the last failure, else wait for the rest. */
  private settle(): void {
    this.settling = false;
    if (this.state !== 'recovering') return;
    const left = this.answeringSince + this.settleMs - this.now();
    if (left > 0) {
      this.settling = true;
      this.setTimer(() => this.settle(), left);
      return;
    }
    this.up(true);
  }

  private up(recovered: boolean): void {
    this.state = 'up';
    this.troubled = false;
    if (!recovered) return;
    const downMs = Math.round(this.answeringSince - this.downSince);
    this.emit({
      type: 'recovered',
      downMs,
      failedCalls: this.failedCalls,
      lastCause: this.lastCause,
      server: this.adapter.name,
    });
  }

  /** What each server says of its eviction policy and its process, once per connection. */
  private async check(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      let servers: ServerCommand[];
      try {
        servers = await within(this.adapter.servers(), CHECK_TIMEOUT_MS);
      } catch {
        return; // a cluster that lost a master meanwhile: the next connection checks again
      }
      await Promise.all(servers.map((s) => this.checkServer(s)));
    } finally {
      this.checking = false;
    }
  }

  private async checkServer(server: ServerCommand): Promise<void> {
    let policy: string | undefined;
    let runId: string | undefined;
    try {
      const config = configPairs(await within(server.send(['CONFIG', 'GET', 'maxmemory*']), CHECK_TIMEOUT_MS));
      policy = config.get('maxmemory-policy');
      if (policy !== undefined && evictsLimits(policy) && !this.reported.has(`${server.name} ${policy}`)) {
        this.reported.add(`${server.name} ${policy}`);
        this.emit({
          type: 'eviction-policy',
          server: server.name,
          policy,
          maxmemory: Number(config.get('maxmemory') ?? 0),
        });
      }
    } catch (err) {
      this.refused(server, 'CONFIG GET maxmemory*', err);
    }
    try {
      const info = String(await within(server.send(['INFO', 'server']), CHECK_TIMEOUT_MS));
      runId = /run_id:([0-9a-f]+)/.exec(info)?.[1];
      const previousRunId = this.runIds.get(server.name);
      if (runId !== undefined) this.runIds.set(server.name, runId);
      if (runId !== undefined && previousRunId !== undefined && previousRunId !== runId)
        this.emit({ type: 'restarted', server: server.name, runId, previousRunId });
    } catch (err) {
      this.refused(server, 'INFO server', err);
    }
    this.emit({ type: 'checked', server: server.name, policy, runId });
  }

  private refused(server: ServerCommand, command: string, err: unknown): void {
    const cause = message(err);
    if (!REFUSED.test(cause)) return; // a connection lost meanwhile: the next one checks again
    if (this.reported.has(`${server.name} ${command}`)) return;
    this.reported.add(`${server.name} ${command}`);
    this.emit({ type: 'check-refused', server: server.name, command, cause });
  }

  private emit(event: RedisStoreEvent): void {
    let chosen = false;
    // Each listener and logger once, though several parts share one (the guard's state tells through its store's).
    const listeners = new Set<RedisStoreListener>();
    const loggers = new Set<StoreLogger>();
    for (const r of this.reports) {
      if (r.onEvent !== undefined || r.logger !== undefined) chosen = true;
      if (r.onEvent !== undefined) listeners.add(r.onEvent);
      if (typeof r.logger === 'object' && r.logger !== null) loggers.add(r.logger);
    }
    for (const l of listeners) {
      try {
        l(event);
      } catch {
        // A listener's bug must not break the store's answers.
      }
    }
    for (const l of loggers) this.write(l, event);
    // No part chose: the default, one line on stderr.
    if (!chosen && this.reports.length > 0) this.write(stderr, event);
  }

  /** The line an operator reads for `event`, at its level; none for 'checked'. */
  private write(logger: StoreLogger, event: RedisStoreEvent): void {
    const line = describe(event, this.meanwhile());
    if (line === undefined) return;
    try {
      if (event.type === 'recovered') logger.info(line);
      else if (event.type === 'disconnected' || event.type === 'unanswered' || event.type === 'connect-timeout')
        logger.error(line);
      else logger.warn(line);
    } catch {
      // A logger's bug must not break the store's answers.
    }
  }

  /** What the parts on this client do meanwhile, each said once. */
  private meanwhile(): string {
    return [...new Set(this.reports.map((r) => r.meanwhile))].join('; ');
  }
}

const seconds = (ms: number) => (ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`);

/** One line per event an operator must read; undefined for 'checked'. */
export function describe(event: RedisStoreEvent, meanwhile: string): string | undefined {
  const server = event.server ?? 'redis';
  const until = `Until it answers: ${meanwhile}. (One line per outage and one at recovery; the parts' onEvent or logger: false replace them.)`;
  switch (event.type) {
    case 'connect-timeout':
      return `[sluice] Redis at ${server} is not answering: no connection within ${event.connectTimeoutMs} ms${event.cause === undefined ? '' : ` (${event.cause})`}. ${until}`;
    case 'disconnected':
      return `[sluice] Redis at ${server} is not answering: the connection was lost (${event.cause}). ${until}`;
    case 'unanswered':
      return `[sluice] Redis at ${server} is not answering: ${event.cause}. ${until}`;
    case 'recovered':
      return `[sluice] Redis at ${server} answers again, after ${seconds(event.downMs)} (${event.failedCalls} calls failed meanwhile${event.lastCause === undefined ? '' : `, the last with: ${event.lastCause}`}).`;
    case 'eviction-policy':
      return `[sluice] Redis at ${event.server} has maxmemory-policy ${event.policy}, which can evict rate-limit and guard keys before they expire: use ${SAFE_EVICTION_POLICIES.join(', ')} (docs/redis.md, "Eviction and persistence").`;
    case 'restarted':
      return `[sluice] Redis at ${event.server} is a different process than before (run_id ${event.previousRunId.slice(0, 8)} is now ${event.runId.slice(0, 8)}: a restart or a failover); the counts it had not persisted are gone.`;
    case 'check-refused':
      return `[sluice] Redis at ${event.server} refused ${event.command} (${event.cause}); that check is not made.`;
    case 'checked':
      return undefined;
  }
}

/** One StoreHealth per client, however many parts use it. */
const byClient = new WeakMap<object, StoreHealth>();

/** The client's health, made by the first part that asks (its connectTimeoutMs counts from then). */
export function healthOf(client: unknown, adapter: RedisAdapter, connectTimeoutMs: number): StoreHealth {
  const key = client as object;
  let health = byClient.get(key);
  if (health === undefined) {
    health = new StoreHealth(adapter, connectTimeoutMs);
    byClient.set(key, health);
  }
  return health;
}
