// The one policy scale every algorithm in `sluice demo` is held to, so that their numbers compare.

/** Requests (cost units) per window. */
export const LIMIT = 100;
/** The window, in ms: 10 s. */
export const WINDOW_MS = 10_000;
/** Bucket capacity (token-bucket, gcra, leaky-bucket): back-to-back requests from idle; the default, = LIMIT. */
export const BURST = LIMIT;

/**
 * Where trace time 0 sits on the limiters' clock: a realistic epoch instant that is a multiple of the window,
 * so a trace time that is a multiple of WINDOW_MS is exactly a fixed-window edge.
 */
export const EPOCH_MS = 1_700_000_000_000;

/**
 * The concurrency limiter bounds requests in flight, not a rate. Each admitted request holds its lease for
 * HOLD_MS and is then released; by Little's law IN_FLIGHT / HOLD_MS = 10 per second, the same rate as
 * LIMIT / WINDOW_MS. The lease timeout is longer than the hold, so leases end by release, never by timeout.
 */
export const CONCURRENCY = { inFlight: 10, holdMs: 1_000, leaseTimeoutMs: 30_000 } as const;
