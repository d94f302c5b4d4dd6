/**
 * Gate: the outbound scheduler. A call waits, instead of being rejected, until every policy on its key
 * admits it; waiters leave in priority order, FIFO within a priority, and a key's head of line is never
 * overtaken by a cheaper call behind it. A key sleeps on one timer until the head's retryAfterMs (or an
 * upstream pause) is over: nothing polls. See docs/outbound.md.
 *
 * @example
 * const gate = new Gate({ policies: [{ algorithm: 'token-bucket', limit: 100, window: '1s' }], maxQueue: 10_000, timeoutMs: 30_000 });
 * const res = await gate.run('stripe', () => fetch(url), { cost: 1 });
 */
import { type Clock, check, type Decision, Limiter, makeDecision, type Policy, show, SluiceError } from 'sluice/kit';
import {
  checkCost,
  checkKey,
  checkPriority,
  checkSignal,
  resolveGateOptions,
  type GateOptions,
  type GateStats,
  type WaitOptions,
} from './options.js';
import { DeadlineList, KeyLine, Waiter } from './queue.js';
import type { Timers } from './timers.js';

export type { GateOptions, GateStats, WaitOptions };

/** setTimeout fires at once for delays above 2^31 − 1 ms; sleep in pieces no longer than that. */
const MAX_TIMER_MS = 2_147_483_647;

export class Gate {
  /**
   * The limiter of the rate policies (of the concurrency policies when there are no others); use it to
   * peek (`gate.limiter.get(key)`).
   */
  readonly limiter: Limiter;
  /** The concurrency policies' limiter when the gate has rate policies too; it decides first. */
  readonly leases: Limiter | undefined;
  readonly maxQueue: number;
  readonly timeoutMs: number;
  readonly stats: GateStats = { admitted: 0, queued: 0, full: 0, timedOut: 0, aborted: 0, refunded: 0, storeErrors: 0 };
  /** The gate's timers; limitedFetch sleeps its backoff on them too. */
  readonly timers: Timers;
  private readonly clock: Clock;
  private readonly lines = new Map<string, KeyLine>();
  private readonly deadlines = new DeadlineList();
  private deadlineTimer: unknown = undefined;
  private waiting = 0;
  /** Whether the store decides synchronously; learnt on the first call. */
  private sync: boolean | undefined;
  private readonly policies: readonly Policy[];
  private readonly capacity: number;
  private readonly releasePollMs: number;
  /** Names of the concurrency policies: a denial by one of them may end early, by a release. */
  private readonly leasePolicies: ReadonlySet<string>;
  /** The longest window of the rate (not concurrency) policies, margin included; 0 when there are none. */
  private readonly rateWindowMs: number;
  /** Names of the fixed-window policies: a call one of them held back waits `marginMs` past the edge. */
  private readonly fixedWindows: ReadonlySet<string>;
  private readonly marginMs: number;

  constructor(options: GateOptions) {
    const o = resolveGateOptions(options);
    this.limiter = new Limiter(o.limiter);
    this.leases = o.leases === undefined ? undefined : new Limiter(o.leases);
    this.policies = o.policies;
    this.maxQueue = o.maxQueue;
    this.timeoutMs = o.timeoutMs;
    this.timers = o.timers;
    this.clock = o.clock;
    this.releasePollMs = o.releasePollMs;
    this.capacity = Math.min(...o.policies.map((p) => p.capacity));
    this.leasePolicies = new Set(o.policies.filter((p) => p.algorithm === 'concurrency').map((p) => p.name));
    this.marginMs = o.marginMs;
    this.fixedWindows = new Set(o.policies.filter((p) => p.algorithm === 'fixed-window').map((p) => p.name));
    // The other rate policies' windows already carry the margin (resolveGateOptions lengthens them).
    this.rateWindowMs = Math.max(
      0,
      ...o.policies
        .filter((p) => p.algorithm !== 'concurrency')
        .map((p) => p.windowMs + (p.algorithm === 'fixed-window' ? o.marginMs : 0)),
    );
  }

  /** Calls waiting now, across all keys or for one key. */
  pending(key?: string): number {
    return key === undefined ? this.waiting : (this.lines.get(key)?.size ?? 0);
  }

