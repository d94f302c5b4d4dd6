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
import type { Code, DescriptorStatus } from './rls-types.js';

export interface EnvoyWire {
  /** LIMIT_RESPONSE_HEADERS_ENABLED's header names (LIMIT_LIMIT_HEADER, ...); undefined: no headers. */
  readonly headers: { readonly limit: string; readonly remaining: string; readonly reset: string } | undefined;
}

const NO_HEADERS: readonly (readonly [string, string])[] = Object.freeze([]);

// Each field of a status on its own, read as rls-proto.ts writes it: the answer is encoded straight from the
// service's statuses, with no Envoy-shaped copy of them in between.

/** Over its limit, as Envoy counts it: denied, a quota over (quota_mode), or a shadow-mode rule over (answered OK). */
function over(s: DescriptorStatus): boolean {
  return s.code === 'OVER_LIMIT' || s.quota === 'over' || s.shadow;
}

/** A status's code: OVER_LIMIT when over a limit; shadow mode answers OK, as Envoy does, and so does an unmatched or unlimited descriptor. */
export function envoyCode(s: DescriptorStatus): Code {
  if (s.shadow) return 'OK';
  return s.currentLimit !== undefined && over(s) ? 'OVER_LIMIT' : s.code;
}

/** A status's limit_remaining: 0 when over a limit. */
export function envoyRemaining(s: DescriptorStatus): number {
  return s.currentLimit !== undefined && over(s) ? 0 : s.limitRemaining;
}

/** A status's duration_until_reset, in ms: envoyResetMs for a status with a limit, else the service's own (0). */
export function envoyDurationMs(s: DescriptorStatus, nowMs: number): number {
  return s.currentLimit === undefined ? s.durationUntilResetMs : envoyResetMs(s, nowMs);
}

/** Envoy's duration_until_reset for a limit of `unit`, in ms (whole seconds); 0 when no unit. */
export function envoyResetMs(s: DescriptorStatus, nowMs: number): number {
  const unit = s.currentLimit?.unit;
  if (unit === undefined || unit === 'UNKNOWN') return 0;
  const seconds = UNITS[unit] / 1000;
  const now = Math.floor(nowMs / 1000);
  // now % seconds without `%`, which on numbers past the small integers (epoch seconds are) is a call into C.
  return (seconds - (now - Math.floor(now / seconds) * seconds)) * 1000;
}

/** response_headers_to_add at `nowMs`: none unless `wire` names them, then those of the status closest to its limit. */
export function envoyHeaders(
  statuses: readonly DescriptorStatus[],
  wire: EnvoyWire,
  nowMs: number,
): readonly (readonly [string, string])[] {
  const h = wire.headers;
  if (h === undefined) return NO_HEADERS;
  let minimum: DescriptorStatus | undefined;
  for (let i = 0; i < statuses.length; i++) {
    const s = statuses[i]!;
    if (s.currentLimit === undefined) continue;
    if (s.code === 'OVER_LIMIT' && s.quota === undefined && !s.shadow) {
      minimum = s; // a denial by an enforced limit wins
      break;
    }
    if (minimum === undefined || envoyRemaining(s) < envoyRemaining(minimum)) minimum = s;
  }
  if (minimum === undefined) return NO_HEADERS;
  return [
    [h.limit, String(minimum.currentLimit!.requestsPerUnit)],
    [h.remaining, String(envoyRemaining(minimum))],
    [h.reset, String(envoyResetMs(minimum, nowMs) / 1000)],
  ];
}
