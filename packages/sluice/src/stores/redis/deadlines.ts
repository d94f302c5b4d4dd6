/**
 * The timeouts of one connection's calls: one timer for all of them instead of one per call. A
 * connection's timeout is one constant, so deadlines come in the order calls are sent, and a FIFO holds
 * them. At one call in flight, a timer per call (set, then cleared by the answer) cost about a sixth of
 * the store's own CPU per decision.
 */
import { realClearTimeout, realPerformanceNow, realSetTimeout } from '../../runtime.js';

/** A call awaiting its answer. */
export interface Pending {
  /** realPerformanceNow() at which it expires. */
  readonly deadline: number;
  /** Answered or expired: either way, the deadline is done with it. */
  settled: boolean;
  /** The timer of a deadline given by extend(), which the FIFO then passes over. */
  extended?: ReturnType<typeof setTimeout>;
}

export class Deadlines<P extends Pending> {
  private queue: Array<P | undefined> = [];
  private head = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly sweepNow = () => this.sweep();

  /** `expire` is called once for each call that is still unsettled at its deadline (already marked settled). */
  constructor(
    private readonly timeoutMs: number,
    private readonly expire: (call: P) => void,
  ) {}

  /** The deadline of a call sent now. */
  deadline(): number {
    return realPerformanceNow() + this.timeoutMs;
  }

  add(call: P): void {
    const q = this.queue;
    while (this.head < q.length && done(q[this.head]!)) q[this.head++] = undefined; // answered in time
    if (this.head === q.length) {
      q.length = 0;
      this.head = 0;
    }
    q.push(call);
    if (this.timer === undefined) this.timer = realSetTimeout(this.sweepNow, this.timeoutMs);
    else this.timer.ref(); // it may have been let go by settle()
  }

  /** Marks a call answered; with none left unanswered, the timer no longer keeps the process alive. */
  settle(call: P, inFlight: number): void {
    call.settled = true;
    if (call.extended !== undefined) realClearTimeout(call.extended);
    if (inFlight === 0) this.timer?.unref();
  }

  /**
   * Gives an unsettled call until `ms` from now instead of its deadline, on a timer of its own: the FIFO
   * holds deadlines in the order calls were sent, which one set later would break. For a call Redis
   * answered that it lacks the script, whose reload and retry may take longer than a call.
   */
  extend(call: P, ms: number): void {
    if (call.settled) return;
    if (call.extended !== undefined) realClearTimeout(call.extended);
    call.extended = realSetTimeout(() => {
      if (call.settled) return;
      call.settled = true;
      this.expire(call);
    }, ms);
  }

  private sweep(): void {
    this.timer = undefined;
    const now = realPerformanceNow();
    const q = this.queue;
    while (this.head < q.length) {
      const call = q[this.head]!;
      if (!done(call)) {
        if (call.deadline > now) break;
        call.settled = true;
        this.expire(call);
      }
      q[this.head++] = undefined;
    }
    if (this.head === q.length) {
      q.length = 0;
      this.head = 0;
      return;
    }
    if (this.head > 1024) {
      this.queue = q.slice(this.head);
      this.head = 0;
    }
    this.timer = realSetTimeout(this.sweepNow, Math.max(1, Math.ceil(this.queue[this.head]!.deadline - now)));
  }
}

/** Whether the FIFO is done with a call: answered, expired, or given a deadline of its own. */
function done(call: Pending): boolean {
  return call.settled || call.extended !== undefined;
}
