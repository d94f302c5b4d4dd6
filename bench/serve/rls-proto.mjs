// The gRPC endpoint's message codec in process: src/server/rls-proto.ts's hand-written decode and encode
// against what it replaces, protobufjs through @grpc/proto-loader (ShouldRateLimit's requestDeserialize and
// responseSerialize) plus grpc.ts's fromWire and toWire. The request is the bench's golden one
// ({domain: bench, one descriptor remote_address=10.0.0.1}, rls-proto.test.ts), the answer a typical OK with
// a MINUTE limit and the three RateLimit-* headers. The two sides alternate in rounds, so drift in the host's
// speed falls on both; each figure is the median of the rounds' ns per call.
// Usage: npm run build && node bench/serve/rls-proto.mjs [rounds=10] [callsPerRound=100000]
import { fileURLToPath } from 'node:url';

const dist = fileURLToPath(new URL('../../dist/server/', import.meta.url));
const { decodeRateLimitRequest, encodeRateLimitResponse } = await import(`${dist}rls-proto.js`);
// The .proto loaded as the service loaded it before the codec (and as test/support/rls-definition.ts does).
const grpc = await import('@grpc/grpc-js');
const { loadSync } = await import('@grpc/proto-loader');
const loadRlsDefinition = () =>
  grpc.loadPackageDefinition(loadSync('envoy/service/ratelimit/v3/rls.proto', { includeDirs: [fileURLToPath(new URL('../../proto/', import.meta.url))], keepCase: true, longs: Number, enums: String, defaults: false, oneofs: true }));
const { UNITS } = await import(`${dist}config.js`);
const { BadRequest } = await import(`${dist}service.js`);

const rounds = Number(process.argv[2] ?? 10);
const calls = Number(process.argv[3] ?? 100_000);

const method = loadRlsDefinition().envoy.service.ratelimit.v3.RateLimitService.service.ShouldRateLimit;

// fromWire and toWire as grpc.ts had them before the codec (rls-proto.test.ts keeps the same copies).
function fromWire(w) {
  const descriptors = (w.descriptors ?? []).map((d, i) => {
    let limit;
    if (d.limit) {
      const unit = d.limit.unit ?? 'UNKNOWN';
      if (!Object.hasOwn(UNITS, unit)) throw new BadRequest(`descriptors[${i}].limit.unit must be SECOND, MINUTE, HOUR, DAY, MONTH or YEAR, got ${unit}`);
      limit = { requestsPerUnit: d.limit.requests_per_unit ?? 0, unit };
    }
    const h = d.hits_addend?.value;
    if (h !== undefined && !Number.isSafeInteger(h)) throw new BadRequest(`descriptors[${i}].hits_addend is too large: ${h}`);
    return { entries: (d.entries ?? []).map((e) => ({ key: e.key ?? '', value: e.value ?? '' })), limit, hitsAddend: d.hits_addend ? (h ?? 0) : undefined };
  });
  return { domain: w.domain ?? '', descriptors, hitsAddend: w.hits_addend ?? 0 };
}

function toWire(r) {
  return {
    overall_code: r.overallCode,
    statuses: r.statuses.map((s) => ({
      code: s.code,
      current_limit: s.currentLimit === undefined ? null : { ...(s.currentLimit.name === '' ? {} : { name: s.currentLimit.name }), requests_per_unit: s.currentLimit.requestsPerUnit, unit: s.currentLimit.unit },
      limit_remaining: s.limitRemaining,
      duration_until_reset: s.durationUntilResetMs === 0 ? null : { seconds: Math.floor(s.durationUntilResetMs / 1000), nanos: (s.durationUntilResetMs % 1000) * 1_000_000 },
    })),
    response_headers_to_add: r.headers.map(([key, value]) => ({ key, value })),
  };
}

const request = Buffer.from('0a0562656e6368121c0a1a0a0e72656d6f74655f61646472657373120831302e302e302e31', 'hex');
const answer = {
  overallCode: 'OK',
  statuses: [{ code: 'OK', currentLimit: { name: '', requestsPerUnit: 1000, unit: 'MINUTE', header: '1000, 1000;w=60' }, limitRemaining: 999, durationUntilResetMs: 59_500, rule: 'bench.remote_address', shadow: false }],
  headers: [
    ['RateLimit-Limit', '1000, 1000;w=60'],
    ['RateLimit-Remaining', '999'],
    ['RateLimit-Reset', '60'],
  ],
  retryAfterMs: 0,
};

// Each side's work per call; the sum of lengths keeps the results alive.
const sides = {
  decode: {
    codec: () => decodeRateLimitRequest(request).descriptors.length,
    protobufjs: () => fromWire(method.requestDeserialize(request)).descriptors.length,
  },
  encode: {
    codec: () => encodeRateLimitResponse(answer).length,
    protobufjs: () => method.responseSerialize(toWire(answer)).length,
  },
  'decode+encode': {
    codec: () => decodeRateLimitRequest(request).descriptors.length + encodeRateLimitResponse(answer).length,
    protobufjs: () => fromWire(method.requestDeserialize(request)).descriptors.length + method.responseSerialize(toWire(answer)).length,
  },
};

let sink = 0;
function nsPerCall(f, n) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) sink += f();
  return Number(process.hrtime.bigint() - t0) / n;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

console.log(`node ${process.version}, ${rounds} rounds x ${calls} calls per side, median ns per call`);
console.log(`${'what'.padEnd(15)}${'codec'.padStart(10)}${'protobufjs'.padStart(12)}${'ratio'.padStart(8)}`);
for (const [what, { codec, protobufjs }] of Object.entries(sides)) {
  nsPerCall(codec, 50_000); // warm-up: both optimized before the first timed round
  nsPerCall(protobufjs, 50_000);
  const a = [];
  const b = [];
  for (let r = 0; r < rounds; r++) {
    a.push(nsPerCall(codec, calls));
    b.push(nsPerCall(protobufjs, calls));
  }
  const [ma, mb] = [median(a), median(b)];
  console.log(`${what.padEnd(15)}${ma.toFixed(0).padStart(10)}${mb.toFixed(0).padStart(12)}${`${(mb / ma).toFixed(1)}x`.padStart(8)}`);
}
if (sink === 0) console.log('(no work done?)');
