// Instructions per POST /json of sluice's HTTP layer, server and client in one process and no timers (no
// dashboard sampling, no default metrics, nothing that grows with wall-clock time), so callgrind's count
// repeats. The client's share is the same for every server, so differences between runs are the server's.
// Usage: valgrind --tool=callgrind --callgrind-out-file=/dev/null node --single-threaded --predictable \
//   bench/serve/instructions-in-process.mjs <dist> <requests> [sluice|bare|bare-read]
// per request = (count at N2 - count at N1) / (N2 - N1). `bare` answers a constant without reading the body
// (bench/serve/bare.mjs), `bare-read` reads and JSON.parses it first (bench/serve/bare-read.mjs).
// Take N1 >= 10000 (N1=10000, N2=20000): with --single-threaded TurboFan compiles on the main thread and is
// counted, and it still tiers up sluice's larger code between 2000 and 6000 requests (20 k of the 41 k
// instructions per request /json seemed to cost over bare-read there). Optimizing compilation still moves
// by up to 6 k per request between runs; with --callgrind-out-file=<file>, subtract its inclusive count
// (`callgrind_annotate --inclusive=yes <file> | grep Runtime_CompileOptimized`) from the total.
import http from 'node:http';
import net from 'node:net';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const [distArg, nArg, serverArg = 'sluice'] = process.argv.slice(2);
const dist = resolve(distArg ?? 'packages/serve/dist');
const N = Number(nArg ?? 1000);
const imp = (m) => import(join(dist, m));
const [
  { createHttpServer },
  { loadConfig },
  { RuleSet },
  { RateLimitService },
  { MemoryStore },
  { Dashboard },
  { Registry },
  { default: pino },
] = await Promise.all([
  imp('server/endpoints/http.js'),
  imp('server/config/config.js'),
  imp('server/config/rules.js'),
  imp('server/service.js'),
  // the package layout's memory store is sluice's; an older build has it beside the server
  imp('stores/memory.js').catch(() => import('sluice')),
  imp('server/operator/dashboard.js'),
  import('prom-client'),
  import('pino'),
]);
const store = new MemoryStore();
// The default coarseClock refreshes on a 1 ms timer. Under valgrind (about 100 times slower) that timer fires
// about once per request instead of once per ~60 at full speed, and how often depends on the host's speed:
// it added 0.6-7 k instructions per request, varying from run to run. This clock reads the monotonic clock
// once per 64 decisions, as coarseClock does under load, with no timer, so the count repeats.
let reads = 0;
let cached = 0;
const countedClock = () => (reads++ % 64 === 0 ? (cached = performance.timeOrigin + performance.now()) : cached);
const rules = new RuleSet(loadConfig(fileURLToPath(new URL('policies.yaml', import.meta.url))), {
  store,
  clock: countedClock,
});
const service = new RateLimitService(rules, { store, localCache: false });
const bareBody = '{"overallCode":"OK","statuses":[{"code":"OK"}]}';
const bareHeaders = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(bareBody) };
const servers = {
  sluice: () =>
    createHttpServer({
      service,
      metrics: new Registry(),
      dashboard: new Dashboard(() => service),
      log: pino({ level: 'silent' }),
      maxBodyBytes: 65536,
      ready: async () => true,
      stopping: () => false,
    }),
  bare: () =>
    http.createServer((req, res) => {
      res.writeHead(200, bareHeaders);
      res.end(bareBody);
    }),
  'bare-read': () =>
    http.createServer((req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        JSON.parse(Buffer.concat(chunks).toString());
        res.writeHead(200, bareHeaders);
        res.end(bareBody);
      });
    }),
};
if (!(serverArg in servers)) throw new Error(`unknown server '${serverArg}'; choose sluice, bare or bare-read`);
const server = servers[serverArg]();
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const port = server.address().port;
const requests = Array.from({ length: 1000 }, (_, i) => {
  const body = `{"domain":"bench","descriptors":[{"entries":[{"key":"remote_address","value":"10.0.${(i + 1) % 250}.${i + 1}"}]}]}`;
  return Buffer.from(
    `POST /json HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
  );
});
await new Promise((done, fail) => {
  const s = net.connect(port, '127.0.0.1');
  let sent = 0;
  let buf = '';
  const next = () => s.write(requests[sent++ % 1000]);
  s.on('connect', next).on('error', fail);
  s.on('data', (d) => {
    buf += d.toString('latin1');
    for (;;) {
      const h = buf.indexOf('\r\n\r\n');
      if (h < 0) return;
      if (!buf.startsWith('HTTP/1.1 200')) return fail(new Error(buf.slice(0, 200)));
      const end = h + 4 + Number(/content-length: (\d+)/i.exec(buf.slice(0, h))[1]);
      if (buf.length < end) return;
      buf = buf.slice(end);
      if (sent === N) return s.end(done);
      next();
    }
  });
});
server.close();
