/**
 * sluice: decide, fast and exactly, whether a request may pass.
 *
 * @example
 * import { Limiter, MemoryStore } from 'sluice';
 * const limiter = new Limiter({
 *   policies: [
 *     { name: 'per-minute', algorithm: 'token-bucket', limit: 100, window: '1m', burst: 20 },
 *     { name: 'per-hour', algorithm: 'fixed-window', limit: 5000, window: '1h' },
 *   ],
 *   store: new MemoryStore({ maxKeys: 1_000_000 }),
 * });
 * const d = await limiter.limit('user:42', { cost: 1 });
 */
export { Limiter, type LimiterOptions, type LimitOptions } from './limiter.js';
export { MemoryStore, type MemoryStoreOptions } from './stores/memory.js';
export type { Strategy } from './distributed/strategy.js';
export type { DenyCacheOptions } from './distributed/deny-cache.js';
export type { LeaseOptions, StrategyStats } from './distributed/lease.js';
export type { LocalSyncOptions } from './distributed/local-sync.js';
export type { RegionsOptions } from './distributed/regions/options.js';
export type { RegionsStats } from './distributed/regions/table.js';
export type { Clock, MaybePromise } from './core/index.js';
export type { Store, StoreTable, TableSpec } from './stores/store.js';
export { coarseClock, monotonicClock } from './clock.js';
export {
  openTelemetry,
  setTelemetry,
  type OpenTelemetryApi,
  type OpenTelemetryMeter,
  type Telemetry,
} from './telemetry.js';
export {
  ALGORITHMS,
  compilePolicy,
  createAlgorithm,
  parseDuration,
  SluiceError,
  type Algorithm,
  type AlgorithmName,
  type Decision,
  type LimitOverride,
  type Policy,
  type PolicyOptions,
  type SluiceErrorCode,
} from './core/index.js';
