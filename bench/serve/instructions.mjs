// Instructions per request of a server, counted by callgrind, reproducible where wall-clock timing is not
// (a shared, noisy machine). Each server runs under `valgrind --tool=callgrind` with node's
// --single-threaded --predictable; this process sends it exactly N POST /json requests (wrk's json.lua
// bodies) over a few keep-alive connections, one request in flight per connection, then stops it with
// SIGTERM. (count at N2 - count at N1) / (N2 - N1) cancels start-up and shutdown.
// Usage: node bench/serve/instructions.mjs [N1=500] [N2=2500] [connections=4] [server ...]
// where a server is `bare`, `bare-read`, or a sluice dist folder (default: bare bare-read dist).
import { spawn } from 'node:child_process';
import net from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const [N1 = 500, N2 = 2500, CONNS = 4] = process.argv.slice(2, 5).map(Number);
const servers = process.argv.length > 5 ? process.argv.slice(5) : ['bare', 'bare-read', 'dist'];
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const HERE = join(ROOT, 'bench/serve');
const PORT = Number(process.env.PORT ?? 18290);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function command(server) {
  if (server === 'bare' || server === 'bare-read') return [join(HERE, `${server}.mjs`), String(PORT)];
  return [join(ROOT, server, 'cli/main.js'), 'serve', '--config', join(HERE, 'policies.yaml'), '--port', String(PORT), '--grpc-port', String(PORT + 1), '--log-level', 'warn', '--watch', 'false'];
}

const requests = Array.from({ length: 1000 }, (_, i) => {
  const n = i + 1;
  const body = `{"domain":"bench","descriptors":[{"entries":[{"key":"remote_address","value":"10.0.${n % 250}.${n}"}]}]}`;
  return Buffer.from(`POST /json HTTP/1.1\r\nHost: 127.0.0.1:${PORT}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
});

/** Sends `count` requests on one connection, one at a time; resolves once every answer arrived. */
function drive(count, offset) {
  return new Promise((resolve, reject) => {
    const s = net.connect(PORT, '127.0.0.1');
    let sent = 0;
    let answered = 0;
    let buf = '';
    const next = () => s.write(requests[(offset + sent++) % 1000]);
    s.on('connect', next);
    s.on('error', reject);
    s.on('data', (d) => {
      buf += d.toString('latin1');
      for (;;) {
        const h = buf.indexOf('\r\n\r\n');
        if (h < 0) return;
        const m = /content-length: (\d+)/i.exec(buf.slice(0, h));
        if (!buf.startsWith('HTTP/1.1 200')) return reject(new Error(`unexpected answer: ${buf.slice(0, 200)}`));
        const end = h + 4 + Number(m[1]);
        if (buf.length < end) return;
        buf = buf.slice(end);
        if (++answered === count) return s.end(resolve);
        next();
      }
    });
  });
}

async function countFor(server, n) {
  const child = spawn('valgrind', ['--tool=callgrind', `--callgrind-out-file=${process.env.CG_OUT ?? '/dev/null'}`, process.execPath, '--single-threaded', '--predictable', ...command(server)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise((r) => child.on('exit', r));
  for (let up = false; !up; ) {
    if (child.exitCode !== null) throw new Error(`${server} exited: ${err}`);
    up = await new Promise((r) => net.connect(PORT, '127.0.0.1').on('connect', function () { this.destroy(); r(true); }).on('error', () => r(false)));
    if (!up) await sleep(500);
  }
  await Promise.all(Array.from({ length: CONNS }, (_, c) => drive(Math.floor(n / CONNS), c * 250)));
  await sleep(200);
  child.kill('SIGTERM');
  await exited;
  const m = /Collected : (\d+)/.exec(err);
  if (!m) throw new Error(`no count for ${server}: ${err.slice(-2000)}`);
  return Number(m[1]);
}

for (const server of servers) {
  const a = await countFor(server, N1);
  if (N2 === N1) {
    process.stdout.write(`${server}: ${a} instructions at ${N1} requests\n`);
    continue;
  }
  const b = await countFor(server, N2);
  process.stdout.write(`${server}: ${Math.round((b - a) / (N2 - N1))} instructions per request (${a} at ${N1}, ${b} at ${N2}, ${CONNS} connections)\n`);
}