  /**
   * Resolves with the admitting decision when the call may go. With a concurrency policy the decision
   * carries a `leaseId`: pass it to `release()` when the call is done (`run()` does this for you).
   */
  wait(key: string, options?: WaitOptions): Promise<Decision> {
    let cost = 1;
    let priority = 0;
    let signal: AbortSignal | undefined;
    try {
      checkKey(key);
      if (options !== undefined) {
        if (options.cost !== undefined) cost = checkCost(this.policies, this.capacity, options.cost);
        if (options.priority !== undefined) priority = checkPriority(options.priority);
        signal = checkSignal(options.signal);
      }
    } catch (e) {
      return Promise.reject(e);
    }
    if (signal?.aborted) {
      this.stats.aborted++;
      return Promise.reject(signal.reason);
    }
    let line = this.lines.get(key);
    const now = this.clock();
    let denied: Decision | undefined;
    // Fast path: nobody waits on this key, so trying at once overtakes no one.
    if (line === undefined || (line.size === 0 && !line.pumping && line.pausedUntil <= now)) {
      if (this.sync !== false) {
        let d: Decision | undefined;
        try {
          d = this.decideSync(key, cost);
        } catch (e) {
          return Promise.reject(e);
        }
        if (d !== undefined) {
          if (d.allowed) {
            this.stats.admitted++;
            if (line !== undefined) this.forget(line); // a pause that has run out
            return Promise.resolve(d);
          }
          denied = d;
        }
      }
    }
    if (this.waiting >= this.maxQueue) {
      this.stats.full++;
      return Promise.reject(
        new SluiceError(
          'ERR_SLUICE_QUEUE_FULL',
          `Gate queue is full: ${this.waiting} calls are waiting ('maxQueue' is ${this.maxQueue}); slow the callers down or raise 'maxQueue'`,
        ),
      );
    }
    if (line === undefined) {
      line = new KeyLine(key);
      this.lines.set(key, line);
    }
    const l = line;
    return new Promise<Decision>((resolve, reject) => {
      const w = new Waiter(l, cost, priority, now + this.timeoutMs, signal, resolve, reject);
      this.waiting++;
      this.stats.queued++;
      const isHead = l.push(w);
      if (this.timeoutMs !== Infinity) this.addDeadline(w);
      if (signal !== undefined) {
        w.onAbort = () => this.cancel(w, signal.reason, 'aborted');
        signal.addEventListener('abort', w.onAbort, { once: true });
      }
      if (!isHead || l.pumping) return;
      if (denied !== undefined) this.sleep(l, this.retryMs(denied));
      else this.pump(l);
    });
  }

