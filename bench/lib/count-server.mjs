// Instructions a server process executes, counted by callgrind: reproducible where wall-clock timing is not
// (a shared, noisy machine). The server runs under `valgrind --tool=callgrind` with node's
// --single-threaded --predictable (no helper threads, so GC and compilation happen on the counted thread in
// the same order each run); this process sends it exactly n requests over a few keep-alive connections,
// one in flight per connection, then stops it with SIGTERM. Two counts at n1 < n2 give the cost per request,
// (count(n2) - count(n1)) / (n2 - n1), which cancels start-up and shutdown.
import { spawn } from 'node:child_process';
import net from 'node:net';

/**
 * No helper threads, so GC and compilation run on the counted thread; and a GC schedule that does not
 * depend on the wall clock: under callgrind a request takes ~50× longer, so V8's timer-driven memory
 * reducer and idle GCs otherwise fire more often per request the busier the machine is (a bare server
 * counted 110 k and 364 k instructions per request in two runs without these).
 */
const NODE_FLAGS = ['--single-threaded', '--predictable', '--predictable-gc-schedule', '--no-memory-reducer'];

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const accepts = (port) =>
  new Promise((r) =>
    net
      .connect(port, '127.0.0.1')
      .on('connect', function () {
        this.destroy();
        r(true);
      })
      .on('error', () => r(false)),
  );

/** Sends `count` requests on one connection, one at a time; resolves once every answer arrived. */
function drive(port, requests, count, offset) {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let sent = 0;
    let answered = 0;
    let buf = '';
    const next = () => s.write(requests[(offset + sent++) % requests.length]);
    s.on('connect', next);
    s.on('error', reject);
    s.on('data', (d) => {
      buf += d.toString('latin1');
      for (;;) {
        const h = buf.indexOf('\r\n\r\n');
        if (h < 0) return;
        if (!buf.startsWith('HTTP/1.1 200')) return reject(new Error(`unexpected answer: ${buf.slice(0, 200)}`));
        const m = /content-length: (\d+)/i.exec(buf.slice(0, h));
        // Chunked answers (a handler's res.end without a length) end with the zero-size chunk.
        const last = m ? -1 : buf.indexOf('\r\n0\r\n\r\n', h + 2);
        const end = m ? h + 4 + Number(m[1]) : last < 0 ? Infinity : last + 7;
        if (buf.length < end) return;
        buf = buf.slice(end);
        if (++answered === count) return s.end(resolve);
        next();
      }
    });
  });
}

/**
 * Starts `node --single-threaded --predictable ...args` under callgrind, waits until `port` accepts, sends
 * `n` of `requests(port)` (raw HTTP/1.1 request buffers, used round robin) over `connections` connections,
 * stops the server and returns the instructions callgrind collected. Set CG_OUT to keep the profile.
 */
export async function countServer({ args, port, requests, n, connections = 4, env = process.env }) {
  const child = spawn(
    'valgrind',
    ['--tool=callgrind', `--callgrind-out-file=${env.CG_OUT ?? '/dev/null'}`, process.execPath, ...NODE_FLAGS, ...args],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
      env,
    },
  );
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise((r) => child.on('exit', r));
  if (await accepts(port)) throw new Error(`port ${port} is taken before the server started; set PORT`);
  for (let up = false; !up; ) {
    if (child.exitCode !== null) throw new Error(`${args.join(' ')} exited: ${err}`);
    up = await accepts(port);
    if (!up) await sleep(500);
  }
  const bufs = requests(port);
  const offset = Math.floor(bufs.length / connections);
  try {
    await Promise.all(
      Array.from({ length: connections }, (_, c) => drive(port, bufs, Math.floor(n / connections), c * offset)),
    );
    await sleep(200);
  } finally {
    child.kill('SIGTERM'); // also on a failed run, so that no server outlives it and answers the next one's port
    await exited;
  }
  const m = /Collected : (\d+)/.exec(err);
  if (!m) throw new Error(`no count for ${args.join(' ')}: ${err.slice(-2000)}`);
  return Number(m[1]);
}

/** One line per server: instructions per request between n1 and n2 requests (or the total, if n1 = n2). */
export async function perRequest(name, n1, n2, count) {
  const a = await count(n1);
  if (n2 === n1) return `${name}: ${a} instructions at ${n1} requests`;
  const b = await count(n2);
  return `${name}: ${Math.round((b - a) / (n2 - n1))} instructions per request (${a} at ${n1}, ${b} at ${n2})`;
}
