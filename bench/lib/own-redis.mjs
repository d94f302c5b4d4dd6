// A private redis-server, or a Redis Cluster of private ones, for a benchmark to flush and measure: spare
// ports (never the shared 6379), no persistence, a temp dir each, killed when the benchmark exits.
// test/redis/harness.ts is the tests' twin (with replicas and failover); a benchmark wants masters only,
// whose CPU is all the decisions' (a replica's feed would be part of the figure).
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A TCP port free now, whose cluster bus port (+10000) is free too. */
async function freePort() {
  const listen = (p) =>
    new Promise((resolve) => {
      const s = createServer();
      s.once('error', () => resolve(undefined));
      s.listen(p, '127.0.0.1', () => {
        const got = s.address().port;
        s.close(() => resolve(got));
      });
    });
  for (;;) {
    const port = await listen(0);
    if (port !== undefined && port + 10000 < 65536 && (await listen(port + 10000)) !== undefined) return port;
  }
}

const cli = (port, ...args) =>
  execFileSync('redis-cli', ['-p', String(port), ...args], {
    encoding: 'utf8',
    timeout: 10_000,
    stdio: ['ignore', 'pipe', 'ignore'],
  }).trim();

async function waitFor(cond, what) {
  for (let i = 0; i < 600; i++) {
    try {
      if (cond()) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function start(port, extra = []) {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-redis-'));
  const proc = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extra],
    { stdio: 'ignore' },
  );
  await waitFor(() => cli(port, 'PING') === 'PONG', `redis-server on ${port}`);
  return { port, proc, dir };
}

function handle(nodes) {
  let stopped = false;
  return {
    ports: nodes.map((n) => n.port),
    /** FLUSHALL and CONFIG RESETSTAT on every node: this benchmark's own. */
    flush() {
      for (const n of nodes) {
        cli(n.port, 'FLUSHALL');
        cli(n.port, 'CONFIG', 'RESETSTAT');
      }
    },
    stop() {
      if (stopped) return;
      stopped = true;
      for (const n of nodes) {
        n.proc.kill('SIGKILL');
        rmSync(n.dir, { recursive: true, force: true });
      }
    },
  };
}

/** One private redis-server. */
export async function ownRedis() {
  return handle([await start(await freePort())]);
}

/** A Cluster of `masters` private redis-servers, no replicas, slots split evenly by redis-cli. */
export async function ownCluster(masters = 3) {
  const nodes = [];
  for (let i = 0; i < masters; i++) {
    const port = await freePort();
    nodes.push(await start(port, ['--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`]));
  }
  execFileSync(
    'redis-cli',
    ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '0', '--cluster-yes'],
    { stdio: 'ignore', timeout: 30_000 },
  );
  await waitFor(
    () => nodes.every((n) => /cluster_state:ok/.test(cli(n.port, 'CLUSTER', 'INFO'))),
    'cluster_state:ok on every node',
  );
  return handle(nodes);
}
