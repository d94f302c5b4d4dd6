// gRPC load: one @grpc/grpc-js channel (HTTP/2, many concurrent streams) keeping `inflight` ShouldRateLimit
// calls outstanding for `seconds`, then printing JSON {calls, errors, seconds, p50Ms, p99Ms}.
// Usage: node bench/serve/grpc-load.mjs <port> <seconds> <inflight>
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { fileURLToPath } from 'node:url';

const [port, seconds, inflight] = process.argv.slice(2).map(Number);
const def = loadSync('envoy/service/ratelimit/v3/rls.proto', {
  includeDirs: [fileURLToPath(new URL('../../packages/serve/proto/', import.meta.url))],
  keepCase: true,
  longs: Number,
  enums: String,
});
const Client = grpc.loadPackageDefinition(def).envoy.service.ratelimit.v3.RateLimitService;
const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
const requests = Array.from({ length: 1000 }, (_, n) => ({
  domain: 'bench',
  descriptors: [{ entries: [{ key: 'remote_address', value: `10.0.${n % 250}.${n}` }] }],
}));
let calls = 0;
let errors = 0;
let n = 0;
const lat = [];
const end = performance.now() + seconds * 1000;
await new Promise((resolve) => client.waitForReady(Date.now() + 5000, resolve));
await new Promise((resolve) => {
  let live = 0;
  const one = () => {
    if (performance.now() >= end) {
      if (--live === 0) resolve();
      return;
    }
    const t0 = performance.now();
    client.ShouldRateLimit(requests[n++ % 1000], (err) => {
      if (err) errors++;
      else calls++;
      if ((calls & 7) === 0) lat.push(performance.now() - t0);
      one();
    });
  };
  for (let i = 0; i < inflight; i++) {
    live++;
    one();
  }
});
lat.sort((a, b) => a - b);
const q = (p) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))];
process.stdout.write(JSON.stringify({ calls, errors, seconds, p50Ms: q(0.5), p99Ms: q(0.99) }) + '\n');
client.close();
