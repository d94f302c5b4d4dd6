#!/usr/bin/env node
// `npm start`: the service on the example config (memory store) and, beside it, the login demo that the
// dashboard links to. It prints the URLs once both answer, says in one line when a port is taken, and stops
// both servers on Ctrl-C, on SIGTERM or SIGHUP (to npm or to this script), and when its parent dies.
//
//   npm start [-- --demo-port N] [-- <any sluice serve flag, e.g. --port 9090 --redis redis://...>]
//   (--port N alone moves gRPC to N + 1; --grpc-port N, or -1 for none, puts it elsewhere)
//   env: DEMO_PORT (the demo), SLUICE_PORT / SLUICE_GRPC_PORT / SLUICE_ADMIN_PORT / SLUICE_HOST (the service)
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const say = (line) => process.stdout.write(`${line}\n`);
const fail = (line, code = 1) => {
  process.stderr.write(`npm start: ${line}\n`);
  process.exit(code);
};

// --demo-port is ours; every other argument goes to `sluice serve`, which validates it.
const serveArgs = [];
let demoPortArg;
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const arg = argv[i];
  if (arg === '--demo-port') demoPortArg = argv[++i] ?? '';
  else if (arg.startsWith('--demo-port=')) demoPortArg = arg.slice('--demo-port='.length);
  else serveArgs.push(arg);
}
/** The value `sluice serve` will use for a flag: its last occurrence, else the environment, else the default. */
function serveSetting(flag, env, fallback) {
  let value;
  for (let i = 0; i < serveArgs.length; i++) {
    if (serveArgs[i] === flag) value = serveArgs[i + 1];
    else if (serveArgs[i].startsWith(`${flag}=`)) value = serveArgs[i].slice(flag.length + 1);
  }
  return value ?? (process.env[env] || fallback);
}
function port(raw, what, how) {
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 65535)
    fail(`${what} must be a port number from 1 to 65535, got ${JSON.stringify(raw)} (${how})`, 2);
  return Number(raw);
}
const demoHow = '--demo-port <port> or DEMO_PORT=<port>';
const serviceHow = '--port <port> or SLUICE_PORT=<port>';
const grpcHow = '--grpc-port <port> or SLUICE_GRPC_PORT=<port>, -1 for none';
const adminHow = '--admin-port <port> or SLUICE_ADMIN_PORT=<port>';
const demoPort = port(demoPortArg ?? (process.env.DEMO_PORT || '3000'), 'the login demo port', demoHow);
const host = serveSetting('--host', 'SLUICE_HOST', '127.0.0.1');
const httpPort = port(serveSetting('--port', 'SLUICE_PORT', '8080'), 'the service port', serviceHow);
// gRPC moves with the service: --port N without --grpc-port puts gRPC on N + 1, as the defaults are 8080 and 8081.
const grpcChosen = serveSetting('--grpc-port', 'SLUICE_GRPC_PORT', undefined);
const httpChosen = serveSetting('--port', 'SLUICE_PORT', undefined) !== undefined;
const grpcRaw = grpcChosen ?? (httpChosen && httpPort < 65535 ? String(httpPort + 1) : '8081');
if (grpcChosen === undefined) serveArgs.push('--grpc-port', grpcRaw);
const grpcPort = grpcRaw === '-1' ? undefined : port(grpcRaw, 'the gRPC port', grpcHow);
// The dashboard is on the admin port (Envoy ratelimit's debug port, 6070), apart from the decisions.
const adminPort = port(
  serveSetting('--admin-port', 'SLUICE_ADMIN_PORT', '6070'),
  'the admin port (the dashboard)',
  adminHow,
);
const adminHost = serveSetting('--admin-host', 'SLUICE_ADMIN_HOST', '127.0.0.1');
const browsable = (h) => (h === '0.0.0.0' || h === '::' ? '127.0.0.1' : h);
const browserHost = browsable(host);
const url = (h, p) => `http://${h.includes(':') ? `[${h}]` : h}:${p}/`;
const demoUrl = url('127.0.0.1', demoPort);
const serviceUrl = url(browserHost, httpPort);
const dashboardUrl = url(browsable(adminHost), adminPort);

/** Resolves when the port can be bound; a taken port ends the start with one line saying how to move it. */
function checkFree(p, h, what, how) {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', (e) => {
      if (e.code === 'EADDRINUSE')
        fail(`port ${p} (${what}) is already in use; stop what holds it, or choose another with ${how}`);
      if (e.code === 'EACCES') fail(`port ${p} (${what}) needs privileges this user lacks; choose another with ${how}`);
      fail(`cannot listen on ${h}:${p} (${what}): ${e.message}`);
    });
    probe.listen(p, h, () => probe.close(resolve));
  });
}
await checkFree(demoPort, '127.0.0.1', 'the login demo', demoHow);
await checkFree(httpPort, host, 'the service', serviceHow);
await checkFree(adminPort, adminHost, "the service's dashboard", adminHow);
if (grpcPort !== undefined) await checkFree(grpcPort, host, "the service's gRPC", grpcHow);