  /**
   * Waits for the gate, runs `fn`, and returns its result. A concurrency lease is released when `fn`
   * settles, whether it returns or throws.
   */
  async run<T>(key: string, fn: () => T | PromiseLike<T>, options?: WaitOptions): Promise<T> {
    if (typeof fn !== 'function')
      throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `Gate run() needs a function to call, got ${show(fn)}`);
    const d = await this.wait(key, options);
    if (d.leaseId === undefined) return fn();
    try {
      return await fn();
    } finally {
      await this.release(key, d.leaseId);
    }
  }

  /**
   * Ends a concurrency lease and lets the next waiter on the key try at once. A store error here is
   * counted in `stats.storeErrors`, not thrown: the lease then ends by its timeout (the policy's window).
   */
  async release(key: string, leaseId: string): Promise<boolean> {
    let held = false;
    try {
      held = await (this.leases ?? this.limiter).release(key, leaseId);
    } catch {
      this.stats.storeErrors++;
    }
    this.wake(key);
    return held;
  }

  /**
   * Admits nothing on `key` for `ms` (the upstream's Retry-After). Waiters stay in line. In-process only:
   * with a shared store, `observe()` is what tells the other processes.
   */
  pause(key: string, ms: number): void {
    checkKey(key);
    check.nonNegativeNumber(ms, "Gate pause() 'ms'", { orInfinity: true });
    let line = this.lines.get(key);
    if (line === undefined) {
      line = new KeyLine(key);
      this.lines.set(key, line);
    }
    const until = this.clock() + ms;
    if (until <= line.pausedUntil) return;
    line.pausedUntil = until;
    if (line.size > 0 && !line.pumping) this.pump(line);
  }

  /**
   * Aligns the local budget with what the upstream reports. When it says fewer calls are left than the
   * rate policies believe, the difference is charged as a penalty, which every process sharing the store
   * sees. When it says none are left and when it resets, the key pauses until then instead: a penalty
   * would outlast the upstream's reset wherever the local policy forgets more slowly than the upstream
   * (a sliding log against GitHub's fixed hour would stay blocked for an hour). A higher upstream count
   * changes nothing: other clients may share that budget, so it is no licence to speed up.
   *
   * None left and no reset given: the upstream's window is spent and its end unknown, so the key pauses
   * for the longest window of the rate policies (and the margin), the latest the upstream's window (if no
   * longer) can turn.
   * The local window alone is not enough: its boundary is on this process's clock, and when that runs
   * ahead of the upstream's, the local window turns first and the next calls land in the spent one.
   */
  async observe(key: string, upstream: { remaining: number; resetAfterMs?: number | undefined }): Promise<void> {
    checkKey(key);
    const remaining = Math.floor(upstream.remaining);
    if (!Number.isFinite(remaining) || remaining < 0) return;
    const resetAfterMs = upstream.resetAfterMs;
    if (remaining === 0 && resetAfterMs !== undefined && resetAfterMs > 0) {
      this.pause(key, resetAfterMs);
      return;
    }
    if (remaining === 0 && resetAfterMs === undefined && this.rateWindowMs > 0) this.pause(key, this.rateWindowMs);
    const local = await this.limiter.get(key);
    if (local.remaining > remaining) await this.limiter.penalty(key, local.remaining - remaining);
  }

  // ---- the decision loop ----

  /** Decides synchronously if the store can; undefined if it cannot (learnt once). */
  private decideSync(key: string, cost: number): Decision | undefined {
    if (this.sync === false) return undefined;
    try {
      const first = (this.leases ?? this.limiter).limitSync(key, { cost });
      this.sync = true;
      if (this.leases === undefined || !first.allowed) return first;
      const rate = this.limiter.limitSync(key, { cost });
      if (!rate.allowed && first.leaseId !== undefined) this.dropLease(key, first.leaseId);
      return rate.allowed ? withLease(rate, first) : rate;
    } catch (e) {
      if (e instanceof SluiceError && e.code === 'ERR_SLUICE_SYNC_UNSUPPORTED') {
        this.sync = false;
        return undefined;
      }
      throw e;
    }
  }

  /** decideSync for a store that answers asynchronously: the lease first, then the rate policies. */
  private async decideAsync(key: string, cost: number): Promise<Decision> {
    if (this.leases === undefined) return this.limiter.limit(key, { cost });
    const first = await this.leases.limit(key, { cost });
    if (!first.allowed) return first;
    let rate: Decision;
    try {
      rate = await this.limiter.limit(key, { cost });
    } catch (e) {
      if (first.leaseId !== undefined) this.dropLease(key, first.leaseId);
      throw e;
    }
    if (!rate.allowed && first.leaseId !== undefined) this.dropLease(key, first.leaseId);
    return rate.allowed ? withLease(rate, first) : rate;
  }

  /** Hands back a lease taken for a call the rate policies then denied. */
  private dropLease(key: string, leaseId: string): void {
    this.leases!.release(key, leaseId).catch(() => this.stats.storeErrors++);
  }

  /** Runs the key's line until its head is denied (then sleeps) or the line is empty. */
  private pump(line: KeyLine): void {
    if (line.timer !== undefined) {
      this.timers.clearTimeout(line.timer);
      line.timer = undefined;
    }
    line.pumping = true;
    for (;;) {
      const w = line.head();
      if (w === undefined) {
        line.pumping = false;
        this.forget(line);
        return;
      }
      const now = this.clock();
      if (line.pausedUntil > now) {
        line.pumping = false;
        this.sleep(line, line.pausedUntil - now);
        return;
      }
      let d: Decision | undefined;
      try {
        d = this.decideSync(line.key, w.cost);
      } catch (e) {
        this.settle(w);
        w.reject(e);
        continue;
      }
      if (d === undefined) {
        // An async store: one decision in flight per key keeps the line in order.
        w.state = 'deciding';
        this.decideAsync(line.key, w.cost).then(
          (decision) => {
            if (this.apply(line, w, decision)) this.pump(line);
          },
          (e: unknown) => {
            if (!w.cancelled) {
              this.settle(w);
              w.reject(e);
            }
            this.pump(line);
          },
        );
        return;
      }
      if (!this.apply(line, w, d)) return;
    }
  }

  /** Hands a decision to its waiter. Returns whether the loop should go on to the next head. */
  private apply(line: KeyLine, w: Waiter, d: Decision): boolean {
    if (w.cancelled) {
      // The caller left while the store decided. An admission it will never use goes back to the store.
      if (d.allowed) this.refund(line.key, w.cost, d);
      return true;
    }
    if (d.allowed) {
      const now = this.clock();
      if (line.pausedUntil > now) {
        // Decided before the upstream asked for a pause that has begun since: going now would break the
        // pause, so the admission goes back and the call keeps its place until the pause is over.
        this.refund(line.key, w.cost, d);
        w.state = 'queued';
        line.pumping = false;
        this.sleep(line, line.pausedUntil - now);
        return false;
      }
      this.settle(w);
      this.stats.admitted++;
      w.resolve(d);
      return true;
    }
    w.state = 'queued';
    line.pumping = false;
    this.sleep(line, this.retryMs(d));
    return false;
  }

  /** How long a line sleeps after denial `d`. */
  private retryMs(d: Decision): number {
    // Only an async (shared) store reaches here with a lease denial another process may end early.
    if (this.sync === false && this.leasePolicies.has(d.policy)) return Math.min(d.retryAfterMs, this.releasePollMs);
    // A fixed window turns on this process's clock, which may run ahead of the upstream's: its calls wait
    // past the edge by the margin, so they do not land in the upstream's still-spent window.
    if (this.fixedWindows.has(d.policy)) return d.retryAfterMs + this.marginMs;
    return d.retryAfterMs;
  }

  private refund(key: string, cost: number, d: Decision): void {
    this.stats.refunded++;
    const undo = async () => {
      if (d.leaseId !== undefined) await (this.leases ?? this.limiter).release(key, d.leaseId);
      if (cost > 0) await this.limiter.reward(key, cost);
    };
    undo().then(
      () => this.wake(key),
      () => this.stats.storeErrors++,
    );
  }

  /** One timer per key: the head tries again when it can pass (retryAfterMs is at least 1 ms). */
  private sleep(line: KeyLine, ms: number): void {
    if (line.timer !== undefined) this.timers.clearTimeout(line.timer);
    line.timer = this.timers.setTimeout(
      () => {
        line.timer = undefined;
        if (!line.pumping) this.pump(line);
      },
      Math.min(Math.max(1, Math.ceil(ms)), MAX_TIMER_MS),
    );
  }

  /** Something freed capacity on `key` (a release, a refund): let its head try now. */
  private wake(key: string): void {
    const line = this.lines.get(key);
    if (line !== undefined && line.size > 0 && !line.pumping) this.pump(line);
  }

  /** Drops an empty key's line unless it must remember a pause. */
  private forget(line: KeyLine): void {
    if (line.size === 0 && !line.pumping && line.timer === undefined && line.pausedUntil <= this.clock()) {
      this.lines.delete(line.key);
    }
  }

  /** Takes `w` out of every list; it no longer counts towards maxQueue. */
  private settle(w: Waiter): void {
    if (w.state === 'settled') return;
    w.state = 'settled';
    w.line.remove(w);
    this.waiting--;
    if (this.timeoutMs !== Infinity) {
      this.deadlines.remove(w);
      // Nobody left to time out: a pending timer would only keep the process alive for up to timeoutMs.
      if (this.deadlines.head === undefined && this.deadlineTimer !== undefined) {
        this.timers.clearTimeout(this.deadlineTimer);
        this.deadlineTimer = undefined;
      }
    }
    if (w.onAbort !== undefined) w.signal!.removeEventListener('abort', w.onAbort);
  }

  private cancel(w: Waiter, reason: unknown, why: 'aborted' | 'timedOut'): void {
    if (w.state === 'settled') return;
    const line = w.line;
    const wasHead = line.head() === w;
    if (w.state === 'deciding') w.cancelled = true;
    this.settle(w);
    this.stats[why]++;
    w.reject(reason);
    // The next waiter may be cheaper and pass now; or the line is empty and its timer must go.
    if (wasHead && !line.pumping) {
      if (line.size > 0) this.pump(line);
      else {
        if (line.timer !== undefined) this.timers.clearTimeout(line.timer);
        line.timer = undefined;
        this.forget(line);
      }
    }
  }

  // ---- timeouts: one gate-wide timer for the earliest deadline ----

  private addDeadline(w: Waiter): void {
    this.deadlines.push(w);
    if (this.deadlineTimer === undefined) this.armDeadline();
  }

  private armDeadline(): void {
    const first = this.deadlines.head;
    if (first === undefined) return;
    const ms = Math.max(1, Math.ceil(first.deadline - this.clock()));
    this.deadlineTimer = this.timers.setTimeout(() => this.expire(), Math.min(ms, MAX_TIMER_MS));
  }

  private expire(): void {
    this.deadlineTimer = undefined;
    const now = this.clock();
    for (let w = this.deadlines.head; w !== undefined && w.deadline <= now; w = this.deadlines.head) {
      this.cancel(
        w,
        new SluiceError(
          'ERR_SLUICE_QUEUE_TIMEOUT',
          `Gate call on key ${show(w.line.key)} waited ${this.timeoutMs} ms ('timeoutMs') without being admitted; the upstream budget is spent for longer than that`,
        ),
        'timedOut',
      );
    }
    this.armDeadline();
  }
}

/** The rate policies' decision, carrying the lease the concurrency policies gave; the fewer remaining wins. */
function withLease(rate: Decision, lease: Decision): Decision {
  const d = lease.remaining < rate.remaining ? lease : rate;
  return makeDecision({
    allowed: true,
    limit: d.limit,
    remaining: d.remaining,
    resetAfterMs: d.resetAfterMs,
    retryAfterMs: 0,
    delayMs: rate.delayMs,
    policy: d.policy,
    leaseId: lease.leaseId,
    reason: rate.reason ?? lease.reason,
  });
}
