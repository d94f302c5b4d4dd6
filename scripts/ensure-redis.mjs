// Makes sure a Redis answers where the tests look for it (REDIS_URL, default redis://127.0.0.1:6379), as
// .ci/run must on a fresh machine: if none answers on this machine, start redis-server (installing
// Debian's redis-server package first if the binary is missing). A server that already answers is used
// as it is and never flushed: other work may share it. One started here is stopped by the stop() it
// returns, so `npm test` leaves no redis-server behind that it started.
import { execFileSync, spawnSync } from 'node:child_process';
import { connect } from 'node:net';

function ping(host, port) {
  return new Promise((resolve) => {
    const s = connect({ host, port });
    let data = '';
    const done = (ok) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(1000, () => done(false));
    s.on('error', () => done(false));
    s.on('connect', () => s.write('PING\r\n'));
    s.on('data', (d) => {
      data += d;
      if (data.includes('\r\n')) done(data.startsWith('+PONG'));
    });
  });
}

const has = (bin) => spawnSync('sh', ['-c', `command -v ${bin}`]).status === 0;

/** Resolves to `{ started, stop }`: `stop()` shuts down the redis-server this call started, and does nothing otherwise. */
export async function ensureRedis() {
  const url = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  const host = url.hostname || '127.0.0.1';
  const port = Number(url.port || 6379);
  const shared = { started: false, stop: () => {} };
  if (await ping(host, port)) return shared;
  if (!['127.0.0.1', 'localhost', '::1', '[::1]'].includes(host))
    throw new Error(`no Redis answers at ${url}, and it is not on this machine`);
  if (!has('redis-server') || !has('redis-cli')) {
    console.error("# redis-server is missing: installing Debian's redis-server package");
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit' });
    execFileSync('apt-get', ['install', '-y', '-qq', 'redis-server'], {
      stdio: 'inherit',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  }
  let started = false;
  if (!(await ping(host, port))) {
    console.error(`# starting redis-server on 127.0.0.1:${port}`);
    execFileSync(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'yes'],
      { stdio: 'inherit' },
    );
    started = true;
  }
  const stop = () => {
    if (!started) return;
    started = false;
    console.error(`# stopping the redis-server started on 127.0.0.1:${port}`);
    spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), 'SHUTDOWN', 'NOSAVE'], {
      stdio: 'ignore',
      timeout: 10_000,
    });
  };
  for (let i = 0; i < 100; i++) {
    if (await ping(host, port)) return { started, stop };
    await new Promise((r) => setTimeout(r, 100));
  }
  stop();
  throw new Error(`redis-server did not answer on ${port}`);
}
