/**
 * Envoy's RateLimitService over gRPC (@grpc/grpc-js), from the .proto subset in proto/. A request that does
 * not decode, or that the service rejects, gets INVALID_ARGUMENT naming the problem; a store failure with no
 * failure policy gets UNAVAILABLE, which Envoy's `failure_mode_deny` then decides on.
 */
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import type { Logger } from 'pino';
import { UNITS } from './config.js';
import type { UnitName } from './config.js';
import { BadRequest, StoreUnavailable } from './service.js';
import type { RateLimitService, RequestDescriptor, RlsRequest, RlsResponse } from './service.js';

/** The proto/ folder at the package root: two levels up from both src/server/ and dist/server/. */
export const PROTO_ROOT = fileURLToPath(new URL('../../proto/', import.meta.url));
export const RLS_PROTO = 'envoy/service/ratelimit/v3/rls.proto';

export function loadRlsDefinition(): grpc.GrpcObject {
  const def = loadSync(RLS_PROTO, { includeDirs: [PROTO_ROOT], keepCase: true, longs: Number, enums: String, defaults: false, oneofs: true });
  return grpc.loadPackageDefinition(def);
}

interface WireEntry {
  key?: string;
  value?: string;
}
interface WireDescriptor {
  entries?: WireEntry[];
  limit?: { requests_per_unit?: number; unit?: string } | null;
  hits_addend?: { value?: number } | null;
}
interface WireRequest {
  domain?: string;
  descriptors?: WireDescriptor[];
  hits_addend?: number;
  /** Set by our deserializer wrapper when the bytes are not a RateLimitRequest. */
  decodeError?: string;
}

export function fromWire(w: WireRequest): RlsRequest {
  const descriptors: RequestDescriptor[] = (w.descriptors ?? []).map((d, i) => {
    let limit: RequestDescriptor['limit'];
    if (d.limit) {
      const unit = d.limit.unit ?? 'UNKNOWN';
      if (!Object.hasOwn(UNITS, unit)) throw new BadRequest(`descriptors[${i}].limit.unit must be SECOND, MINUTE, HOUR, DAY, MONTH or YEAR, got ${unit}`);
      limit = { requestsPerUnit: d.limit.requests_per_unit ?? 0, unit: unit as UnitName };
    }
    const h = d.hits_addend?.value;
    if (h !== undefined && !Number.isSafeInteger(h)) throw new BadRequest(`descriptors[${i}].hits_addend is too large: ${h}`);
    return { entries: (d.entries ?? []).map((e) => ({ key: e.key ?? '', value: e.value ?? '' })), limit, hitsAddend: d.hits_addend ? (h ?? 0) : undefined };
  });
  return { domain: w.domain ?? '', descriptors, hitsAddend: w.hits_addend ?? 0 };
}

export function toWire(r: RlsResponse): object {
  return {
    overall_code: r.overallCode,
    statuses: r.statuses.map((s) => ({
      code: s.code,
      // proto3 leaves default values off the wire; protobufjs writes whatever is set, so set only non-defaults.
      current_limit: s.currentLimit === undefined ? null : { ...(s.currentLimit.name === '' ? {} : { name: s.currentLimit.name }), requests_per_unit: s.currentLimit.requestsPerUnit, unit: s.currentLimit.unit },
      limit_remaining: s.limitRemaining,
      duration_until_reset: s.durationUntilResetMs === 0 ? null : { seconds: Math.floor(s.durationUntilResetMs / 1000), nanos: (s.durationUntilResetMs % 1000) * 1_000_000 },
    })),
    response_headers_to_add: r.headers.map(([key, value]) => ({ key, value })),
  };
}

export function createGrpcServer(service: () => RateLimitService, log: Logger, maxBodyBytes: number): grpc.Server {
  const pkg = loadRlsDefinition() as unknown as { envoy: { service: { ratelimit: { v3: { RateLimitService: grpc.ServiceClientConstructor } } } } };
  const definition = pkg.envoy.service.ratelimit.v3.RateLimitService.service;
  const method = definition.ShouldRateLimit!;
  const decode = method.requestDeserialize;
  // grpc-js answers undecodable bytes with INTERNAL; Envoy's contract wants the caller told it sent a bad request.
  const wrapped = {
    ShouldRateLimit: {
      ...method,
      requestDeserialize: (buf: Buffer) => {
        try {
          return decode(buf);
        } catch (e) {
          return { decodeError: (e as Error).message };
        }
      },
    },
  } as unknown as grpc.ServiceDefinition;
  const server = new grpc.Server({ 'grpc.max_receive_message_length': maxBodyBytes });
  server.addService(wrapped, {
    ShouldRateLimit(call: grpc.ServerUnaryCall<WireRequest, object>, callback: grpc.sendUnaryData<object>) {
      const fail = (code: grpc.status, details: string) => callback({ code, details } as grpc.ServiceError, null);
      if (call.request.decodeError !== undefined) return fail(grpc.status.INVALID_ARGUMENT, `malformed RateLimitRequest: ${call.request.decodeError}`);
      let answered: RlsResponse | Promise<RlsResponse>;
      const onError = (e: unknown) => {
        if (e instanceof BadRequest) return fail(grpc.status.INVALID_ARGUMENT, e.message);
        if (e instanceof StoreUnavailable) return fail(grpc.status.UNAVAILABLE, e.message);
        log.error({ err: e }, 'unexpected error in ShouldRateLimit');
        fail(grpc.status.INTERNAL, 'internal error');
      };
      try {
        answered = service().shouldRateLimit(fromWire(call.request));
      } catch (e) {
        return onError(e);
      }
      if (answered instanceof Promise) answered.then((r) => callback(null, toWire(r)), onError);
      else callback(null, toWire(answered));
    },
  });
  return server;
}

export function bindGrpc(server: grpc.Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.bindAsync(`${host.includes(':') ? `[${host}]` : host}:${port}`, grpc.ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound)));
  });
}