// The demo serves the proof-of-work widget from dist/browser/; a fresh clone has no build yet.
const built = spawnSync(process.execPath, [join(ROOT, 'scripts/build-browser.mjs')], { cwd: ROOT, encoding: 'utf8' });
if (built.status !== 0) fail(`building the browser widget failed:\n${built.stderr}`);

// Each child gets an IPC channel and a preload that stops it when the channel closes, which it does when
// this process ends in any way (even SIGKILL), so no server outlives `npm start`.
const node = (script, args, env) =>
  spawn(
    process.execPath,
    ['--import', join(ROOT, 'scripts/exit-with-parent.mjs'), '--import', 'tsx', script, ...args],
    {
      cwd: ROOT,
      // Run from source: the sluice-source condition points every package's entries at its src/.
      env: {
        ...process.env,
        NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --conditions=sluice-source`.trim(),
        ...env,
      },
      stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
    },
  );
// Quiet by default: the URLs below say what a person needs; warnings and errors still show.
const logLevel =
  serveArgs.some((a) => a === '--log-level' || a.startsWith('--log-level=')) || process.env.SLUICE_LOG_LEVEL
    ? []
    : ['--log-level', 'warn'];
const children = [
  { name: 'login demo', child: node('demo/login/main.ts', [], { PORT: String(demoPort) }), ready: demoUrl },
  {
    name: 'service',
    // --drain-ms 0: no balancer stands in front of a local demo, so Ctrl-C stops it at once.
    child: node(
      'packages/serve/src/cli/main.ts',
      [
        'serve',
        '--config',
        'packages/serve/examples/policies.yaml',
        '--demo-url',
        demoUrl,
        '--drain-ms',
        '0',
        ...logLevel,
        ...serveArgs,
      ],
      {},
    ),
    ready: `${serviceUrl}healthz`,
  },
];
for (const { child, name } of children) {
  // The demo announces itself; the summary below replaces that line. Everything else passes through.
  let pending = '';
  child.stdout.on('data', (chunk) => {
    pending += chunk;
    const lines = pending.split('\n');
    pending = lines.pop();
    for (const line of lines) if (!(name === 'login demo' && line.startsWith('sluice login demo on '))) say(line);
  });
}

let stopping = false;
let exitCode = 0;
const alive = () => children.filter(({ child }) => child.exitCode === null && child.signalCode === null);
function stop(reason) {
  if (stopping) return;
  stopping = true;
  if (reason) say(reason);
  for (const { child } of alive()) child.kill('SIGTERM');
  // The service drains for up to 10 s; past that, nothing is left waiting.
  setTimeout(() => {
    for (const { child } of alive()) child.kill('SIGKILL');
  }, 12_000).unref();
}
for (const { child, name } of children) {
  child.on('exit', (code, signal) => {
    if (!stopping) {
      exitCode = code || 1;
      stop(`npm start: the ${name} stopped (${signal ?? `exit code ${code}`}); stopping the rest.`);
    }
    if (alive().length === 0) process.exit(exitCode);
  });
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => stop(stopping ? '' : 'stopping...'));
// npm killed outright (SIGKILL) leaves this process orphaned: notice, and stop as if signalled.
const parent = process.ppid;
setInterval(() => process.ppid !== parent && stop('npm start: the parent process is gone; stopping.'), 1000).unref();

async function answers(target) {
  try {
    await fetch(target, { signal: AbortSignal.timeout(1000) });
    return true;
  } catch {
    return false;
  }
}
const deadline = Date.now() + 120_000;
for (const pending = [...children]; pending.length > 0 && !stopping; ) {
  if (Date.now() > deadline)
    stop(`npm start: the ${pending.map((c) => c.name).join(' and ')} did not answer within 2 minutes; stopping.`);
  for (let i = pending.length - 1; i >= 0; i--) if (await answers(pending[i].ready)) pending.splice(i, 1);
  if (pending.length > 0) await new Promise((r) => setTimeout(r, 100));
}
if (!stopping) {
  say('');
  say('sluice is running (packages/serve/examples/policies.yaml):');
  say(`  dashboard   ${dashboardUrl}`);
  say(`  login demo  ${demoUrl}`);
  say(`  decisions   ${serviceUrl}  (POST /json, /v1/check; GET /nginx/<domain>)`);
  if (grpcPort !== undefined)
    say(
      `  gRPC        ${browserHost}:${grpcPort}  (Envoy's rate limit service${grpcChosen === undefined && httpChosen ? '; the service port + 1, or --grpc-port N' : ''})`,
    );
  say('Press Ctrl-C to stop.');
}
