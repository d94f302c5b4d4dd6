// The /json floor: bare node:http that reads the request's body (and nothing more) and answers a fixed 200
// with the answer sluice gives for bench/serve/json.lua's requests, by length. bare-read.mjs also parses it.
// Usage: node bench/serve/bare-body.mjs <port>. Exits on SIGTERM, and by itself after 30 minutes.
import http from 'node:http';

const body =
  '{"overallCode":"OK","statuses":[{"code":"OK","currentLimit":{"name":"bench.remote_address","requestsPerUnit":4000000000,"unit":"HOUR"},"limitRemaining":3999999999,"durationUntilReset":"3599s"}]}';
const headers = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
const server = http.createServer((req, res) => {
  req.on('data', () => {});
  req.on('end', () => {
    res.writeHead(200, headers);
    res.end(body);
  });
});
server.listen(Number(process.argv[2]), '127.0.0.1', () => process.stdout.write('listening\n'));
process.on('SIGTERM', () => process.exit(0));
setTimeout(() => process.exit(0), 1_800_000).unref();
