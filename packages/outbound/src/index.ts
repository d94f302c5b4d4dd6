/**
 * `@sluice/outbound`: stay within another service's limits when calling it. `Gate` makes calls wait for
 * the budget (shared across processes with a RedisStore), `limitedFetch` adapts to the upstream's 429s
 * and rate-limit headers, and the presets carry published limits.
 *
 * @example
 * import { Gate, limitedFetch, stripe } from '@sluice/outbound';
 * const preset = stripe({ mode: 'live' });
 * const gate = new Gate({ policies: preset.policies, maxQueue: 10_000, timeoutMs: 30_000 });
 * const stripeFetch = limitedFetch(gate, preset.key);
 */
export { Gate, type GateOptions, type GateStats, type WaitOptions } from './gate.js';
export { realTimers, type Timers } from './timers.js';
export { limitedFetch, type FetchLike, type LimitedFetchOptions } from './fetch.js';
export { parseRateLimit, parseRetryAfter, type UpstreamView } from './headers.js';
export { github, stripe, type GithubPresetOptions, type Preset, type StripePresetOptions } from './presets.js';
