/**
 * envoyproxy/ratelimit's answer, field for field, from the service's richer one: what `sluice serve` sends
 * over gRPC by default (--answers envoy), so that swapping the service changes nothing Envoy passes on.
 * - duration_until_reset is whole seconds, `unit − now % unit` (its utils.CalculateReset), for every status
 *   with a limit, whatever the algorithm's own reset;
 * - a status over its limit is OVER_LIMIT with limit_remaining 0, a quota_mode status included (the
 *   request passes while some quota is within: the overall code says so);
 * - response_headers_to_add is empty unless LIMIT_RESPONSE_HEADERS_ENABLED, and then holds its three
 *   headers, under its names, for the status closest to its limit (the first over a non-quota limit wins).
 */
import { UNITS } from './rls-types.js';
import type { DescriptorStatus, RlsResponse } from './rls-types.js';

export interface EnvoyWire {
  /** LIMIT_RESPONSE_HEADERS_ENABLED's header names (LIMIT_LIMIT_HEADER, ...); undefined: no headers. */
  readonly headers: { readonly limit: string; readonly remaining: string; readonly reset: string } | undefined;
}

const NO_HEADERS: readonly (readonly [string, string])[] = Object.freeze([]);

/** Envoy's duration_until_reset for a limit of `unit`, in ms (whole seconds); 0 when no unit. */
export function envoyResetMs(s: DescriptorStatus, nowMs: number): number {
  const unit = s.currentLimit?.unit;
  if (unit === undefined || unit === 'UNKNOWN') return 0;
  const seconds = UNITS[unit] / 1000;
  return (seconds - (Math.floor(nowMs / 1000) % seconds)) * 1000;
}

/** The service's answer `r` as envoyproxy/ratelimit would have sent it at `nowMs`. */
export function envoyAnswer(r: RlsResponse, wire: EnvoyWire, nowMs: number): RlsResponse {
  const statuses: DescriptorStatus[] = new Array(r.statuses.length);
  let minimum: DescriptorStatus | undefined;
  let forced = false;
  for (let i = 0; i < r.statuses.length; i++) {
    const s = r.statuses[i]!;
    // over its limit: denied, a quota over (quota_mode), or a shadow-mode rule over (answered OK below)
    const over = s.code === 'OVER_LIMIT' || s.quota === 'over' || s.shadow;
    const e: DescriptorStatus =
      s.currentLimit === undefined
        ? s
        : {
            ...s,
            code: over ? 'OVER_LIMIT' : 'OK',
            limitRemaining: over ? 0 : s.limitRemaining,
            durationUntilResetMs: envoyResetMs(s, nowMs),
          };
    // shadow mode answers OK per status, as Envoy does; so does an unmatched or unlimited descriptor
    statuses[i] = s.shadow ? { ...e, code: 'OK' } : e;
    if (wire.headers === undefined || s.currentLimit === undefined || forced) continue;
    if (s.code === 'OVER_LIMIT' && s.quota === undefined && !s.shadow) {
      minimum = e;
      forced = true;
    } else if (minimum === undefined || e.limitRemaining < minimum.limitRemaining) minimum = e;
  }
  let headers = NO_HEADERS;
  if (wire.headers !== undefined && minimum !== undefined) {
    const h = wire.headers;
    headers = [
      [h.limit, String(minimum.currentLimit!.requestsPerUnit)],
      [h.remaining, String(minimum.limitRemaining)],
      [h.reset, String(minimum.durationUntilResetMs / 1000)],
    ];
  }
  return { overallCode: r.overallCode, statuses, headers, retryAfterMs: r.retryAfterMs };
}
