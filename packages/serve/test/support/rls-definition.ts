/**
 * Envoy's RateLimitService loaded from sluice's own .proto subset (proto/) by @grpc/proto-loader: what the
 * tests build their gRPC clients and reference codec from. The service itself does not use it: it speaks
 * gRPC on node:http2 with the hand-written codec in src/server/codecs/rls-proto.ts.
 */
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';

export const PROTO_ROOT = fileURLToPath(new URL('../../proto/', import.meta.url));
export const RLS_PROTO = 'envoy/service/ratelimit/v3/rls.proto';

export function loadRlsDefinition(): grpc.GrpcObject {
  const def = loadSync(RLS_PROTO, {
    includeDirs: [PROTO_ROOT],
    keepCase: true,
    longs: Number,
    enums: String,
    defaults: false,
    oneofs: true,
  });
  return grpc.loadPackageDefinition(def);
}
