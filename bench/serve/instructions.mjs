// Instructions per request of a server, counted by callgrind (bench/lib/count-server.mjs), reproducible where
// wall-clock timing is not (a shared, noisy machine): exactly N POST /json requests (wrk's json.lua bodies)
// over a few keep-alive connections, one in flight per connection.
// Usage: node bench/serve/instructions.mjs [N1=12000] [N2=36000] [connections=4] [server ...]
// where a server is `bare`, `bare-read`, or a sluice dist folder (default: bare bare-read dist); CLOCK=monotonic
// runs sluice with `--clock monotonic`. The default coarse clock's 1 ms tick fires about once per request under
// callgrind (once per ~60 at full speed), and more often the busier the host: /json counted 76.9 k one evening
// and 83.6 k the next, the same build. Compare builds with CLOCK=monotonic, which has no timer. N1 must be
// past the warm-up: below a few thousand requests TurboFan's compiling is counted as if it were per request,
// and between 4,000 and 12,000 it still added about 7-9 k a request to /json (76.9 k at 12,000-36,000).
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { countServer, perRequest } from '../lib/count-server.mjs';

const [N1 = 12000, N2 = 36000, CONNS = 4] = process.argv.slice(2, 5).map(Number);
const servers = process.argv.length > 5 ? process.argv.slice(5) : ['bare', 'bare-read', 'dist'];
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const HERE = join(ROOT, 'bench/serve');
const PORT = Number(process.env.PORT ?? 18290);

function command(server) {
  if (server.startsWith('bare')) return [join(HERE, `${server}.mjs`), String(PORT)];
  // CLOCK reaches sluice as --clock: serve reads --clock or SLUICE_CLOCK, never CLOCK, so without this
  // CLOCK=monotonic counted the coarse clock's timer after all.
  const clock = process.env.CLOCK ? ['--clock', process.env.CLOCK] : [];
  return [
    join(ROOT, server, 'cli/main.js'),
    'serve',
    '--config',
    join(HERE, 'policies.yaml'),
    '--port',
    String(PORT),
    '--grpc-port',
    String(PORT + 1),
    '--log-level',
    'warn',
    '--watch',
    'false',
    ...clock,
  ];
}

const requests = (port) =>
  Array.from({ length: 1000 }, (_, i) => {
    const n = i + 1;
    const body = `{"domain":"bench","descriptors":[{"entries":[{"key":"remote_address","value":"10.0.${n % 250}.${n}"}]}]}`;
    return Buffer.from(
      `POST /json HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
  });

for (const server of servers) {
  const count = (n) => countServer({ args: command(server), port: PORT, requests, n, connections: CONNS });
  process.stdout.write(`${(await perRequest(server, N1, N2, count)).replace(')', `, ${CONNS} connections)`)}\n`);
}
