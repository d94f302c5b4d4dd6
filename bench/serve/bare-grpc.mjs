// The gRPC floor: bare node:http2 answering every call with one fixed, valid ShouldRateLimit answer, as
// sluice frames its own (headers, the message, grpc-status 0 in trailers), after reading the call's message.
// Usage: node bench/serve/bare-grpc.mjs <port>. Exits on SIGTERM, and by itself after 30 minutes.
import http2 from 'node:http2';

/** A protobuf field of wire type 2 (length-delimited) or 0 (varint). */
const bytesField = (n, bytes) => Buffer.concat([Buffer.from([(n << 3) | 2]), varint(bytes.length), bytes]);
const varintField = (n, v) => Buffer.concat([Buffer.from([n << 3]), varint(v)]);
function varint(v) {
  const out = [];
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return Buffer.from(out);
}
// RateLimitResponse {overall_code: OK, statuses: [{code: OK, current_limit: {name: "bench.remote_address",
// requests_per_unit: 4e9, unit: HOUR}, limit_remaining: 3999999999, duration_until_reset: {seconds: 3599}}]}:
// what sluice answers for bench/serve/policies.yaml, field for field.
const limit = Buffer.concat([
  varintField(1, 4_000_000_000),
  varintField(2, 3),
  bytesField(3, Buffer.from('bench.remote_address')),
]);
const status = Buffer.concat([
  varintField(1, 1),
  bytesField(2, limit),
  varintField(3, 3_999_999_999),
  bytesField(4, varintField(1, 3599)),
]);
const message = Buffer.concat([varintField(1, 1), bytesField(2, status)]);
const frame = Buffer.alloc(5 + message.length);
frame.writeUInt32BE(message.length, 1);
message.copy(frame, 5);

const headers = { ':status': 200, 'content-type': 'application/grpc', 'grpc-accept-encoding': 'identity,deflate,gzip' };
const trailers = { 'grpc-status': '0' };
const server = http2.createServer();
server.on('stream', (stream) => {
  stream.on('error', () => {});
  stream.on('data', () => {});
  stream.on('end', () => {
    stream.respond(headers, { waitForTrailers: true });
    stream.once('wantTrailers', () => stream.sendTrailers(trailers));
    stream.end(frame);
  });
});
server.listen(Number(process.argv[2]), '127.0.0.1', () => process.stdout.write('listening\n'));
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
setTimeout(() => process.exit(0), 1_800_000).unref();
