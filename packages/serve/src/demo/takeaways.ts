// One-line conclusions per trace, computed from the measured numbers rather than written in advance.
import type { Measurement } from './compare.js';
import { LIMIT, WINDOW_MS } from './scale.js';
import type { Trace } from './traces.js';
import { spanMs } from './window-count.js';

/** "2.00×": a count as a multiple of the limit. */
export function timesLimit(count: number): string {
  return `${(count / LIMIT).toFixed(2)}×`;
}

function find(results: readonly Measurement[], label: string): Measurement {
  const found = results.find((m) => m.label === label);
  if (found === undefined) throw new Error(`sluice demo: no measurement labelled ${JSON.stringify(label)}`);
  return found;
}

/** The rate limiters: every contender but concurrency, which bounds requests in flight instead. */
function rateLimiters(results: readonly Measurement[]): Measurement[] {
  return results.filter((m) => m.algorithm !== 'concurrency');
}

/** "a, b and c". */
function listOf(labels: readonly string[]): string {
  return labels.length <= 1 ? (labels[0] ?? 'none') : `${labels.slice(0, -1).join(', ')} and ${labels.at(-1)}`;
}

function steady(results: readonly Measurement[]): string {
  const log = find(results, 'sliding-log');
  const bucket = find(results, 'token-bucket');
  const counters = ['fixed-window', 'sliding-window k=1', 'sliding-window k=10'].map((l) => find(results, l));
  const worstCounter = Math.max(...counters.map((m) => m.maxInWindow));
  return (
    `the buckets admitted ${bucket.admitted} (a full burst, then the rate) and up to ${bucket.maxInWindow} in one true window; ` +
    `the window counters stayed within ${worstCounter - LIMIT} of the limit; sliding-log never more than ${log.maxInWindow}.`
  );
}

function bursty(results: readonly Measurement[]): string {
  const worst = rateLimiters(results).reduce((a, b) => (b.maxInWindow > a.maxInWindow ? b : a));
  const held = rateLimiters(results)
    .filter((m) => m.maxInWindow <= LIMIT)
    .map((m) => m.label);
  return (
    `after idle gaps, ${worst.label} let ${worst.maxInWindow} through in one true window (${timesLimit(worst.maxInWindow)}); ` +
    `only ${listOf(held)} never exceeded ${LIMIT}.`
  );
}

function boundaryAttack(results: readonly Measurement[]): string {
  const fixed = find(results, 'fixed-window');
  const log = find(results, 'sliding-log');
  const others = rateLimiters(results).filter((m) => m !== fixed);
  const worstOther = Math.max(...others.map((m) => m.maxInWindow));
  return (
    `fixed-window admitted ${fixed.admitted} in ${spanMs(fixed.admissions) + 1} ms spanning the edge = ${timesLimit(fixed.maxInWindow)} the limit; ` +
    `sliding-log never more than ${log.maxInWindow}, and no other algorithm more than ${worstOther}.`
  );
}

function edgeReplay(results: readonly Measurement[]): string {
  const limiters = rateLimiters(results);
  const over = limiters.filter((m) => m.maxInWindow > LIMIT);
  const held = limiters.filter((m) => m.maxInWindow <= LIMIT).map((m) => m.label);
  const least = Math.min(...over.map((m) => m.maxInWindow));
  const most = Math.max(...over.map((m) => m.maxInWindow));
  return (
    `${over.length} of the ${limiters.length} rate limiters let ${least}–${most} through in one true ${WINDOW_MS / 1000} s window ` +
    `(up to ${timesLimit(most)}); only ${listOf(held)} held the limit.`
  );
}

const BY_TRACE: Record<Trace['id'], (results: readonly Measurement[]) => string> = {
  steady,
  bursty,
  'boundary-attack': boundaryAttack,
  'edge-replay': edgeReplay,
};

export function takeaway(trace: Trace, results: readonly Measurement[]): string {
  return BY_TRACE[trace.id](results);
}

/** What the shaper's output looks like: it admits as gcra does, but forwards each request delayMs later. */
export function shaperNote(results: readonly Measurement[]): string {
  const shaper = find(results, 'leaky-bucket shaper');
  return (
    `leaky-bucket shaper forwards each admitted request delayMs later (max ${shaper.maxDelayMs} ms): its output never ` +
    `exceeded ${shaper.forwardedMaxInWindow} in any ${WINDOW_MS / 1000} s or ${shaper.forwardedMaxInShortWindow} in any 1 s.`
  );
}
