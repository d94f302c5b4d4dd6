// A clock and timers that move only when a test says so, so outbound tests never sleep. `advance()` runs
// due timers in time order (ties in the order they were set) and lets promises settle after each one.
import type { Timers } from '../../src/timers.js';

interface Entry {
  at: number;
  seq: number;
  fn: () => void;
}

export class ManualTime implements Timers {
  now: number;
  private seq = 0;
  private entries: Entry[] = [];
  /** Every delay ever passed to setTimeout, for tests that check how the gate sleeps. */
  readonly requested: number[] = [];

  constructor(start = 1_000_000) {
    this.now = start;
  }

  readonly clock = (): number => this.now;

  setTimeout(fn: () => void, ms: number): unknown {
    const e = { at: this.now + ms, seq: this.seq++, fn };
    this.requested.push(ms);
    this.entries.push(e);
    return e;
  }

  clearTimeout(handle: unknown): void {
    const i = this.entries.indexOf(handle as Entry);
    if (i >= 0) this.entries.splice(i, 1);
  }

  /** Timers set and not yet fired or cleared. */
  get pending(): number {
    return this.entries.length;
  }

  /** Moves time forward by `ms`, firing every timer due on the way. */
  async advance(ms: number): Promise<void> {
    const end = this.now + ms;
    await flush();
    for (;;) {
      let next: Entry | undefined;
      for (const e of this.entries)
        if (e.at <= end && (next === undefined || e.at < next.at || (e.at === next.at && e.seq < next.seq))) next = e;
      if (next === undefined) break;
      this.entries.splice(this.entries.indexOf(next), 1);
      if (next.at > this.now) this.now = next.at;
      next.fn();
      await flush();
    }
    this.now = end;
    await flush();
  }
}

/** Lets every queued promise reaction run. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r));
}
