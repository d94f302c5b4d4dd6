// Exact sliding-window measurement: the most cost admitted in any window (t − W, t], from admitted timestamps.

export interface Admission {
  /** When it was admitted (or, for a shaper's output, forwarded), in ms. */
  readonly at: number;
  readonly cost: number;
}

/**
 * The largest total cost in any half-open window (t − windowMs, t]. Only windows ending at an event need
 * checking: sliding the end forward to the next event can only add. Events need not be sorted.
 */
export function maxInWindow(events: readonly Admission[], windowMs: number): number {
  const sorted = [...events].sort((a, b) => a.at - b.at);
  let best = 0;
  let inWindow = 0;
  let oldest = 0;
  for (const event of sorted) {
    inWindow += event.cost;
    while (sorted[oldest]!.at <= event.at - windowMs) inWindow -= sorted[oldest++]!.cost;
    if (inWindow > best) best = inWindow;
  }
  return best;
}

/** The time from the earliest event to the latest, in ms; 0 for none. */
export function spanMs(events: readonly Admission[]): number {
  if (events.length === 0) return 0;
  let first = Infinity;
  let last = -Infinity;
  for (const e of events) {
    if (e.at < first) first = e.at;
    if (e.at > last) last = e.at;
  }
  return last - first;
}
