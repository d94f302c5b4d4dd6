// The /json floor's handler inside a whole `sluice serve` process: the service is started as the CLI starts
// it (its connection caps, timeouts, heap, timers, metrics), then its decision port's route is replaced by
// bare-body.mjs's handler (read the body, a fixed answer as long as sluice's). json-gap.mjs prices the
// process around /json with it. Bench-only: it reaches the listening server through Node's active handles.
// Usage: node bench/serve/floor-in-serve.mjs <sluice serve flags...>. Exits on SIGTERM.
import net from 'node:net';

const dist = new URL('../../packages/serve/dist/server/', import.meta.url);
const { readSettings } = await import(new URL('config/settings.js', dist).href);
const { startService } = await import(new URL('serve.js', dist).href);

const settings = readSettings(process.argv.slice(2), {});
const running = await startService(settings);
const body =
  '{"overallCode":"OK","statuses":[{"code":"OK","currentLimit":{"requestsPerUnit":4000000000,"unit":"HOUR"},"limitRemaining":3999999999,"durationUntilReset":"2492.284s"}],"responseHeadersToAdd":[{"key":"RateLimit-Limit","value":"4000000000, 4000000000;w=3600"},{"key":"RateLimit-Remaining","value":"3999999999"},{"key":"RateLimit-Reset","value":"2493"}]}';
const headers = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
const server = process
  ._getActiveHandles()
  .find((h) => h instanceof net.Server && h.listening && h.address()?.port === running.httpPort);
if (server === undefined) throw new Error(`no server listening on ${running.httpPort}`);
server.removeAllListeners('request');
server.on('request', (req, res) => {
  req.on('data', () => {});
  req.on('end', () => {
    res.writeHead(200, headers);
    res.end(body);
  });
});
process.on('SIGTERM', () => process.exit(0));
