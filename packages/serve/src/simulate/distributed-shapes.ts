// The traffic shapes of `sluice simulate distributed`: keys, per-key limits and offered rates, split
// evenly over the nodes. Every shape offers more than its limits at some point, so both over- and
// under-admission can show.
export type ShapeName = 'uniform' | 'hot-key' | 'bursts' | 'node-killed';
export const SHAPES: readonly ShapeName[] = ['uniform', 'hot-key', 'bursts', 'node-killed'];

export interface Shape {
  readonly name: ShapeName;
  readonly keys: number;
  /** Per key, per 1 s fixed window. */
  readonly limit: number;
  /** Requests per second offered by all nodes together, while on. */
  readonly rate: number;
  /** Whether traffic is on at `msIntoSecond` (bursts: the first 250 ms of each second). */
  on(msIntoSecond: number): boolean;
  /** Node 0 is SIGKILLed at this fraction of the run. */
  readonly killAt: number | undefined;
}

export const WINDOW_MS = 1000;

export function shape(name: ShapeName): Shape {
  switch (name) {
    case 'uniform': // 200 keys, each offered 1.2× its limit
      return { name, keys: 200, limit: 50, rate: 12_000, on: () => true, killAt: undefined };
    case 'hot-key': // one key offered 2× its limit
      return { name, keys: 1, limit: 10_000, rate: 20_000, on: () => true, killAt: undefined };
    case 'bursts': // 10 keys, each offered 2× its limit within the first quarter of every second
      return { name, keys: 10, limit: 200, rate: 16_000, on: (ms) => ms < 250, killAt: undefined };
    case 'node-killed': // hot-key, and node 0 dies at 40% of the run
      return { name, keys: 1, limit: 10_000, rate: 20_000, on: () => true, killAt: 0.4 };
  }
}
