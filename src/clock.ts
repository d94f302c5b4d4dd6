/**
 * Time for the memory store: milliseconds since the epoch, advanced by the monotonic clock. It is read as
 * performance.timeOrigin + performance.now(), so windows still align to the epoch, but a wall-clock jump
 * (NTP step, manual change) after start-up moves nothing.
 */
import type { Clock } from './stores/store.js';

const origin = performance.timeOrigin;

export const monotonicClock: Clock = () => origin + performance.now();
