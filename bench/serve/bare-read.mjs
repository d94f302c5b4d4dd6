// The Node ceiling for a JSON API: bare node:http that reads the body and JSON.parses it, then answers a
// constant. The difference to bare.mjs is what any JSON endpoint pays before deciding anything.
// Usage: node bench/serve/bare-read.mjs <port>. Exits on SIGTERM, and by itself after 10 minutes.
import http from 'node:http';

const body = '{"overallCode":"OK","statuses":[{"code":"OK"}]}';
const headers = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    JSON.parse(Buffer.concat(chunks).toString('utf8'));
    res.writeHead(200, headers);
    res.end(body);
  });
});
server.listen(Number(process.argv[2]), '127.0.0.1', () => process.stdout.write('listening\n'));
process.on('SIGTERM', () => process.exit(0));
setTimeout(() => process.exit(0), 600_000).unref();
