/**
 * limitedFetch: a `fetch` that waits at a Gate before every call and adapts to what the upstream answers.
 * - 429, or 503 with Retry-After, or GitHub's 403 with X-RateLimit-Remaining: 0 means "limited": the key
 *   pauses for Retry-After (or until the reset), and an idempotent request is retried, up to `maxRetries`,
 *   no earlier than the upstream asked plus a random share of an exponential backoff (so a fleet that
 *   was told the same Retry-After does not return in one burst).
 * - RateLimit / X-RateLimit headers on any answer go to `gate.observe()`, which charges the difference
 *   when the upstream has fewer calls left than sluice believes.
 * A call is never duplicated: only requests that are idempotent by method, or carry an Idempotency-Key,
 * are retried, and only after an answer that says the upstream refused them.
 */
import { check, show, SluiceError } from 'sluice/kit';
import type { Gate } from './gate.js';
import { parseRateLimit, parseRetryAfter } from './headers.js';

export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

export interface LimitedFetchOptions {
  /** The fetch to call. Default `globalThis.fetch`. */
  fetch?: FetchLike;
  /** Gate cost of a request: a number, or a function of the request. Default 1. */
  cost?: number | ((request: Request) => number);
  /** Gate priority (higher first). Default 0. */
  priority?: number;
  /** Retries of a limited idempotent request. Default 3; 0 never retries. */
  maxRetries?: number;
  /** Base of the jittered exponential backoff added to Retry-After. Default 500 ms. */
  backoffMs?: number;
  /** Cap of one backoff step. Default 30,000 ms. */
  maxBackoffMs?: number;
  /** A Retry-After longer than this is not waited out: the limited response is returned. Default 60,000 ms. */
  maxRetryAfterMs?: number;
  /** Feed RateLimit headers to `gate.observe()`. Default true. */
  observe?: boolean;
  /** Wall clock for HTTP dates and epoch resets. Default Date.now. */
  now?: () => number;
  /** Source of jitter in [0, 1). Default Math.random. */
  random?: () => number;
}

/** RFC 9110 §9.2.2: methods whose repetition has the same effect as one call. */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE']);
const KNOWN = new Set([
  'fetch',
  'cost',
  'priority',
  'maxRetries',
  'backoffMs',
  'maxBackoffMs',
  'maxRetryAfterMs',
  'observe',
  'now',
  'random',
]);

/**
 * Returns a fetch-compatible function whose calls wait at `gate` under `key` (a string, or a function
 * of the request, as the Stripe preset splits reads from writes).
 *
 * @example
 * const gh = limitedFetch(gate, 'github:octocat');
 * const res = await gh('https://api.github.com/user', { headers: { authorization: `Bearer ${token}` } });
 */
export function limitedFetch(
  gate: Gate,
  key: string | ((request: Request) => string),
  options: LimitedFetchOptions = {},
): FetchLike {
  if (typeof key !== 'string' && typeof key !== 'function') {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `limitedFetch 'key' must be a string or a function of the request, got ${show(key)}`,
    );
  }
  for (const field of Object.keys(options)) {
    if (!KNOWN.has(field))
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `unknown limitedFetch option '${field}'; known options are ${[...KNOWN].join(', ')}`,
      );
  }
  const fetchImpl = options.fetch ?? globalThis.fetch;
  if (typeof fetchImpl !== 'function')
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `limitedFetch needs a 'fetch' function; this runtime has no global fetch`,
    );
  const maxRetries = nonNegative('maxRetries', options.maxRetries, 3, true);
  const backoffMs = nonNegative('backoffMs', options.backoffMs, 500);
  const maxBackoffMs = nonNegative('maxBackoffMs', options.maxBackoffMs, 30_000);
  const maxRetryAfterMs = nonNegative('maxRetryAfterMs', options.maxRetryAfterMs, 60_000);
  const cost = options.cost;
  if (cost !== undefined && typeof cost !== 'function')
    check.nonNegativeInteger(cost, "limitedFetch 'cost'", { note: 'or a function of the request' });
  const priority = options.priority ?? 0;
  if (typeof priority !== 'number' || !Number.isSafeInteger(priority)) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `limitedFetch 'priority' must be an integer (higher goes first), got ${show(priority)}`,
    );
  }
  const observe = check.boolean(options.observe ?? true, "limitedFetch 'observe'");
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  const timers = gate.timers;

  return async function sluiceFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
    const request = new Request(input, init);
    const k = typeof key === 'string' ? key : key(request);
    const units = typeof cost === 'function' ? cost(request) : (cost ?? 1);
    const retryable = IDEMPOTENT.has(request.method) || request.headers.has('idempotency-key');
    const signal = request.signal;
    for (let attempt = 0; ; attempt++) {
      const d = await gate.wait(k, { cost: units, priority, signal });
      let res: Response;
      try {
        // Each attempt sends a clone, so a body can be sent again; the original stays unread.
        res = await fetchImpl(retryable && attempt < maxRetries ? request.clone() : request);
      } finally {
        if (d.leaseId !== undefined) await gate.release(k, d.leaseId);
      }
      const wall = now();
      const view = parseRateLimit(res.headers, wall);
      const limited =
        res.status === 429 ||
        (res.status === 503 && res.headers.has('retry-after')) ||
        (res.status === 403 && (view?.remaining === 0 || res.headers.has('retry-after')));
      // How long the upstream wants: Retry-After, else its reset when it reports none left.
      const waitMs = limited
        ? (parseRetryAfter(res.headers.get('retry-after'), wall) ??
          (view?.remaining === 0 ? view.resetAfterMs : undefined))
        : undefined;
      // The pause comes first and synchronously: observe() may await a shared store, and the gate must not
      // admit anything on this key in the meantime.
      if (waitMs !== undefined && waitMs > 0) gate.pause(k, waitMs);
      if (observe && view !== undefined) await gate.observe(k, view).catch(() => gate.stats.storeErrors++);
      if (!limited) return res;
      if (!retryable || attempt >= maxRetries || (waitMs ?? 0) > maxRetryAfterMs) return res;
      await res.body?.cancel().catch(() => {});
      const step = Math.min(maxBackoffMs, backoffMs * 2 ** attempt);
      await sleep(timers, (waitMs ?? 0) + random() * step, signal);
    }
  };
}

function sleep(timers: Gate['timers'], ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      timers.clearTimeout(handle);
      reject(signal.reason);
    };
    const handle = timers.setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, Math.ceil(ms));
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function nonNegative(field: string, value: unknown, fallback: number, integer = false): number {
  if (value === undefined) return fallback;
  const name = `limitedFetch '${field}'`;
  return integer ? check.nonNegativeInteger(value, name) : check.nonNegativeNumber(value, name, { orInfinity: true });
}
