/**
 * The 'lease' strategy (after YouTube's Doorman): a node leases chunks of a key's fixed-window budget from
 * Redis (scripts/lease.lua) and admits locally until the chunk is spent, its lease TTL passes, or the
 * window ends. One Redis call per chunk instead of one per decision, and never above the global limit:
 * the script grants at most the limit per window, takes back only what a node gives back, and a node
 * spends only what it was granted, only inside that window.
 *
 * Why the local deadlines are safe: the window's is (local time when the request was sent) + (ms left in
 * the window by Redis's clock when the script ran). The script runs after the request is sent, so the
 * deadline falls at or before the true window end, whatever the offset between the two clocks. The
 * lease's is (send time) + ttlMs − a tenth of ttlMs, so it falls before the lease ends on Redis (script
 * time + ttlMs) even if this clock runs up to 10 % slow.
 *
 * Lease TTL. When it passes the node stops spending the chunk and gives back what is left of it at once
 * (with its next ask, or from a timer if no request comes), so budget parked on a node whose traffic went
 * elsewhere returns within a TTL instead of at the window end. On Redis a lease past its TTL is settled:
 * the node's demand leaves the proportional split. A crashed node cannot give anything back, and Redis
 * cannot know how much of its last chunk it spent, so that chunk stays counted as spent: returning it
 * could exceed the limit. The most a crash costs a window is the chunk the node held (lease.lua).
 *
 * Lease size adapts to demand: a node asks for what it would spend in `horizonMs` at the rate it has seen
 * since its last chunk (doubling a chunk it spent faster than that), and the script grants a
 * proportional share of what is left (lease.lua).
 */
import { makeDecision, SluiceError, show } from '../core/index.js';
import type { Decision } from '../core/index.js';
import { check } from '../core/option-checks.js';
import { instanceTag, unrefTimer } from '../runtime.js';
import type { StoreTable } from '../stores/store.js';
import type { StrategySpec } from './runner.js';

export interface LeaseOptions {
  /** A chunk covers this much of the node's recent demand. Default: a tenth of the window. */
  horizonMs?: number;
  /** A chunk is spent only this long after it was asked for (less a tenth, for clock rates). Default: twice horizonMs, at most the window. */
  ttlMs?: number;
}

/** The node stops spending a chunk this share of its TTL early: room for a clock that runs slow. */
const TTL_MARGIN = 0.1;

interface KeyLease {
  /** Tokens of the current chunk not yet spent. */
  tokens: number;
  /** Tokens granted to this node in the current window (the most a reward may give back). */
  held: number;
  window: number;
  /** Local time at or before the end of `window` on Redis's clock. */
  deadline: number;
  /** Local time after which the current chunk is no longer spent (its lease TTL, less the margin). */
  leaseDeadline: number;
  /** Local time until which the window's budget is known to be gone. */
  exhaustedUntil: number;
  /** Requests seen since the last chunk was asked for, and when that was. */
  seen: number;
  since: number;
  /** The last chunk's size: a node that spends it within a horizon asks for twice as much next. */
  lastGrant: number;
  pending: Promise<void> | undefined;
}

/** Redis calls made, chunks granted, and decisions answered locally: for metrics and the simulator. */
export interface StrategyStats {
  calls: number;
  decisions: number;
  fallbacks: number;
}

export function checkLeaseOptions(value: unknown, windowMs: number): Required<LeaseOptions> {
  const o = value ?? {};
  if (typeof o !== 'object' || o === null || Object.keys(o).some((k) => k !== 'horizonMs' && k !== 'ttlMs')) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `'lease' must be an object such as { horizonMs, ttlMs }, got ${show(value)}`,
    );
  }
  const h = (o as LeaseOptions).horizonMs ?? Math.max(1, windowMs / 10);
  check.positiveNumber(h, "'lease.horizonMs'", { unit: 'milliseconds' });
  const ttl = (o as LeaseOptions).ttlMs ?? Math.min(windowMs, 2 * h);
  const ttlBound = { unit: 'milliseconds', note: `no longer than the window (${windowMs})` };
  check.positiveNumber(ttl, "'lease.ttlMs'", ttlBound);
  if (ttl > windowMs) check.refuse("'lease.ttlMs'", 'a positive number', ttl, ttlBound);
  return { horizonMs: h, ttlMs: ttl };
}

