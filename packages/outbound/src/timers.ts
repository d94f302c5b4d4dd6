/** The timer seam of the outbound layer: real timers by default, a manual scheduler in tests. */

export interface Timers {
  /** Calls `fn` once after `ms` milliseconds; returns a handle for clearTimeout. */
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Node's timers. They are ref'd on purpose: a process with callers waiting at the gate must not exit. */
export const realTimers: Timers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};
