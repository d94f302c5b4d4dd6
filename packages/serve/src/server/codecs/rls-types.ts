/**
 * ShouldRateLimit's request and answer as the service and every transport share them: the codecs decode
 * into an RlsRequest and render an RlsResponse (the service's own Answer, whose headers are built on first
 * read), and throw BadRequest for what no request may be; with Envoy's units and a descriptor's entry, which
 * the config reads too. Here, not in service.ts or config/, so that a codec needs nothing of the service
 * (the layer check holds codecs/ to it).
 */
import { integerText } from './number-text.js';

/** Envoy's RateLimitResponse.RateLimit.Unit, by name, with its length (ratelimit's UnitToDivider). */
export const UNITS = {
  SECOND: 1_000,
  MINUTE: 60_000,
  HOUR: 3_600_000,
  DAY: 86_400_000,
  WEEK: 7 * 86_400_000,
  MONTH: 30 * 86_400_000,
  YEAR: 365 * 86_400_000,
} as const;
export type UnitName = keyof typeof UNITS;

/** One entry of a descriptor: `remote_address` = `10.0.0.1`. */
export interface Entry {
  readonly key: string;
  readonly value: string;
}

export interface RequestDescriptor {
  readonly entries: readonly Entry[];
  /** Envoy's per-descriptor limit override. */
  readonly limit?: { readonly requestsPerUnit: number; readonly unit: UnitName } | undefined;
  /** Per-descriptor hits; overrides the request's. */
  readonly hitsAddend?: number | undefined;
}

export interface RlsRequest {
  readonly domain: string;
  readonly descriptors: readonly RequestDescriptor[];
  /** 0 means 1, as in Envoy. */
  readonly hitsAddend: number;
}

export type Code = 'OK' | 'OVER_LIMIT';

export interface CurrentLimit {
  readonly name: string;
  readonly requestsPerUnit: number;
  readonly unit: UnitName | 'UNKNOWN';
  /** The RateLimit-Limit header value, built once per limit rather than per answer. */
  readonly header: string;
}

export interface DescriptorStatus {
  readonly code: Code;
  /** The limit that decided, as Envoy reports it; undefined when no rule matched, or unlimited. */
  readonly currentLimit: CurrentLimit | undefined;
  readonly limitRemaining: number;
  /** OVER_LIMIT: until a retry of the same hits can pass. OK: until the rule's state for this key is as if unused. */
  readonly durationUntilResetMs: number;
  /** The rule id (Envoy's stats key), or undefined when no rule matched. */
  readonly rule: string | undefined;
  /** Over the limit but answered OK: the rule is in shadow mode. */
  readonly shadow: boolean;
  /** Set for a `quota_mode` rule: whether it is within or over its limit (over answers OK unless every quota is over). */
  readonly quota?: 'within' | 'over';
  /**
   * Why the rule did not decide as usual: 'cost-exceeds-capacity' when an OVER_LIMIT can never turn OK (the
   * hits are more than the rule ever admits; durationUntilResetMs is then 0: no wait helps); the store's
   * reason when its failure policy or a full memory store answered ('store-error', 'store-full'), allowed
   * or not. Undefined for an ordinary decision.
   */
  readonly reason?: StatusReason | StoreReason | undefined;
}

export type StatusReason = 'cost-exceeds-capacity';
/** A decision the store made instead of the rule (the library's Decision.reason): its failure policy, or a full memory store. */
export type StoreReason = string;

export interface RlsResponse {
  readonly overallCode: Code;
  readonly statuses: readonly DescriptorStatus[];
  /** RateLimit-* headers for the most restrictive limit, plus Retry-After when over. */
  readonly headers: readonly (readonly [string, string])[];
  /** For HTTP answers: the longest wait any over-limit descriptor asks for. */
  readonly retryAfterMs: number;
  /**
   * 'cost-exceeds-capacity' when some descriptor's hits are more than its rule ever admits: the request can
   * never pass, so the answer carries no Retry-After.
   */
  readonly reason?: StatusReason | undefined;
  /**
   * Set when some descriptor was decided by the store instead of its rule (its failure policy while Redis is
   * unreachable: 'store-error'; a full memory store: 'store-full'), allowed or not.
   */
  readonly storeReason?: StoreReason | undefined;
}

/** A request the service cannot decide: rendered as 400 or gRPC INVALID_ARGUMENT with this message. */
export class BadRequest extends Error {
  override readonly name = 'BadRequest';
}

/** The store failed and no failure policy answered: 503 or gRPC UNAVAILABLE. */
export class StoreUnavailable extends Error {
  override readonly name = 'StoreUnavailable';
}

/** uint32's largest value: Envoy's limit_remaining for an unlimited rule, and the largest hits_addend. */
export const MAX_UINT32 = 4_294_967_295;

/**
 * The service's own RlsResponse. Its headers are built on first read: /json's common answer is rendered
 * from `tightest` directly (json-render.ts), and building four small arrays and two number texts that
 * nothing reads cost about as much as rendering them.
 */
export class Answer implements RlsResponse {
  private built: readonly (readonly [string, string])[] | undefined = undefined;

  constructor(
    readonly overallCode: Code,
    readonly statuses: readonly DescriptorStatus[],
    /** The status the RateLimit headers describe: the one with a limit and the least remaining. */
    readonly tightest: DescriptorStatus | undefined,
    readonly retryAfterMs: number,
    /** Whether the headers carry Retry-After (not when global shadow mode answered OK, nor when no wait helps). */
    private readonly retryAfter: boolean,
    readonly reason: StatusReason | undefined = undefined,
    readonly storeReason: StoreReason | undefined = undefined,
  ) {}

  get headers(): readonly (readonly [string, string])[] {
    return (this.built ??= rateLimitHeaders(this.tightest, this.retryAfter, this.retryAfterMs));
  }
}

/** Envoy ratelimit's response headers (draft-03 names), for the descriptor with the least remaining. */
function rateLimitHeaders(s: DescriptorStatus | undefined, over: boolean, retryAfterMs: number): [string, string][] {
  const h: [string, string][] = [];
  if (s !== undefined && s.currentLimit !== undefined) {
    h.push(
      ['RateLimit-Limit', s.currentLimit.header],
      ['RateLimit-Remaining', integerText(s.limitRemaining)],
      ['RateLimit-Reset', resetSeconds(s)],
    );
  }
  if (over) h.push(['Retry-After', String(Math.max(1, Math.ceil(retryAfterMs / 1000)))]);
  return h;
}

/** RateLimit-Reset's value: whole seconds until the status's reset, rounded up. */
export function resetSeconds(s: DescriptorStatus): string {
  return String(Math.ceil(s.durationUntilResetMs / 1000));
}
