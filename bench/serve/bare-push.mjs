// The Node ceiling for a JSON API that reads its body as `sluice serve` does: bare node:http that takes the
// body from the parser's push (see readBody in src/server/http.ts) instead of 'data' events, JSON.parses it,
// then answers a constant. Against bare-read.mjs, what the stream machinery costs a small body.
// Usage: node bench/serve/bare-push.mjs <port>. Exits on SIGTERM, and by itself after 10 minutes.
import http from 'node:http';

const body = '{"overallCode":"OK","statuses":[{"code":"OK"}]}';
const headers = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
const streamPush = http.IncomingMessage.prototype.push;
const server = http.createServer((req, res) => {
  // bench/serve's bodies come whole in one piece; null (the end) goes on to the stream, which Node drains.
  req.push = function (chunk) {
    if (chunk === null) return streamPush.call(this, null);
    JSON.parse(chunk.toString());
    res.writeHead(200, headers);
    res.end(body);
    return true;
  };
});
server.listen(Number(process.argv[2]), '127.0.0.1', () => process.stdout.write('listening\n'));
process.on('SIGTERM', () => process.exit(0));
setTimeout(() => process.exit(0), 600_000).unref();
