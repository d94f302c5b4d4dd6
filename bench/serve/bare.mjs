// The Node ceiling: a bare node:http server answering a constant JSON body to anything, reading nothing.
// Usage: node bench/serve/bare.mjs <port>. Exits on SIGTERM, and by itself after 10 minutes.
import http from 'node:http';

const body = '{"overallCode":"OK","statuses":[{"code":"OK"}]}';
const server = http.createServer((req, res) => {
  // Content-Length as sluice sends it, so neither side pays for chunked framing.
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
});
server.listen(Number(process.argv[2]), '127.0.0.1', () => process.stdout.write('listening\n'));
process.on('SIGTERM', () => process.exit(0));
setTimeout(() => process.exit(0), 600_000).unref();
