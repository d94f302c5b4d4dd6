/**
 * The gRPC path as it was before src/server/codecs/rls-proto.ts replaced it, kept as the codec's reference model:
 * protobufjs through @grpc/proto-loader (ShouldRateLimit's serializers) and grpc.ts's fromWire and toWire,
 * which mapped protobufjs's objects to the service's types and back. src/server/codecs/rls-proto.test.ts holds the
 * codec to it; bench/serve/rls-proto.mjs times the codec against it.
 */
import type * as grpc from '@grpc/grpc-js';
import { UNITS } from '../../src/server/codecs/rls-types.js';
import type { UnitName } from '../../src/server/codecs/rls-types.js';
import { BadRequest } from '../../src/server/codecs/rls-types.js';
import type { RequestDescriptor, RlsRequest, RlsResponse } from '../../src/server/codecs/rls-types.js';
import { loadRlsDefinition } from './rls-definition.js';

const pkg = loadRlsDefinition() as unknown as {
  envoy: { service: { ratelimit: { v3: { RateLimitService: grpc.ServiceClientConstructor } } } };
};
/** ShouldRateLimit's protobufjs (de)serializers, as proto-loader builds them. */
export const method = pkg.envoy.service.ratelimit.v3.RateLimitService.service.ShouldRateLimit!;

export interface WireEntry {
  key?: string;
  value?: string;
}
export interface WireDescriptor {
  entries?: WireEntry[];
  limit?: { requests_per_unit?: number; unit?: string } | null;
  hits_addend?: { value?: number } | null;
}
export interface WireRequest {
  domain?: string;
  descriptors?: WireDescriptor[];
  hits_addend?: number;
}

export function fromWire(w: WireRequest): RlsRequest {
  const descriptors: RequestDescriptor[] = (w.descriptors ?? []).map((d, i) => {
    let limit: RequestDescriptor['limit'];
    if (d.limit) {
      const unit = d.limit.unit ?? 'UNKNOWN';
      if (!Object.hasOwn(UNITS, unit))
        throw new BadRequest(
          `descriptors[${i}].limit.unit must be SECOND, MINUTE, HOUR, DAY, MONTH or YEAR, got ${unit}`,
        );
      limit = { requestsPerUnit: d.limit.requests_per_unit ?? 0, unit: unit as UnitName };
    }
    const h = d.hits_addend?.value;
    if (h !== undefined && !Number.isSafeInteger(h))
      throw new BadRequest(`descriptors[${i}].hits_addend is too large: ${h}`);
    return {
      entries: (d.entries ?? []).map((e) => ({ key: e.key ?? '', value: e.value ?? '' })),
      limit,
      hitsAddend: d.hits_addend ? (h ?? 0) : undefined,
    };
  });
  return { domain: w.domain ?? '', descriptors, hitsAddend: w.hits_addend ?? 0 };
}

export function toWire(r: RlsResponse): object {
  return {
    overall_code: r.overallCode,
    statuses: r.statuses.map((s) => ({
      code: s.code,
      current_limit:
        s.currentLimit === undefined
          ? null
          : {
              ...(s.currentLimit.name === '' ? {} : { name: s.currentLimit.name }),
              requests_per_unit: s.currentLimit.requestsPerUnit,
              unit: s.currentLimit.unit,
            },
      limit_remaining: s.limitRemaining,
      duration_until_reset:
        s.durationUntilResetMs === 0
          ? null
          : { seconds: Math.floor(s.durationUntilResetMs / 1000), nanos: (s.durationUntilResetMs % 1000) * 1_000_000 },
    })),
    response_headers_to_add: r.headers.map(([key, value]) => ({ key, value })),
  };
}

/** The bench's golden request: RateLimitRequest {domain: "bench", descriptors: [{entries: [{key: "remote_address", value: "10.0.0.1"}]}]}. */
export const GOLDEN_REQUEST = Buffer.from(
  '0a0562656e6368121c0a1a0a0e72656d6f74655f61646472657373120831302e302e302e31',
  'hex',
);

/** A typical OK answer: one descriptor under a MINUTE limit, with the three RateLimit-* headers. */
export const TYPICAL_ANSWER: RlsResponse = {
  overallCode: 'OK',
  statuses: [
    {
      code: 'OK',
      currentLimit: { name: '', requestsPerUnit: 1000, unit: 'MINUTE', header: '1000, 1000;w=60' },
      limitRemaining: 999,
      durationUntilResetMs: 59_500,
      rule: 'bench.remote_address',
      shadow: false,
    },
  ],
  headers: [
    ['RateLimit-Limit', '1000, 1000;w=60'],
    ['RateLimit-Remaining', '999'],
    ['RateLimit-Reset', '60'],
  ],
  retryAfterMs: 0,
};
