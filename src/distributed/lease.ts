/**
 * The 'lease' strategy (after YouTube's Doorman): a node leases chunks of a key's fixed-window budget from
 * Redis (scripts/lease.lua) and admits locally until the chunk is spent or the window ends. One Redis call
 * per chunk instead of one per decision, and never above the global limit: the script grants at most the
 * limit per window, and a node spends only what it was granted, only inside that window.
 *
 * Why the local deadline is safe: it is (local time when the request was sent) + (ms left in the window
 * by Redis's clock when the script ran). The script runs after the request is sent, so the deadline falls
 * at or before the true window end, whatever the offset between the two clocks.
 *
 * Lease size adapts to demand: a node asks for what it would spend in `horizonMs` at the rate it has seen
 * since its last chunk (doubling a chunk it spent faster than that), and the script grants a
 * proportional share of what is left (lease.lua).
 */
import { LimitDecision, SluiceError, show } from '../core/index.js';
import type { Decision } from '../core/index.js';
import type { StoreTable } from '../stores/store.js';
import type { StrategySpec } from './runner.js';

export interface LeaseOptions {
  /** A chunk covers this much of the node's recent demand. Default: a tenth of the window. */
  horizonMs?: number;
}

interface KeyLease {
  /** Tokens of the current chunk not yet spent. */
  tokens: number;
  /** Tokens granted to this node in the current window (the most a reward may give back). */
  held: number;
  window: number;
  /** Local time at or before the end of `window` on Redis's clock. */
  deadline: number;
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
  if (typeof o !== 'object' || o === null || Object.keys(o).some((k) => k !== 'horizonMs')) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `'lease' must be an object such as { horizonMs }, got ${show(value)}`);
  }
  const h = (o as LeaseOptions).horizonMs ?? Math.max(1, windowMs / 10);
  if (typeof h !== 'number' || !Number.isFinite(h) || h <= 0) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `'lease.horizonMs' must be a positive number of milliseconds, got ${show(h)}`);
  }
  return { horizonMs: h };
}

export class LeaseTable implements StoreTable {
  readonly sync = false;
  readonly stats: StrategyStats = { calls: 0, decisions: 0, fallbacks: 0 };
  private readonly keys = new Map<string, KeyLease>();
  private readonly limit: number;
  private readonly windowMs: number;
  private readonly node = `${process.pid.toString(36)}.${Math.floor(Math.random() * 2 ** 32).toString(36)}`;

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
      st = { tokens: 0, held: 0, window: -1, deadline: -Infinity, exhaustedUntil: -Infinity, seen: 0, since: this.spec.clock(), lastGrant: 0, pending: undefined };
      this.keys.set(key, st);
    }
    st.seen += cost;
    for (;;) {
      const now = this.spec.clock();
      if (now >= st.deadline) {
        st.tokens = 0; // the window has ended; so has the chunk
        st.held = 0;
      }
      if (cost === 0 || st.tokens >= cost) {
        st.tokens -= cost;
        return this.answer(true, st, now);
      }
      if (now < st.exhaustedUntil) return this.answer(false, st, now);
      if (st.pending === undefined) st.pending = this.acquire(key, st, cost).finally(() => (st.pending = undefined));
      const failed = await st.pending.then(() => false, () => true);
      if (failed) {
        this.stats.fallbacks++;
        return this.spec.runner.fallback(key, cost);
      }
    }
  }

  /** Gives back the unspent chunk and asks for one sized to recent demand. */
  private async acquire(key: string, st: KeyLease, cost: number): Promise<void> {
    const sentAt = this.spec.clock();
    const unspent = sentAt < st.deadline ? st.tokens : 0;
    st.tokens = 0;
    st.held -= unspent;
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
    this.stats.calls++;
    const args = [this.node, String(this.limit), String(this.windowMs), String(want), String(unspent), String(st.window)];
    args.push(this.spec.runner.clientClock ? String(sentAt) : '');
    const reply = (await this.spec.runner.run('lease', [this.spec.runner.keyFor(key, `${this.spec.policy.name}:lease`)], args)) as number[];
    const grant = Number(reply[0]);
    const window = Number(reply[1]);
    const deadline = sentAt + Number(reply[2]);
    if (window !== st.window) st.held = 0;
    st.window = window;
    st.deadline = deadline;
    st.tokens += grant;
    st.held += grant;
    st.lastGrant = grant;
    // Nothing left, or less than this cost: only another node's give-back could change that before the
    // window ends, so answer locally until then rather than ask again per request.
    if (st.tokens < cost) st.exhaustedUntil = deadline;
  }

  private answer(allowed: boolean, st: KeyLease, now: number): Decision {
    const p = this.spec.policy;
    const resetAfterMs = Math.max(0, Math.ceil(st.deadline - now));
    return new LimitDecision(allowed, p.limit, Math.max(0, st.tokens), resetAfterMs, allowed ? 0 : Math.max(1, Math.ceil(st.exhaustedUntil - now)), 0, p.name, undefined, undefined);
  }

  /** Penalty spends this node's tokens (a debt paid from its next chunk); reward gives back at most what it holds. */
  async adjust(key: string, delta: number): Promise<Decision> {
    const st = this.keys.get(key);
    const now = this.spec.clock();
    if (st === undefined || now >= st.deadline) return this.answer(true, { tokens: 0, held: 0, window: -1, deadline: now, exhaustedUntil: now, seen: 0, since: now, lastGrant: 0, pending: undefined }, now);
    st.tokens = Math.min(st.held, st.tokens - delta);
    if (delta < 0 && st.tokens > 0) st.exhaustedUntil = -Infinity;
    return this.answer(st.tokens > 0, st, now);
  }

  async release(): Promise<boolean> {
    return false; // only concurrency policies take leases ids, and the lease strategy refuses them
  }

  async reset(): Promise<void> {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `reset() is not available with strategy 'lease': chunks other nodes hold would outlive it and the limit could be exceeded; let the window end instead`);
  }

  /** Drops keys whose window has ended and which have no request in flight. */
  private sweep(): void {
    const now = this.spec.clock();
    for (const [k, st] of this.keys) if (now >= st.deadline && st.pending === undefined) this.keys.delete(k);
  }
}
