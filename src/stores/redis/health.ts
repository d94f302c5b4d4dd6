/**
 * What a RedisStore tells its owner about the Redis behind it, through the `onEvent` option: the client
 * not connected by its deadline, a lost connection or calls that go unanswered, the recovery, and, each
 * time the client (re)connects, what the server says of itself: an eviction policy that can drop limiter
 * keys (`CONFIG GET maxmemory*`), and a different server process than before (`INFO server`'s run_id: a
 * restart or a failover, after which the keys it had not persisted or replicated are gone). The store logs
 * nothing itself (no logging dependency): `sluice serve` logs these lines, rate-limited.
 *
 * Only transitions are reported (up to down, down to up), so a long outage is one event, not one per call.
 */
import type { RedisAdapter, ServerCommand } from './adapter.js';

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
  /** No connection within `connectTimeoutMs` of the store's creation: decisions meanwhile are the failure policy's. */
  | { readonly type: 'connect-timeout'; readonly connectTimeoutMs: number }
  /** The connection was lost (`cause`: the client's last error, if it gave one). */
  | { readonly type: 'disconnected'; readonly cause: string }
  /** A call failed while the client was connected: no answer within timeoutMs (a frozen server), or an error reply (OOM, say). */
  | { readonly type: 'unanswered'; readonly cause: string }
  /** Answers again after one of the three above; `failedCalls` failed meanwhile, the last with `lastCause`. */
  | { readonly type: 'recovered'; readonly downMs: number; readonly failedCalls: number; readonly lastCause: string | undefined }
  /** The server's maxmemory-policy can evict limiter keys (see evictsLimits); `maxmemory` 0 means no limit is set yet. */
  | { readonly type: 'eviction-policy'; readonly server: string; readonly policy: string; readonly maxmemory: number }
  /** A different Redis process answers than before (a restart or a failover): its run_id changed. */
  | { readonly type: 'restarted'; readonly server: string; readonly runId: string; readonly previousRunId: string }
  /** What a server said of itself when the client (re)connected: undefined where it would not say. */
  | { readonly type: 'checked'; readonly server: string; readonly policy: string | undefined; readonly runId: string | undefined }
  /** The server refused a check (an ACL without CONFIG or INFO, a renamed command): what it would have told is unknown. */
  | { readonly type: 'check-refused'; readonly server: string; readonly command: string; readonly cause: string };

export type RedisStoreListener = (event: RedisStoreEvent) => void;

const message = (err: unknown): string => String((err as Error)?.message ?? err);

/** Replies that say the server will not run a check for this user (ACL, renamed or missing command), rather than a dropped connection. */
const REFUSED = /NOPERM|unknown command|^ERR/i;

/** Longest wait for a check's reply: a frozen server must not hold the next connection's checks. */
const CHECK_TIMEOUT_MS = 2000;

function within<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    (timer as { unref?: () => void }).unref?.();
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** Replies of `CONFIG GET maxmemory*`: a flat array of names and values (RESP2), or a map (RESP3, node-redis typed). */
function configPairs(reply: unknown): Map<string, string> {
  const out = new Map<string, string>();
  if (Array.isArray(reply)) for (let i = 0; i + 1 < reply.length; i += 2) out.set(String(reply[i]), String(reply[i + 1]));
  else if (reply instanceof Map) for (const [k, v] of reply) out.set(String(k), String(v));
  else if (typeof reply === 'object' && reply !== null) for (const [k, v] of Object.entries(reply)) out.set(k, String(v));
  return out;
}

export class StoreHealth {
  private state: 'starting' | 'up' | 'down' = 'starting';
  private downSince = 0;
  private failedCalls = 0;
  private lastCause: string | undefined;
  /** The client's last error and when, for the cause of a disconnect that follows it. */
  private lastError: { text: string; at: number } | undefined;
  /** run_id by server name, from the last check. */
  private readonly runIds = new Map<string, string>();
  /** `server policy` pairs already reported, so a reconnect does not report the same setting again. */
  private readonly reported = new Set<string>();
  private checking = false;
  /** Whether a failed call must look at the state (a field read on the hot path instead of a call). */
  troubled = false;

  constructor(
    private readonly adapter: RedisAdapter,
    private readonly listener: RedisStoreListener,
    connectTimeoutMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    adapter.onError((err) => (this.lastError = { text: message(err), at: this.now() }));
    adapter.onClose(() => this.closed());
    adapter.onReady(() => this.readyAgain());
    if (adapter.ready()) this.readyAgain();
    else {
      setTimeout(() => {
        if (this.state !== 'starting') return;
        this.down();
        this.emit({ type: 'connect-timeout', connectTimeoutMs });
      }, connectTimeoutMs).unref?.();
    }
  }

  /** A call failed (a timeout, a refusal, an error reply). */
  failed(err: unknown): void {
    const cause = message(err);
    if (this.state === 'up') {
      this.down();
      this.emit({ type: 'unanswered', cause });
    }
    this.failedCalls++;
    this.lastCause = cause;
  }

  /** A call was answered: the end of an outage, if there was one. */
  answered(): void {
    if (this.state === 'down') this.up();
    else if (this.state === 'starting') this.state = 'up';
  }

  private closed(): void {
    if (this.state !== 'up') return;
    this.down();
    const recent = this.lastError !== undefined && this.now() - this.lastError.at < 1000 ? this.lastError.text : undefined;
    this.emit({ type: 'disconnected', cause: recent ?? 'the connection closed (the server stopped, or the network dropped it)' });
  }

  private readyAgain(): void {
    if (this.state === 'down') this.up();
    else this.state = 'up';
    this.troubled = this.state !== 'up';
    void this.check();
  }

  private down(): void {
    this.state = 'down';
    this.troubled = true;
    this.downSince = this.now();
    this.failedCalls = 0;
    this.lastCause = undefined;
  }

  private up(): void {
    this.state = 'up';
    this.troubled = false;
    this.emit({ type: 'recovered', downMs: Math.round(this.now() - this.downSince), failedCalls: this.failedCalls, lastCause: this.lastCause });
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
        this.emit({ type: 'eviction-policy', server: server.name, policy, maxmemory: Number(config.get('maxmemory') ?? 0) });
      }
    } catch (err) {
      this.refused(server, 'CONFIG GET maxmemory*', err);
    }
    try {
      const info = String(await within(server.send(['INFO', 'server']), CHECK_TIMEOUT_MS));
      runId = /run_id:([0-9a-f]+)/.exec(info)?.[1];
      const previousRunId = this.runIds.get(server.name);
      if (runId !== undefined) this.runIds.set(server.name, runId);
      if (runId !== undefined && previousRunId !== undefined && previousRunId !== runId) this.emit({ type: 'restarted', server: server.name, runId, previousRunId });
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
    try {
      this.listener(event);
    } catch {
      // A listener's bug must not break the store's answers.
    }
  }
}
