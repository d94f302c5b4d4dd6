// The traffic traces `sluice demo` plays through every algorithm: deterministic request times (ms) and costs.
import { randomInt, seededRandom } from 'sluice/kit';
import { LIMIT, WINDOW_MS } from './scale.js';

export interface TraceRequest {
  /** Milliseconds since the trace started; whole, non-decreasing. */
  readonly at: number;
  /** Cost units, a positive integer. */
  readonly cost: number;
}

export interface Trace {
  readonly id: 'steady' | 'bursty' | 'boundary-attack' | 'edge-replay';
  readonly title: string;
  /** One line saying what the traffic is. */
  readonly description: string;
  readonly requests: readonly TraceRequest[];
}

/** The limit's rate, in requests per ms. */
const RATE_PER_MS = LIMIT / WINDOW_MS;

/** `count` requests of cost 1 spread evenly over [from, to), on whole milliseconds. */
function spread(count: number, from: number, to: number): TraceRequest[] {
  return Array.from({ length: count }, (_, i) => ({ at: from + Math.floor((i * (to - from)) / count), cost: 1 }));
}

/** Uniform arrivals at 1.5× the limit's rate for 60 s, each jittered by up to ±40% of the gap. */
export function steadyTrace(): Trace {
  const random = seededRandom(0x5eed_0001);
  const durationMs = 60_000;
  const gapMs = 1 / (1.5 * RATE_PER_MS);
  const count = Math.round(durationMs / gapMs);
  const requests = Array.from({ length: count }, (_, i) => ({
    at: Math.max(0, Math.floor(i * gapMs + (random() - 0.5) * 0.8 * gapMs)),
    cost: 1,
  }));
  requests.sort((a, b) => a.at - b.at);
  return {
    id: 'steady',
    title: 'steady',
    description: `${count} requests over ${durationMs / 1000} s, evenly spaced with jitter: 1.5× the limit's rate`,
    requests,
  };
}

/** Idle gaps of 4–20 s, each followed by a burst of 30–150 requests within 0.2–2 s; one in ten costs 3. */
export function burstyTrace(): Trace {
  const random = seededRandom(0x5eed_0002);
  const requests: TraceRequest[] = [];
  let at = 0;
  for (let burst = 0; burst < 8; burst++) {
    at += randomInt(random, 4_000, 20_000);
    const size = randomInt(random, 30, 150);
    const spanMs = randomInt(random, 200, 2_000);
    for (const r of spread(size, at, at + spanMs)) requests.push({ at: r.at, cost: random() < 0.1 ? 3 : 1 });
    at += spanMs;
  }
  return {
    id: 'bursty',
    title: 'bursty',
    description: `${requests.length} requests in 8 bursts of 30–150 (within 0.2–2 s) after idle gaps of 4–20 s; one in ten costs 3`,
    requests,
  };
}

/** How close to the fixed-window edge the attacker sends: within this many ms either side. */
export const ATTACK_SPAN_MS = 20;

/** The limit's worth of requests in the 20 ms before a fixed-window edge, then again in the 20 ms after it. */
export function boundaryAttackTrace(): Trace {
  const edge = WINDOW_MS;
  return {
    id: 'boundary-attack',
    title: 'boundary attack',
    description: `${LIMIT} requests in the ${ATTACK_SPAN_MS} ms before a fixed-window edge, then ${LIMIT} in the ${ATTACK_SPAN_MS} ms after it`,
    requests: [...spread(LIMIT, edge - ATTACK_SPAN_MS, edge), ...spread(LIMIT, edge, edge + ATTACK_SPAN_MS)],
  };
}

/**
 * The limit's worth just before one window edge, then again just before the next, finishing 21 ms earlier
 * so that the first burst is still inside the true sliding window: what an attacker who knows the window
 * phase gets from each algorithm.
 */
export function edgeReplayTrace(): Trace {
  const first = WINDOW_MS;
  const second = 2 * WINDOW_MS - ATTACK_SPAN_MS - 1;
  return {
    id: 'edge-replay',
    title: 'edge replay',
    description: `${LIMIT} requests in the ${ATTACK_SPAN_MS} ms before a window edge, then ${LIMIT} more ending ${2 * WINDOW_MS - second} ms before the next edge (${(second - first) / 1000} s later)`,
    requests: [...spread(LIMIT, first - ATTACK_SPAN_MS, first), ...spread(LIMIT, second - ATTACK_SPAN_MS, second)],
  };
}

/** Every demo trace, in the order the demo prints them. */
export function demoTraces(): Trace[] {
  return [steadyTrace(), burstyTrace(), boundaryAttackTrace(), edgeReplayTrace()];
}
