/**
 * Time for the memory store: milliseconds since the epoch, advanced by the monotonic clock. Both clocks
 * read performance.timeOrigin + performance.now(), so windows still align to the epoch, but a wall-clock
 * jump (NTP step, manual change) after start-up moves nothing.
 */
import type { Clock } from './core/types.js';
import { unrefTimer } from './runtime.js';

/**
 * The Performance object, read once: Node's global `performance` is a lazy accessor property, so every
 * read of it would be a global-IC miss plus a getter call. `perf.now()` still calls whatever `now` that object has, so mocking
 * `performance.now` (t.mock.method(performance, 'now')) still reaches both clocks.
 */
const perf = performance;
const origin = perf.timeOrigin;

/**
 * The Date there was at import. Jest's and Vitest's fake timers (@sinonjs/fake-timers) replace the global
 * Date (and swap `performance`, which the reference above never sees): while it is replaced, the default
 * clock reads the fake Date, so a test that fakes time moves the memory store's windows as it moves its
 * own, as express-rate-limit's MemoryStore does. One global read and compare per decision.
 */
const RealDate = Date;

/** Reads the monotonic clock on every call. */
export const monotonicClock: Clock = () => origin + perf.now();

/** Decisions served from one reading at most, when no timer tick comes in between. */
const READS_PER_REFRESH = 64;
/** Idle ticks after which the tick timer stops, so an idle process is not woken 1000 times a second. */
const IDLE_TICKS = 1000;

let cached = 0;
let budget = 0;
let idleTicks = 0;
let ticker: ReturnType<typeof setInterval> | undefined;
/** Set where no timer can be unref'd (Workers): a ticking timer would keep the host busy, so read every time. */
let untickable = false;

function tick(): void {
  if (budget === 0) {
    if (++idleTicks >= IDLE_TICKS) {
      clearInterval(ticker);
      ticker = undefined;
    }
    return;
  }
  idleTicks = 0;
  budget = 0; // the next read refreshes
}

/** Starts the tick timer, unref'd; false (and no timer) where that cannot be done. */
function startTicker(): boolean {
  let t: ReturnType<typeof setInterval>;
  try {
    t = setInterval(tick, 1);
  } catch {
    return false; // workerd refuses timers outside a request
  }
  if (unrefTimer(t)) {
    ticker = t;
    return true;
  }
  clearInterval(t);
  return false;
}

function refresh(): number {
  const now = origin + perf.now();
  if (now > cached) cached = now; // performance.now() is monotonic; this keeps the clock so even if mocked
  if (untickable) return cached;
  if (ticker === undefined && !startTicker()) {
    // Without a tick nothing would bound a cached reading's age, so every read goes to the clock.
    untickable = true;
    return cached;
  }
  budget = READS_PER_REFRESH - 1;
  return cached;
}

/**
 * The default clock: the monotonic clock, read at most once per millisecond tick and at least once every
 * 64 decisions. Like nginx's cached time (ngx_current_msec, refreshed once per event-loop iteration), it
 * saves the clock read on the hot path; the reading it returns is never older than the current
 * event-loop turn plus 1 ms, nor older than 64 decisions. It never goes backwards. A 1 ms unref'd timer
 * runs while decisions are being made and stops after a second without any. Where no timer can be
 * unref'd (Workers), it reads the monotonic clock on every call. While a test's fake timers have replaced
 * `Date` (`jest.useFakeTimers()`, `vi.useFakeTimers()`), it reads `Date.now()` on every call instead.
 */
export const coarseClock: Clock = () => {
  if (Date !== RealDate) return Date.now(); // a test's fake timers: follow them, read by read
  if (budget > 0) {
    budget--;
    return cached;
  }
  return refresh();
};
