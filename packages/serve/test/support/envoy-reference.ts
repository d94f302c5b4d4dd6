/**
 * Envoy's wire answer as it was built before rls-proto.ts wrote it directly (envoy-wire.ts's pieces, read
 * per field as the answer is encoded): a whole Envoy-shaped copy of the service's answer, which
 * encodeRateLimitResponse then wrote as it writes sluice's own. Kept as the direct encoder's reference model:
 * src/server/codecs/rls-proto.test.ts holds encodeRateLimitResponse(r, 0, wire, now) to the very bytes of
 * encodeRateLimitResponse(envoyAnswer(r, wire, now)).
 */
import { envoyResetMs } from '../../src/server/codecs/envoy-wire.js';
import type { EnvoyWire } from '../../src/server/codecs/envoy-wire.js';
import type { DescriptorStatus, RlsResponse } from '../../src/server/codecs/rls-types.js';

const NO_HEADERS: readonly (readonly [string, string])[] = Object.freeze([]);

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
