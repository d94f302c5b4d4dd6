/**
 * The 'local-sync' strategy (after Kong's sync_rate and Bucket4j's delaying): each node admits against
 * its last view of a key's fixed-window count plus what it admitted since, and flushes its count to Redis
 * (scripts/local-sync.lua) every `intervalMs`, or as soon as its local allowance is spent, learning the
 * global count and an estimate of the number of nodes from the reply.
 *
 * The local allowance adapts: a node may hold at most
 *
 *   allowance = min(threshold, floor((limit − K) / (N̂ × safetyFactor)))
 *
 * admissions Redis has not acknowledged, where K is the global count in its view (the last reply) and N̂
 * the nodes Redis heard from in this window or the last one. Far from the limit that is `threshold`, and
 * the node batches; as the remainder shrinks so does the allowance, and once it is 0 (fewer than
 * N̂ × safetyFactor left) every request goes to Redis, which admits it only if it fits: exact. A view
 * not refreshed for `intervalMs` (by the node's clock) allows nothing either: the next request goes to
 * Redis and brings a fresh one, so a quiet key's view is never far behind the count.
 *
 * The bound. Let T be the moment the global count first reaches the limit. Requests decided in Redis
 * after T are denied, so what lands after T is local admissions, and a node's local admissions that land
 * after T are all unacknowledged at its last local admission of the window (a reply after T shows the
 * limit reached, and after it the node admits nothing locally). At that admission they fitted its
 * allowance, computed on a view heard before T. So a window admits at most
 *
 *   limit + Σ over nodes i of min(threshold, floor((limit − K_i) / (N̂_i × safetyFactor)))
 *
 * with (K_i, N̂_i) the view node i admitted its last local admission on. Since the count never falls in a
 * window, limit − K_i ≤ D_i, the admissions Redis counted after node i's view and up to T: a node
 * contributes nothing unless its view is at least N̂_i × safetyFactor behind, and 1 per N̂_i × safetyFactor
 * it is behind, at most `threshold`. Hence never more than limit + nodes × threshold (the bound before the
 * allowance adapted), and limit exactly when every view is fewer than N̂ × safetyFactor behind.
 * (A penalty is charged on top, outside the allowance, as atomic charges it past the limit.)
 * Tested in local-sync.test.ts (every term computed from the views a scripted Redis handed out) and
 * test/redis/strategies.test.ts; measured in `sluice simulate distributed` (README).
 */
import { makeDecision, SluiceError, show } from '../core/index.js';
import type { Decision } from '../core/index.js';
import { check } from '../core/option-checks.js';
import { instanceTag, unrefTimer } from '../runtime.js';
import type { StoreTable } from '../stores/store.js';
import type { StrategyStats } from './lease.js';
import type { StrategySpec } from './runner.js';

export interface LocalSyncOptions {
  /** Flush every key's count at least this often; a view older than this admits nothing locally. Default 100 ms. */
  intervalMs?: number;
  /** Most admissions a node holds unacknowledged per key (the cap of its allowance). Default max(1, floor(limit × 0.0025)). */
  threshold?: number;
  /** The allowance is the remainder over (estimated nodes × this). Default 2. */
  safetyFactor?: number;
}

const OPTION_NAMES = ['intervalMs', 'threshold', 'safetyFactor'];

interface KeyCount {
  /** The global count of `window` in the last reply (this node's acknowledged admissions included). */
  known: number;
  /** Nodes Redis heard from in this window or the last, in the last reply (at least 1: this one). */
  nodes: number;
  /**
   * Local time the last reply arrived: the view's age counts from there. (From the send time would be
   * more cautious, but when Redis is slower than `intervalMs` every view would arrive stale and every
   * request queue for Redis one at a time; the bound does not rest on the age, only the overshoot in
   * practice does.)
   */
  heardAt: number;
  /** Admitted and not yet sent; sent and not yet acknowledged. */
  pending: number;
  inflight: number;
  window: number;
  /** Local time at or before the end of `window` on Redis's clock (sent time + ms left in the reply). */
  deadline: number;
  /** The one call in flight for this key: calls are serial per key, so replies arrive in order. */
  calling: Promise<boolean> | undefined;
}

export function checkLocalSyncOptions(value: unknown, limit: number): Required<LocalSyncOptions> {
  const o = value ?? {};
  if (typeof o !== 'object' || o === null || Object.keys(o).some((k) => !OPTION_NAMES.includes(k))) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `'localSync' must be an object such as { intervalMs, threshold, safetyFactor }, got ${show(value)}`,
    );
  }
  const {
    intervalMs = 100,
    threshold = Math.max(1, Math.floor(limit * 0.0025)),
    safetyFactor = 2,
  } = o as LocalSyncOptions;
  check.positiveNumber(intervalMs, "'localSync.intervalMs'", { unit: 'milliseconds' });
  check.positiveInteger(threshold, "'localSync.threshold'");
  if (typeof safetyFactor !== 'number' || !Number.isFinite(safetyFactor) || safetyFactor < 1) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `'localSync.safetyFactor' must be a number of at least 1, got ${show(safetyFactor)}`,
    );
  }
  return { intervalMs, threshold, safetyFactor };
}

/**
 * How many admissions a node may hold unacknowledged on a view of `known` admitted out of `limit`, with
 * `nodes` nodes sharing the key: the remainder split over the nodes and divided by the safety factor,
 * capped at the threshold. 0 means: decide in Redis.
 */
