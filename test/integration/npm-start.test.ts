// `npm start` as a person meets it: the URLs printed plainly once both servers answer, one line (no stack)
// when a port is taken, and both servers gone after Ctrl-C or a SIGTERM to npm. Every run uses ports of its
// own, so it never meets another test's (or a developer's) servers.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const START = join(ROOT, 'scripts/start.mjs');

async function holdPort(): Promise<Server> {
  const server = createServer();
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  return server;
}
const portOf = (s: Server) => (s.address() as { port: number }).port;
async function freePorts(n: number): Promise<number[]> {
  const held = await Promise.all(Array.from({ length: n }, holdPort));
  const ports = held.map(portOf);
  await Promise.all(held.map((s) => new Promise((res) => s.close(res))));
  return ports;
}
async function bindable(port: number): Promise<boolean> {
  const s = createServer();
  return new Promise((res) => {
    s.once('error', () => res(false));
    s.listen(port, '127.0.0.1', () => s.close(() => res(true)));
  });
}
/** Polls until every port can be bound again, i.e. no server of this run holds one; false after 30 s. */
async function released(ports: number[]): Promise<boolean> {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 200))) {
    if ((await Promise.all(ports.map(bindable))).every(Boolean)) return true;
  }
  return false;
}

test('npm start: a taken demo port is one line naming the port and how to move it, no stack trace', async () => {
  const held = await holdPort();
  try {
    const [http, grpc, admin] = await freePorts(3);
    const r = spawnSync(
      process.execPath,
      [
        START,
        '--demo-port',
        String(portOf(held)),
        '--port',
        String(http),
        '--grpc-port',
        String(grpc),
        '--admin-port',
        String(admin),
      ],
      { cwd: ROOT, encoding: 'utf8', timeout: 60_000 },
    );
    assert.equal(r.status, 1);
    assert.equal(
      r.stderr,
      `npm start: port ${portOf(held)} (the login demo) is already in use; stop what holds it, or choose another with --demo-port <port> or DEMO_PORT=<port>\n`,
    );
    assert.equal(r.stdout, '');
  } finally {
    held.close();
  }
});

test('npm start: a taken service port names --port and SLUICE_PORT', async () => {
  const held = await holdPort();
  try {
    const [demo, grpc, admin] = await freePorts(3);
    const r = spawnSync(process.execPath, [START, '--grpc-port', String(grpc)], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
      env: {
        ...process.env,
        DEMO_PORT: String(demo),
        SLUICE_PORT: String(portOf(held)),
        SLUICE_ADMIN_PORT: String(admin),
      },
    });
    assert.equal(r.status, 1);
    assert.equal(
      r.stderr,
      `npm start: port ${portOf(held)} (the service) is already in use; stop what holds it, or choose another with --port <port> or SLUICE_PORT=<port>\n`,
    );
  } finally {
    held.close();
  }
});

/** Starts `npm start` in a process group of its own; resolves with its output once it prints its URLs. */
async function npmStart(ports: number[]): Promise<{ npm: ChildProcess; out: () => string }> {
  const [demo, http, grpc, admin] = ports;
  const npm = spawn(
    'npm',
    [
      'start',
      '--',
      '--demo-port',
      String(demo),
      '--port',
      String(http),
      '--grpc-port',
      String(grpc),
      '--admin-port',
      String(admin),
    ],
    { cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  npm.stdout!.on('data', (c) => (out += c));
  npm.stderr!.on('data', (c) => (out += c));
  const ready = new Promise<void>((res, rej) => {
    npm.stdout!.on('data', () => out.includes('Press Ctrl-C to stop.') && res());
    npm.once('exit', (code) => rej(new Error(`npm start exited ${code} before it was ready:\n${out}`)));
  });
  await Promise.race([
    ready,
    new Promise((_, rej) => setTimeout(() => rej(new Error(`not ready after 2 minutes:\n${out}`)), 120_000).unref()),
  ]);
  return { npm, out: () => out };
}

test('npm start prints the URLs to open, not log lines, and Ctrl-C (SIGINT to the group) stops both servers', async () => {
  const ports = await freePorts(4);
  const { npm, out } = await npmStart(ports);
  const [demo, http, grpc, admin] = ports;
  assert.match(out(), new RegExp(`^  dashboard   http://127\\.0\\.0\\.1:${admin}/$`, 'm'));
  assert.match(out(), new RegExp(`^  decisions   http://127\\.0\\.0\\.1:${http}/ `, 'm'));
  assert.match(out(), new RegExp(`^  login demo  http://127\\.0\\.0\\.1:${demo}/$`, 'm'));
  assert.match(out(), new RegExp(`^  gRPC        127\\.0\\.0\\.1:${grpc} `, 'm'));
  assert.doesNotMatch(out(), /^\{/m, 'a JSON log line reached the terminal');
  assert.equal((await fetch(`http://127.0.0.1:${demo}/`)).status, 200);
  assert.match(
    await (await fetch(`http://127.0.0.1:${admin}/`)).text(),
    new RegExp(`127\\.0\\.0\\.1:${demo}`),
    'the dashboard links the demo',
  );
  try {
    const exited = once(npm, 'exit');
    process.kill(-npm.pid!, 'SIGINT');
    await exited;
    assert.ok(await released(ports), `a server still holds one of ${ports.join(', ')}:\n${out()}`);
  } finally {
    reap(npm);
  }
});

const withoutGrpcPort = { ...process.env };
delete withoutGrpcPort.SLUICE_GRPC_PORT;

test('npm start -- --port N moves gRPC with it, to N + 1, and says how to put it elsewhere', async () => {
  let demo = 0;
  let http = 0;
  for (;;) {
    [demo, http] = await freePorts(2);
    if (http < 65535 && (await bindable(http + 1))) break;
  }
  const npm = spawn('npm', ['start', '--', '--demo-port', String(demo), '--port', String(http)], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: withoutGrpcPort,
  });
  let out = '';
  npm.stdout!.on('data', (c) => (out += c));
  npm.stderr!.on('data', (c) => (out += c));
  try {
    await new Promise<void>((res, rej) => {
      npm.stdout!.on('data', () => out.includes('Press Ctrl-C to stop.') && res());
      npm.once('exit', (code) => rej(new Error(`npm start exited ${code}:\n${out}`)));
      setTimeout(() => rej(new Error(`not ready after 2 minutes:\n${out}`)), 120_000).unref();
    });
    assert.match(
      out,
      new RegExp(
        `^  gRPC        127\\.0\\.0\\.1:${http + 1}  \\(Envoy's rate limit service; the service port \\+ 1, or --grpc-port N\\)$`,
        'm',
      ),
    );
    assert.equal(await bindable(http + 1), false, 'nothing listens on the gRPC port printed');
    assert.doesNotMatch(out, /:8081/);
  } finally {
    reap(npm);
  }
});

/** Whatever is left of the group after a failed assertion, so no server outlives the test. */
function reap(npm: ChildProcess) {
  try {
    process.kill(-npm.pid!, 'SIGKILL');
  } catch {
    // the group is gone: nothing to reap
  }
}

test('npm start: a SIGTERM to npm alone (not its group) stops both servers', async () => {
  const ports = await freePorts(4);
  const { npm, out } = await npmStart(ports);
  try {
    npm.kill('SIGTERM');
    assert.ok(await released(ports), `a server still holds one of ${ports.join(', ')}:\n${out()}`);
  } finally {
    reap(npm);
  }
});
