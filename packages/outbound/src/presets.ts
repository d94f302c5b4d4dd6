/**
 * Published limits of well-known APIs, as Gate policies plus a key function for limitedFetch. Each cites
 * its source; upstreams change their limits, and limitedFetch's header handling covers what a preset
 * does not know (a lowered limit, other clients on the same account).
 */
import type { PolicyOptions } from 'sluice/kit';

export interface Preset {
  readonly policies: PolicyOptions[];
  /** The Gate key for a request (limitedFetch's second argument). */
  readonly key: (request: Request) => string;
  /** Where the numbers come from. */
  readonly source: string;
}

/** Stripe counts GET (and HEAD, OPTIONS) as reads and everything else as writes. */
const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

export interface StripePresetOptions {
  /** 'live' (default) or 'test' (sandbox). */
  mode?: 'live' | 'test';
  /** Names the account in the key, for apps that call Stripe for several accounts. Default 'default'. */
  account?: string;
  /**
   * Calls sent back to back from idle. Default 90% of the per-second limit: Stripe publishes the rate but
   * not its bucket size, and calls admitted here reach Stripe after a variable network delay; the 10%
   * left over absorbs 100 ms of such jitter at the full rate.
   */
  burst?: number;
}

/**
 * Stripe's basic rate limiter: per account, 100 read and 100 write operations per second in live mode,
 * 25 and 25 in test mode (sandbox). Source: https://docs.stripe.com/rate-limits ("Rate limiter"),
 * read 2026-11. Reads and writes get separate keys, so each has its own budget. Endpoint-specific limits
 * (Files API 20/s, Search 20/s, 25/s per endpoint by default, ...) are stricter and not modelled here:
 * limitedFetch's 429 handling covers them.
 */
export function stripe(options: StripePresetOptions = {}): Preset {
  const mode = options.mode ?? 'live';
  const limit = mode === 'live' ? 100 : 25;
  const account = options.account ?? 'default';
  return {
    policies: [
      {
        name: `stripe-${mode}`,
        algorithm: 'token-bucket',
        limit,
        window: '1s',
        burst: options.burst ?? Math.floor(limit * 0.9),
      },
    ],
    key: (request) => `stripe:${mode}:${account}:${READS.has(request.method) ? 'read' : 'write'}`,
    source: 'https://docs.stripe.com/rate-limits',
  };
}

export interface GithubPresetOptions {
  /** 'token' (default: a personal access token, OAuth or GitHub App user token) or 'unauthenticated'. */
  auth?: 'token' | 'unauthenticated';
  /** Names the user or token in the key. Default 'default'. */
  account?: string;
}

/**
 * GitHub REST API primary limit: 5,000 requests per hour per authenticated user (60 per hour per IP
 * unauthenticated), and the secondary limit "no more than 100 concurrent requests". Source:
 * https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api, read 2026-11.
 * The hourly budget is a sliding log: GitHub's hour starts at a time of its choosing, and only a log
 * keeps every hour, however aligned, within the limit. X-RateLimit-Remaining then reconciles with calls
 * made by other clients of the same token. The per-endpoint secondary limit (900 points per minute,
 * GET 1 point, writes 5) weights methods differently from the hourly count and is left to the 403/429
 * Retry-After handling.
 */
export function github(options: GithubPresetOptions = {}): Preset {
  const auth = options.auth ?? 'token';
  const account = options.account ?? 'default';
  return {
    policies: [
      { name: 'github-hourly', algorithm: 'sliding-log', limit: auth === 'token' ? 5000 : 60, window: '1h' },
      // The lease outlives any sane request; a crashed process frees its slots after a minute.
      { name: 'github-concurrent', algorithm: 'concurrency', limit: 100, window: '1m' },
    ],
    key: () => `github:${auth}:${account}`,
    source: 'https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api',
  };
}
