// Instructions per gRPC ShouldRateLimit call of a server, counted by callgrind (bench/lib/count-server.mjs's
// way: node --single-threaded --predictable under valgrind), reproducible where CPU time on a shared machine
// is not: h2load sends exactly N calls (bench/serve.mjs's one call) over 4 connections × `streams` streams,
// and two counts, at N1 and N2 calls, give the cost per call with start-up and shutdown cancelled.
// Usage: node bench/serve/grpc-instructions.mjs [N1=4000] [N2=12000] [streams=100] [server ...], a server being
// `floor` (bare-grpc.mjs) or a sluice dist folder (default: floor dist). sluice runs with --clock monotonic
// (no coarse clock's timer, whose ticks per call depend on the host's speed).
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const [N1 = 4000, N2 = 12000, STREAMS = 100] = process.argv.slice(2, 5).map(Number);
const servers = process.argv.length > 5 ? process.argv.slice(5) : ['floor', 'dist'];
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const HERE = join(ROOT, 'bench/serve');
const PORT = Number(process.env.PORT ?? 18590);
const NODE_FLAGS = ['--single-threaded', '--predictable', '--predictable-gc-schedule', '--no-memory-reducer'];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const accepts = () =>
  new Promise((r) =>
    net
      .connect(PORT, '127.0.0.1')
      .on('connect', function () {
        this.destroy();
        r(true);
      })
      .on('error', () => r(false)),
  );

const field = (n, bytes) => Buffer.concat([Buffer.from([(n << 3) | 2, bytes.length]), bytes]);
const entry = Buffer.concat([field(1, Buffer.from('remote_address')), field(2, Buffer.from('10.0.0.1'))]);
const message = Buffer.concat([field(1, Buffer.from('bench')), field(2, field(1, entry))]);
const prefix = Buffer.alloc(5);
prefix.writeUInt32BE(message.length, 1);
const CALL = join(tmpdir(), `sluice-grpc-call-${process.pid}.bin`);
writeFileSync(CALL, Buffer.concat([prefix, message]));

function command(server) {
  if (server === 'floor') return [join(HERE, 'bare-grpc.mjs'), String(PORT)];
  return [
    join(ROOT, server, 'cli/main.js'),
    'serve',
    '--config',
    join(HERE, 'policies.yaml'),
    '--port',
    String(PORT + 1),
    '--grpc-port',
    String(PORT),
    '--admin-port',
    '-1',
    '--log-level',
    'warn',
    '--watch',
    'false',
    '--clock',
    'monotonic',
    // Under callgrind on a loaded host a connection's first call can take longer than the default 5 s
    // --headers-timeout-ms, and a keepalive ping's answer longer than 20 s: the connection was cut and the
    // count failed. The timers are armed all the same, only for longer.
    '--headers-timeout-ms',
    '600000',
    '--request-timeout-ms',
    '600000',
    '--grpc-keepalive-timeout-ms',
    '600000',
  ];
}

async function count(server, n) {
  const child = spawn(
    'valgrind',
    ['--tool=callgrind', '--callgrind-out-file=/dev/null', process.execPath, ...NODE_FLAGS, ...command(server)],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise((r) => child.on('exit', r));
  while (!(await accepts())) {
    if (child.exitCode !== null) throw new Error(`${server} exited: ${err}`);
    await sleep(500);
  }
  try {
    const h = spawnSync(
      'h2load',
      [
        '-t1',
        '-c4',
        `-m${STREAMS}`,
        `-n${n}`,
        '-d',
        CALL,
        '-H',
        'content-type: application/grpc',
        '-H',
        'te: trailers',
        `http://127.0.0.1:${PORT}/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit`,
      ],
      { encoding: 'utf8' },
    );
    if (!new RegExp(`${n} succeeded`).test(h.stdout)) throw new Error(`h2load: ${h.stdout}${h.stderr}`);
    await sleep(200);
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
  const m = /Collected : (\d+)/.exec(err);
  if (!m) throw new Error(`no count for ${server}: ${err.slice(-2000)}`);
  return Number(m[1]);
}

for (const server of servers) {
  const a = await count(server, N1);
  const b = await count(server, N2);
  process.stdout.write(
    `${server}: ${Math.round((b - a) / (N2 - N1))} instructions per call at ${STREAMS} streams per connection (${a} at ${N1}, ${b} at ${N2})\n`,
  );
}
