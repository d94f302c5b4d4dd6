// The gRPC endpoint's message codec in process: src/server/codecs/rls-proto.ts's hand-written decode and encode
// against what it replaces, protobufjs through @grpc/proto-loader (ShouldRateLimit's requestDeserialize and
// responseSerialize) plus grpc.ts's old fromWire and toWire (test/support/rls-reference.ts). The request is
// the bench's golden one ({domain: bench, one descriptor remote_address=10.0.0.1}, rls-proto.test.ts), the
// answer a typical OK with a MINUTE limit and the three RateLimit-* headers. The two sides alternate in
// rounds, so drift in the host's speed falls on both; each figure is the median of the rounds' ns per call.
// Usage: npm run build && node --import tsx bench/serve/rls-proto.mjs [rounds=10] [callsPerRound=100000]
import { fileURLToPath } from 'node:url';

const dist = fileURLToPath(new URL('../../packages/serve/dist/server/codecs/', import.meta.url));
const { decodeRateLimitRequest, encodeRateLimitResponse } = await import(`${dist}rls-proto.js`);
const rounds = Number(process.argv[2] ?? 10);
const calls = Number(process.argv[3] ?? 100_000);

// The reference model of src/server/codecs/rls-proto.test.ts: protobufjs's serializers, fromWire and toWire.
const { fromWire, GOLDEN_REQUEST, method, toWire, TYPICAL_ANSWER } = await import(
  '../../packages/serve/test/support/rls-reference.ts'
);

const request = GOLDEN_REQUEST;
const answer = TYPICAL_ANSWER;

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
    protobufjs: () =>
      fromWire(method.requestDeserialize(request)).descriptors.length + method.responseSerialize(toWire(answer)).length,
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
  console.log(
    `${what.padEnd(15)}${ma.toFixed(0).padStart(10)}${mb.toFixed(0).padStart(12)}${`${(mb / ma).toFixed(1)}x`.padStart(8)}`,
  );
}
if (sink === 0) console.log('(no work done?)');
