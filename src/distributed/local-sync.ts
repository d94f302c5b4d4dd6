/**
 * The 'local-sync' strategy (after Kong's sync_rate and Bucket4j's delaying): each node admits against
 * its last view of a key's fixed-window count plus what it admitted since, and flushes its count to Redis
 * (scripts/local-sync.lua) every `intervalMs`, or as soon as `threshold` admissions are unacknowledged,
 * learning the global count from the reply.
 *
 * The bound: a node never holds more than `threshold` admissions Redis has not acknowledged; past that it
 * waits for the flush. Every other admission was counted in a global count some node saw, so a window
 * admits at most limit + nodes × threshold: the overshoot bound, tested and measured (README).
 * Default threshold: 0.25% of the limit (at least 1), so 4 nodes overshoot by at most 1%.
 */
import { LimitDecision, SluiceError, show } from '../core/index.js';
import type { Decision } from '../core/index.js';
import type { StoreTable } from '../stores/store.js';
import type { StrategyStats } from './lease.js';
import type { StrategySpec } from './runner.js';

export interface LocalSyncOptions {
  /** Flush every key's count at least this often. Default 100 ms. */
  intervalMs?: number;
  /** Most admissions a node holds unacknowledged per key. Default max(1, floor(limit × 0.0025)). */
  threshold?: number;
}

interface KeyCount {
  /** The global count of `window` in the last reply (this node's acknowledged admissions included). */
  known: number;
  /** Admitted and not yet sent; sent and not yet acknowledged. */
  pending: number;
  inflight: number;
  window: number;
  /** Local time at or before the end of `window` on Redis's clock (sent time + ms left in the reply). */
  deadline: number;
  flushing: Promise<void> | undefined;
}

export function checkLocalSyncOptions(value: unknown, limit: number): Required<LocalSyncOptions> {
  const o = value ?? {};
  if (typeof o !== 'object' || o === null || Object.keys(o).some((k) => k !== 'intervalMs' && k !== 'threshold')) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `'localSync' must be an object such as { intervalMs, threshold }, got ${show(value)}`);
  }
  const { intervalMs = 100, threshold = Math.max(1, Math.floor(limit * 0.0025)) } = o as LocalSyncOptions;
  if (typeof intervalMs !== 'number' || !Number.isFinite(intervalMs) || intervalMs <= 0) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `'localSync.intervalMs' must be a positive number of milliseconds, got ${show(intervalMs)}`);
  }
  if (typeof threshold !== 'number' || !Number.isSafeInteger(threshold) || threshold <= 0) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `'localSync.threshold' must be a positive integer, got ${show(threshold)}`);
  }
  return { intervalMs, threshold };
}

export class LocalSyncTable implements StoreTable {
  readonly sync = false;
  readonly stats: StrategyStats = { calls: 0, decisions: 0, fallbacks: 0 };
  private readonly keys = new Map<string, KeyCount>();
  private readonly limit: number;
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly spec: StrategySpec,
    readonly options: Required<LocalSyncOptions>,
  ) {
    this.limit = spec.policy.limit;
  }

  async decide(key: string, cost: number): Promise<Decision> {
    this.stats.decisions++;
    let st = this.keys.get(key);
    if (st === undefined) {
      st = { known: 0, pending: 0, inflight: 0, window: -1, deadline: -Infinity, flushing: undefined };
      this.keys.set(key, st);
      this.startTimer();
    }
    for (;;) {
      const now = this.spec.clock();
      if (now >= st.deadline) {
        // The window has ended (or was never learnt): what was pending is dropped by the script anyway.
        if (st.flushing === undefined) {
          st.pending = 0;
          st.known = 0;
        }
        if (!(await this.flushOrFail(key, st))) return this.fail(key, cost);
        continue;
      }
      const unacked = st.pending + st.inflight;
      if (cost > 0 && st.known + unacked + cost > this.limit) return this.answer(false, st, now);
      if (cost > 0 && unacked + cost > this.options.threshold && unacked > 0) {
        if (!(await this.flushOrFail(key, st))) return this.fail(key, cost);
        continue;
      }
      st.pending += cost;
      if (st.pending + st.inflight >= this.options.threshold && st.flushing === undefined) void this.flush(key, st).catch(() => {});
      return this.answer(true, st, now);
    }
  }

  private async flushOrFail(key: string, st: KeyCount): Promise<boolean> {
    return this.flush(key, st).then(() => true, () => false);
  }

  private fail(key: string, cost: number): Decision {
    this.stats.fallbacks++;
    return this.spec.runner.fallback(key, cost);
  }

  /** Sends what is pending; concurrent callers share one flush per key. */
  private flush(key: string, st: KeyCount): Promise<void> {
    if (st.flushing !== undefined) return st.flushing;
    const run = async () => {
      const sentAt = this.spec.clock();
      const add = st.pending;
      st.pending = 0;
      st.inflight = add;
      this.stats.calls++;
      const args = [String(add), String(this.spec.policy.windowMs), String(st.window), this.spec.runner.clientClock ? String(sentAt) : ''];
      try {
        const r = (await this.spec.runner.run('local-sync', [this.spec.runner.keyFor(key, `${this.spec.policy.name}:sync`)], args)) as number[];
        const window = Number(r[1]);
        if (window !== st.window) st.pending = 0; // admitted in a window that has ended
        st.known = Number(r[0]);
        st.window = window;
        st.deadline = sentAt + Number(r[2]);
      } catch (err) {
        st.pending += add; // not counted: send it again with the next flush
        throw err;
      } finally {
        st.inflight = 0;
      }
    };
    st.flushing = run().finally(() => (st.flushing = undefined));
    return st.flushing;
  }

  private answer(allowed: boolean, st: KeyCount, now: number): Decision {
    const p = this.spec.policy;
    const left = Math.max(0, this.limit - st.known - st.pending - st.inflight);
    const reset = Math.max(0, Math.ceil(st.deadline - now));
    return new LimitDecision(allowed, p.limit, left, reset, allowed ? 0 : Math.max(1, reset), 0, p.name, undefined, undefined);
  }

  private startTimer(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => this.tick(), this.options.intervalMs);
    this.timer.unref();
  }

  /** Flushes every key with a pending count; forgets keys whose window has ended with nothing pending. */
  private tick(): void {
    const now = this.spec.clock();
    for (const [key, st] of this.keys) {
      if (st.pending > 0 && st.flushing === undefined) void this.flush(key, st).catch(() => {});
      else if (now >= st.deadline && st.pending === 0 && st.flushing === undefined) this.keys.delete(key);
    }
    if (this.keys.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  /** Flushes every pending count now (for shutdown and tests). */
  async close(): Promise<void> {
    await Promise.all([...this.keys].map(([k, st]) => (st.pending > 0 ? this.flush(k, st).catch(() => {}) : st.flushing)));
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Penalty counts as admissions (flushed like them); reward takes back pending ones, never acknowledged ones. */
  async adjust(key: string, delta: number): Promise<Decision> {
    const st = this.keys.get(key);
    const now = this.spec.clock();
    if (st === undefined || now >= st.deadline) return this.decide(key, 0);
    st.pending = Math.max(0, st.pending + delta);
    return this.answer(st.known + st.pending + st.inflight <= this.limit, st, now);
  }

  async release(): Promise<boolean> {
    return false;
  }

  async reset(): Promise<void> {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `reset() is not available with strategy 'local-sync': other nodes' unflushed counts would land after it; let the window end instead`);
  }
}
