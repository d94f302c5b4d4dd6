/**
 * The Gate's waiting lines: per key, one FIFO lane per priority (higher first), and across the gate one
 * list in deadline order. Both are intrusive doubly linked lists, so a cancelled waiter leaves either in
 * O(1) and a settled waiter holds no memory anywhere.
 */
import type { Decision } from 'sluice/kit';

/** queued: in line; deciding: the store is deciding it now (async stores); settled: resolved or rejected. */
export type WaiterState = 'queued' | 'deciding' | 'settled';

export class Waiter {
  state: WaiterState = 'queued';
  /** Set when the waiter was cancelled while the store was deciding it: an admission must be refunded. */
  cancelled = false;
  // lane links
  prev: Waiter | undefined;
  next: Waiter | undefined;
  // deadline-list links
  dPrev: Waiter | undefined;
  dNext: Waiter | undefined;
  lane: Lane | undefined;
  onAbort: (() => void) | undefined;

  constructor(
    readonly line: KeyLine,
    readonly cost: number,
    readonly priority: number,
    readonly deadline: number,
    readonly signal: AbortSignal | undefined,
    readonly resolve: (d: Decision) => void,
    readonly reject: (e: unknown) => void,
  ) {}
}

export class Lane {
  head: Waiter | undefined;
  tail: Waiter | undefined;
  constructor(readonly priority: number) {}
}

/** One key's line: lanes sorted by priority, highest first, and the key's single wake-up timer. */
export class KeyLine {
  readonly lanes: Lane[] = [];
  size = 0;
  /** A decision loop is running (or awaiting an async store) for this key. */
  pumping = false;
  /** The key's one timer: set while the head waits for retryAfterMs or a pause. */
  timer: unknown = undefined;
  /** Nothing on this key is admitted before this time (upstream said so). */
  pausedUntil = -Infinity;

  constructor(readonly key: string) {}

  head(): Waiter | undefined {
    for (const lane of this.lanes) if (lane.head !== undefined) return lane.head;
    return undefined;
  }

  /** Appends `w` at the end of its priority's lane. Returns whether it is now the head of the line. */
  push(w: Waiter): boolean {
    let i = 0;
    while (i < this.lanes.length && this.lanes[i]!.priority > w.priority) i++;
    let lane = this.lanes[i];
    if (lane === undefined || lane.priority !== w.priority) {
      lane = new Lane(w.priority);
      this.lanes.splice(i, 0, lane);
    }
    w.lane = lane;
    w.prev = lane.tail;
    if (lane.tail === undefined) lane.head = w;
    else lane.tail.next = w;
    lane.tail = w;
    this.size++;
    return this.head() === w;
  }

  remove(w: Waiter): void {
    const lane = w.lane;
    if (lane === undefined) return;
    if (w.prev === undefined) lane.head = w.next;
    else w.prev.next = w.next;
    if (w.next === undefined) lane.tail = w.prev;
    else w.next.prev = w.prev;
    w.prev = w.next = w.lane = undefined;
    this.size--;
    // Empty lanes are dropped so that a key that saw many priorities does not keep scanning them.
    if (lane.head === undefined) this.lanes.splice(this.lanes.indexOf(lane), 1);
  }
}

/** Every waiter of a gate in enqueue order, which is deadline order since the timeout is one constant. */
export class DeadlineList {
  head: Waiter | undefined;
  tail: Waiter | undefined;

  push(w: Waiter): void {
    w.dPrev = this.tail;
    if (this.tail === undefined) this.head = w;
    else this.tail.dNext = w;
    this.tail = w;
  }

  remove(w: Waiter): void {
    if (w.dPrev === undefined) {
      if (this.head !== w) return; // not in the list
      this.head = w.dNext;
    } else {
      w.dPrev.dNext = w.dNext;
    }
    if (w.dNext === undefined) this.tail = w.dPrev;
    else w.dNext.dPrev = w.dPrev;
    w.dPrev = w.dNext = undefined;
  }
}
