// The /json floor: bare node:http that reads the request's body (and nothing more) and answers a fixed 200
// with an answer as long as the one sluice gives for bench/serve/json.lua's requests (Envoy's JSON with the
// RateLimit headers in responseHeadersToAdd). bare-read.mjs also parses it.
// Usage: node bench/serve/bare-body.mjs <port> [caps]. With `caps`, the server is built with sluice serve's
// connection caps and timeouts at their defaults (its serverOptions and acceptWithin, from
// packages/serve/dist), so json-gap.mjs can price them alone. Exits on SIGTERM, and by itself after 30 minutes.
import http from 'node:http';

const body =
  '{"overallCode":"OK","statuses":[{"code":"OK","currentLimit":{"requestsPerUnit":4000000000,"unit":"HOUR"},"limitRemaining":3999999999,"durationUntilReset":"2492.284s"}],"responseHeadersToAdd":[{"key":"RateLimit-Limit","value":"4000000000, 4000000000;w=3600"},{"key":"RateLimit-Remaining","value":"3999999999"},{"key":"RateLimit-Reset","value":"2493"}]}';
const headers = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
const handler = (req, res) => {
  req.on('data', () => {});
  req.on('end', () => {
    res.writeHead(200, headers);
    res.end(body);
  });
};

let server;
if (process.argv[3] === 'caps') {
  const dist = new URL('../../packages/serve/dist/server/', import.meta.url);
  const { serverOptions, acceptWithin } = await import(new URL('endpoints/http-accept.js', dist).href);
  const { DEFAULTS } = await import(new URL('config/settings.js', dist).href);
  const options = serverOptions(DEFAULTS);
  server = http.createServer(options, handler);
  acceptWithin(server, options, { debug() {} });
} else server = http.createServer(handler);
server.listen(Number(process.argv[2]), '127.0.0.1', () => process.stdout.write('listening\n'));
process.on('SIGTERM', () => process.exit(0));
setTimeout(() => process.exit(0), 1_800_000).unref();