export function localAllowance(limit: number, known: number, nodes: number, o: Required<LocalSyncOptions>): number {
  const left = limit - known;
  if (left <= 0) return 0;
  return Math.min(o.threshold, Math.floor(left / (Math.max(1, nodes) * o.safetyFactor)));
}

export class LocalSyncTable implements StoreTable {
  readonly sync = false;
  readonly stats: StrategyStats = { calls: 0, decisions: 0, fallbacks: 0 };
  private readonly keys = new Map<string, KeyCount>();
  private readonly limit: number;
  private readonly node = instanceTag();
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
      st = {
        known: 0,
        nodes: 1,
        heardAt: -Infinity,
        pending: 0,
        inflight: 0,
        window: -1,
        deadline: -Infinity,
        calling: undefined,
      };
      this.keys.set(key, st);
      this.startTimer();
    }
    for (;;) {
      const now = this.spec.clock();
      if (now >= st.deadline && st.calling === undefined) {
        // The window has ended (or was never learnt): what was pending is dropped by the script anyway.
        // The request is decided in Redis by the call that learns the new window.
        st.pending = 0;
        st.known = 0;
        return this.decideInRedis(key, st, cost);
      }
      if (now < st.deadline) {
        const unacked = st.pending + st.inflight;
        if (cost === 0) return this.answer(st.known + unacked <= this.limit, st, now);
        // The count never falls within a window, so a view that leaves no room is a denial Redis would give.
        if (st.known + unacked + cost > this.limit) return this.answer(false, st, now);
        const fresh = now - st.heardAt < this.options.intervalMs;
        const allowance = fresh ? localAllowance(this.limit, st.known, st.nodes, this.options) : 0;
        if (unacked + cost <= allowance) {
          st.pending += cost;
          if (unacked + cost >= allowance && st.calling === undefined) this.call(key, st, 0).catch(() => {});
          return this.answer(true, st, now);
        }
        // No allowance left on this view: one call flushes what is pending and decides this request.
        if (st.calling === undefined) return this.decideInRedis(key, st, cost);
      }
      // A call is in flight: its reply may bring a fresh view (and free the allowance its flush held).
      await st.calling!.catch(() => {});
    }
  }

  private async decideInRedis(key: string, st: KeyCount, cost: number): Promise<Decision> {
    let admitted: boolean;
    try {
      admitted = await this.call(key, st, cost);
    } catch {
      this.stats.fallbacks++;
      return this.spec.runner.fallback(key, cost);
    }
    // A peek (cost 0) is answered from the view the call brought back.
    return this.answer(
      cost === 0 ? st.known + st.pending + st.inflight <= this.limit : admitted,
      st,
      this.spec.clock(),
    );
  }

  /**
   * The only way to Redis, one call per key at a time: sends what is pending (admitted already, counted
   * unconditionally) and `cost` to decide there (0: none), and takes the reply as the new view.
   */
  private call(key: string, st: KeyCount, cost: number): Promise<boolean> {
    const run = async () => {
      const sentAt = this.spec.clock();
      const add = st.pending;
      st.pending = 0;
      st.inflight = add;
      this.stats.calls++;
      const p = this.spec.policy;
      const args = [
        this.node,
        String(add),
        String(p.windowMs),
        String(st.window),
        String(cost),
        String(this.limit),
        this.spec.runner.clientClock ? String(sentAt) : '',
      ];
      try {
        const r = (await this.spec.runner.run(
          'local-sync',
          [this.spec.runner.keyFor(key, `${p.name}:sync`)],
          args,
        )) as number[];
        const window = Number(r[1]);
        if (window !== st.window) st.pending = 0; // admitted in a window that has ended
        st.known = Number(r[0]);
        st.window = window;
        st.deadline = sentAt + Number(r[2]);
        st.heardAt = this.spec.clock();
        st.nodes = Math.max(1, Number(r[4]));
        return Number(r[3]) === 1;
      } catch (err) {
        st.pending += add; // not counted: send it again with the next call
        throw err;
      } finally {
        st.inflight = 0;
      }
    };
    const calling = run().finally(() => (st.calling = undefined));
    st.calling = calling;
    return calling;
  }

  private answer(allowed: boolean, st: KeyCount, now: number): Decision {
    const p = this.spec.policy;
    const left = Math.max(0, this.limit - st.known - st.pending - st.inflight);
    const reset = Math.max(0, Math.ceil(st.deadline - now));
    return makeDecision({
      allowed,
      limit: p.limit,
      remaining: left,
      resetAfterMs: reset,
      retryAfterMs: allowed ? 0 : Math.max(1, reset),
      delayMs: 0,
      policy: p.name,
    });
  }

  private startTimer(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => this.tick(), this.options.intervalMs);
    unrefTimer(this.timer);
  }

  /** Flushes every key with a pending count; forgets keys whose window has ended with nothing pending. */
  private tick(): void {
    const now = this.spec.clock();
    for (const [key, st] of this.keys) {
      if (st.calling !== undefined) continue;
      if (st.pending > 0) this.call(key, st, 0).catch(() => {});
      else if (now >= st.deadline) this.keys.delete(key);
    }
    if (this.keys.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  /** Flushes every pending count now (for shutdown and tests). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await Promise.all(
      [...this.keys].map(async ([k, st]) => {
        await st.calling?.catch(() => {});
        if (st.pending > 0) await this.call(k, st, 0).catch(() => {});
      }),
    );
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
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `reset() is not available with strategy 'local-sync': other nodes' unflushed counts would land after it; let the window end instead`,
    );
  }
}
