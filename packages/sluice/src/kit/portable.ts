/**
 * `sluice/kit` where Node's built-ins are not (Workers, browsers): everything the kit exports but the Redis
 * kit, whose scripts are read from disk and hashed with node:crypto. package.json serves it under the
 * default condition and the full kit (index.ts) under "node" (Node, Bun and Deno), as @sluice/guard and
 * @sluice/pow do with their entries.
 *
 * The full kit: the one seam between the limiter and the products built on it (@sluice/guard, @sluice/pow,
 * @sluice/outbound, @sluice/serve). A product imports the limiter through this entry and nothing else; the
 * layer check (scripts/check-layers.ts) and each product's build (rootDir: src) hold them to it.
 *
 * Each export is a promise: its name, signature and meaning change only with a major version of `sluice`,
 * as the public entries do. What is not here may change in any release. The kit is for sluice's own
 * products; an application wants `sluice`, `sluice/redis` and the middleware entries.
 */

// Errors: one class for every refusal of bad input or state, and the one way values are quoted in messages.
export { show, SluiceError } from '../core/errors.js';
// Option checks: the named checks (positive integer, non-negative number, one of a set, a function, a
// duration, …) every product's options go through, so one kind of bad value is refused in one wording:
// `<field> must be <requirement>, got <value>`, a SluiceError with its code and docs pointer.
export { type CheckOptions, check, type NumberCheckOptions } from '../core/option-checks.js';

// Policies and the algorithms: compiling user options into a checked Policy, and the pure algorithms that
// decide on one state. A product that keeps its own state (the guard's buckets, outbound's gate) decides
// with these exactly as the limiter does.
export {
  ALGORITHMS,
  type Algorithm,
  type AlgorithmName,
  compilePolicy,
  LeaseSet,
  LogState,
  makeDecision,
  type ObjectAlgorithm,
  type PolicyOptions,
  type SlabAlgorithm,
  TokenBucket,
  Verdict,
} from '../core/index.js';
export { createAlgorithm } from '../core/algorithms.js';
export { compilePolicies } from '../core/policy.js';
export type { Clock, Decision, Policy } from '../core/types.js';
export { parseDuration } from '../core/duration.js';
export { branded, brandOf } from '../core/brand.js';
export { isPromise, type MaybePromise, then } from '../core/maybe-promise.js';

// Clocks: a coarse wall clock for windows and a monotonic one for waits; both injectable as `Clock`.
export { coarseClock, monotonicClock } from '../clock.js';

// Runtime shims: what sluice needs from its host, the same on Node, Bun, Deno, Workers and browsers.
export { bytesEqual, emitWarning, nodeEnv, randomBytes, randomUnit, unrefTimer, utf8 } from '../runtime.js';
export { randomInt, seededRandom } from '../support/random.js';

// IP parsing: one parser for every address sluice reads, the prefixes it counts at, and CIDR ranges.
export {
  formatIPv4,
  formatIPv6Groups,
  ipKey,
  IpRanges,
  maskIPv4,
  maskIPv6,
  parseCidr,
  type ParsedIp,
  parseIp,
} from '../core/ip.js';

// Hashes: HMAC-SHA-256 with a prepared key, the puzzle hash of proof of work, SipHash for keyed table
// hashing, and base64url.
export { hmacKey, type HmacKey, hmacSha256, hmacSha256Words, puzzleHash48, puzzleSeed } from '../crypto/sha256.js';
export { sipHash128 } from '../crypto/siphash.js';
export { decodeBase64url, encodeBase64url } from '../crypto/base64url.js';

// The Store contract and the memory store, and the limiter itself.
export type { Store, StoreTable, TableSpec } from '../stores/store.js';
export { MemoryStore } from '../stores/memory.js';
export { Limiter, type LimiterOptions } from '../limiter.js';
export { DeniedKeys } from '../distributed/deny-cache.js';

// Telemetry: the OpenTelemetry meter a product's counters go to, when the app set one.
export { loadOpenTelemetry, openTelemetry, type OpenTelemetryApi, type Telemetry } from '../telemetry.js';