export class LeaseTable implements StoreTable {
  readonly sync = false;
  readonly stats: StrategyStats = { calls: 0, decisions: 0, fallbacks: 0 };
  private readonly keys = new Map<string, KeyLease>();
  private readonly limit: number;
  private readonly windowMs: number;
  private readonly node = instanceTag();
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly spec: StrategySpec,
    private readonly options: Required<LeaseOptions>,
  ) {
    this.limit = spec.policy.limit;
    this.windowMs = spec.policy.windowMs;
  }

  async decide(key: string, cost: number): Promise<Decision> {
    this.stats.decisions++;
    let st = this.keys.get(key);
    if (st === undefined) {
      if (this.keys.size >= 4096) this.sweep();
      st = {
        tokens: 0,
        held: 0,
        window: -1,
        deadline: -Infinity,
        leaseDeadline: -Infinity,
        exhaustedUntil: -Infinity,
        seen: 0,
        since: this.spec.clock(),
        lastGrant: 0,
        pending: undefined,
      };
      this.keys.set(key, st);
    }
    st.seen += cost;
    for (;;) {
      const now = this.spec.clock();
      if (now >= st.deadline) {
        st.tokens = 0; // the window has ended; so has the chunk
        st.held = 0;
      }
      if (cost === 0 || (now < st.leaseDeadline && st.tokens >= cost)) {
        st.tokens -= cost;
        return this.answer(true, st, now);
      }
      if (now < st.exhaustedUntil) return this.answer(false, st, now);
      if (st.pending === undefined) st.pending = this.acquire(key, st, cost).finally(() => (st.pending = undefined));
      const failed = await st.pending.then(
        () => false,
        () => true,
      );
      if (failed) {
        this.stats.fallbacks++;
        return this.spec.runner.fallback(key, cost);
      }
    }
  }

  /**
   * Gives back the unspent chunk (spent no more from here on, whether its TTL has passed or not) and asks
   * for one sized to recent demand; with cost 0, only gives back.
   */
  private async acquire(key: string, st: KeyLease, cost: number): Promise<void> {
    const sentAt = this.spec.clock();
    const unspent = sentAt < st.deadline ? st.tokens : 0;
    st.tokens = 0;
    st.held -= unspent;
    if (cost === 0) {
      await this.ask(key, st, sentAt, 0, unspent);
      return;
    }
    // Demand: requests seen since the last ask, per ms, over at least one horizon, so a node's first
    // request does not claim a whole horizon's worth (with nothing to go on, it would take the budget
    // from the nodes that come next). A chunk spent within the horizon doubles the next ask (slow start),
    // so a hot key reaches its share in a few round trips.
    const elapsed = sentAt - st.since;
    const h = this.options.horizonMs;
    const byRate = Math.ceil((st.seen * h) / Math.max(h, elapsed));
    const grow = unspent === 0 && st.lastGrant > 0 && elapsed < h ? 2 * st.lastGrant : 0;
    const want = Math.min(this.limit, Math.max(cost, byRate, grow));
    st.seen = 0;
    st.since = sentAt;
    const grant = await this.ask(key, st, sentAt, want, unspent);
    st.lastGrant = grant;
    // Nothing left, or less than this cost: only a give-back could change that (another node's expired
    // remainder, within a TTL), so deny locally for a TTL rather than ask again per request.
    if (st.tokens < cost) st.exhaustedUntil = Math.min(st.deadline, sentAt + this.options.ttlMs);
  }

  /** One lease.lua call: gives back `unspent`, asks for `want`, and takes the chunk granted. */
  private async ask(key: string, st: KeyLease, sentAt: number, want: number, unspent: number): Promise<number> {
    this.stats.calls++;
    const args = [
      this.node,
      String(this.limit),
      String(this.windowMs),
      String(want),
      String(unspent),
      String(st.window),
      String(this.options.ttlMs),
    ];
    args.push(this.spec.runner.clientClock ? String(sentAt) : '');
    const reply = (await this.spec.runner.run(
      'lease',
      [this.spec.runner.keyFor(key, `${this.spec.policy.name}:lease`)],
      args,
    )) as number[];
    const grant = Number(reply[0]);
    const window = Number(reply[1]);
    const deadline = sentAt + Number(reply[2]);
    if (window !== st.window) st.held = 0;
    st.window = window;
    st.deadline = deadline;
    st.leaseDeadline = Math.min(deadline, sentAt + this.options.ttlMs * (1 - TTL_MARGIN));
    st.tokens += grant;
    st.held += grant;
    if (grant > 0) this.startTimer();
    return grant;
  }

  private startTimer(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => this.giveBackExpired(), Math.max(1, this.options.ttlMs / 2));
    unrefTimer(this.timer);
  }

  /** Gives back the remainder of every chunk whose TTL has passed in a window still running. */
  private giveBackExpired(): void {
    const now = this.spec.clock();
    let holding = false;
    for (const [key, st] of this.keys) {
      if (st.tokens <= 0 || now >= st.deadline || st.pending !== undefined) continue;
      if (now < st.leaseDeadline) {
        holding = true;
        continue;
      }
      st.pending = this.acquire(key, st, 0).finally(() => (st.pending = undefined));
      st.pending.catch(() => {});
    }
    if (!holding) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  /** Gives back every unspent chunk (for shutdown and tests). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    const now = this.spec.clock();
    await Promise.all(
      [...this.keys].map(async ([key, st]) => {
        await st.pending?.catch(() => {});
        if (st.tokens > 0 && now < st.deadline) await this.acquire(key, st, 0).catch(() => {});
      }),
    );
  }

  private answer(allowed: boolean, st: KeyLease, now: number): Decision {
    const p = this.spec.policy;
    const resetAfterMs = Math.max(0, Math.ceil(st.deadline - now));
    const spendable = now < st.leaseDeadline ? Math.max(0, st.tokens) : 0;
    return makeDecision({
      allowed,
      limit: p.limit,
      remaining: spendable,
      resetAfterMs,
      retryAfterMs: allowed ? 0 : Math.max(1, Math.ceil(st.exhaustedUntil - now)),
      delayMs: 0,
      policy: p.name,
    });
  }

  /** Penalty spends this node's tokens (a debt paid from its next chunk); reward gives back at most what it holds. */
  async adjust(key: string, delta: number): Promise<Decision> {
    const st = this.keys.get(key);
    const now = this.spec.clock();
    if (st === undefined || now >= st.deadline)
      return this.answer(
        true,
        {
          tokens: 0,
          held: 0,
          window: -1,
          deadline: now,
          leaseDeadline: now,
          exhaustedUntil: now,
          seen: 0,
          since: now,
          lastGrant: 0,
          pending: undefined,
        },
        now,
      );
    st.tokens = Math.min(st.held, st.tokens - delta);
    if (delta < 0 && st.tokens > 0) st.exhaustedUntil = -Infinity;
    return this.answer(st.tokens > 0, st, now);
  }

  async release(): Promise<boolean> {
    return false; // only concurrency policies take leases ids, and the lease strategy refuses them
  }

  async reset(): Promise<void> {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `reset() is not available with strategy 'lease': chunks other nodes hold would outlive it and the limit could be exceeded; let the window end instead`,
    );
  }

  /** Drops keys whose window has ended and which have no request in flight. */
  private sweep(): void {
    const now = this.spec.clock();
    for (const [k, st] of this.keys) if (now >= st.deadline && st.pending === undefined) this.keys.delete(k);
  }
}
