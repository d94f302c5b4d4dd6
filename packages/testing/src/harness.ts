// Test harness for Redis: the shared server's URL, unique key prefixes, and redis-server processes and
// clusters that a test starts on spare ports, owns, and stops (never the shared 6379).
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { after, before } from 'node:test';
import { Cluster, Redis } from 'ioredis';
import { createClient, createCluster, type RedisClientType, type RedisClusterType } from 'redis';

export function redisUrl(): string {
  return process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
}

/** A key prefix no other run shares, so tests never need to flush the shared server. */
export function runPrefix(what: string): string {
  return `sluice-test:${what}:${process.pid}:${Date.now().toString(36)}`;
}

/** A TCP port free right now (and its cluster bus port, +10000, too). */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const s = createServer();
      s.once('error', reject);
      s.listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    if (port + 10000 < 65536 && (await isFree(port + 10000))) return port;
  }
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

export function ping(port: number, cliArgs: readonly string[] = []): boolean {
  try {
    return (
      execFileSync('redis-cli', ['-p', String(port), ...cliArgs, 'PING'], {
        encoding: 'utf8',
        timeout: 2000,
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim() === 'PONG'
    );
  } catch {
    return false;
  }
}

async function waitFor(cond: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A redis-server this test owns: started in the foreground as a child, on a spare port, in a temp dir. */
export class OwnRedis {
  proc: ChildProcess | undefined;
  readonly dir = mkdtempSync(join(tmpdir(), 'sluice-redis-'));

  /** `cliArgs`: what redis-cli needs to PING it, e.g. `-a <password>` under requirepass. */
  constructor(
    readonly port: number,
    private readonly extra: string[] = [],
    private readonly cliArgs: string[] = [],
  ) {}

  async start(): Promise<void> {
    this.proc = spawn(
      'redis-server',
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        this.dir,
        '--logfile',
        join(this.dir, 'redis.log'),
        ...this.extra,
      ],
      { stdio: 'ignore' },
    );
    await waitFor(() => ping(this.port, this.cliArgs), 10_000, `redis-server on ${this.port}`);
  }

  /** Kills the process (SIGKILL: as abrupt as a crash) and waits until it is gone. */
  async stop(): Promise<void> {
    const p = this.proc;
    if (p === undefined || p.exitCode !== null) return;
    const gone = new Promise((r) => p.once('exit', r));
    p.kill('SIGKILL');
    await gone;
    this.proc = undefined;
  }

  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A Redis Cluster of 3 masters and 3 replicas on spare ports, created with redis-cli --cluster create. */
export class OwnCluster {
  readonly nodes: OwnRedis[] = [];

  async start(): Promise<void> {
    for (let i = 0; i < 6; i++) {
      const port = await freePort();
      const node = new OwnRedis(port, [
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        `nodes-${port}.conf`,
        '--cluster-node-timeout',
        '1000',
        '--cluster-replica-validity-factor',
        '0',
      ]);
      this.nodes.push(node);
      await node.start();
    }
    execFileSync(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...this.nodes.map((n) => `127.0.0.1:${n.port}`),
        '--cluster-replicas',
        '1',
        '--cluster-yes',
      ],
      { stdio: 'ignore', timeout: 30_000 },
    );
    await waitFor(() => this.nodes.every((n) => clusterOk(n.port)), 30_000, 'cluster_state:ok on every node');
    // A replica that never synced with its master cannot take over from it.
    await waitFor(() => this.nodes.every((n) => replicaSynced(n.port)), 30_000, 'every replica in sync');
  }

  get ports(): number[] {
    return this.nodes.map((n) => n.port);
  }

  /** The ports of the current masters. */
  masters(): number[] {
    const out = execFileSync(
      'redis-cli',
      ['-p', String(this.nodes.find((n) => n.proc !== undefined)!.port), 'CLUSTER', 'NODES'],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] },
    );
    return out
      .split('\n')
      .filter((l) => / master /.test(l) || /,master /.test(l))
      .filter((l) => !/fail/.test(l))
      .map((l) => Number(l.split(' ')[1]!.split(':')[1]!.split('@')[0]));
  }

  /** Waits until the dead master `port` is marked failed, a replica has taken over, and the cluster is ok. */
  async waitFailover(port: number, ms = 30_000): Promise<void> {
    const promoted = () => {
      try {
        const masters = this.masters();
        return masters.length === 3 && !masters.includes(port);
      } catch {
        return false;
      }
    };
    await waitFor(
      () => promoted() && this.nodes.filter((n) => n.proc !== undefined).every((n) => clusterOk(n.port)),
      ms,
      `failover from ${port}`,
    );
  }

  async destroy(): Promise<void> {
    for (const n of this.nodes) await n.destroy();
  }
}

function replicaSynced(port: number): boolean {
  try {
    const info = execFileSync('redis-cli', ['-p', String(port), 'INFO', 'replication'], {
      encoding: 'utf8',
      timeout: 2000,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    return /role:master/.test(info) || /master_link_status:up/.test(info);
  } catch {
    return false;
  }
}

function clusterOk(port: number): boolean {
  try {
    return /cluster_state:ok/.test(
      execFileSync('redis-cli', ['-p', String(port), 'CLUSTER', 'INFO'], {
        encoding: 'utf8',
        timeout: 2000,
        stdio: ['ignore', 'pipe', 'ignore'],
      }),
    );
  } catch {
    return false;
  }
}

/**
 * For a test file on the shared standalone Redis: an ioredis and a node-redis client, connected, and closed
 * after the file's tests (after `beforeClose`, e.g. to take the run's keys back).
 */
export async function connectBothClients(
  beforeClose?: (io: Redis) => Promise<void>,
): Promise<{ io: Redis; nr: RedisClientType }> {
  const io = new Redis(redisUrl(), { maxRetriesPerRequest: 1 });
  await once(io, 'ready');
  const nr: RedisClientType = createClient({ url: redisUrl() });
  nr.on('error', () => {});
  await nr.connect();
  after(async () => {
    await beforeClose?.(io);
    io.disconnect();
    await nr.quit();
  });
  return { io, nr };
}

/**
 * For a test file on its own Redis Cluster: starts an OwnCluster before the file's tests, connects an
 * ioredis and a node-redis cluster client to it, and tears all three down after. The clients are on the
 * returned object once `before` has run.
 */
export function useCluster(): { cluster: OwnCluster; io: Cluster; nr: RedisClusterType } {
  const ctx = { cluster: new OwnCluster() } as { cluster: OwnCluster; io: Cluster; nr: RedisClusterType };
  before(async () => {
    await ctx.cluster.start();
    ctx.io = new Cluster(
      ctx.cluster.ports.map((port) => ({ host: '127.0.0.1', port })),
      { redisOptions: { maxRetriesPerRequest: 1 } },
    );
    ctx.io.on('error', () => {});
    await once(ctx.io, 'ready');
    ctx.nr = createCluster({ rootNodes: ctx.cluster.ports.map((port) => ({ url: `redis://127.0.0.1:${port}` })) });
    ctx.nr.on('error', () => {});
    await ctx.nr.connect();
  });
  after(async () => {
    ctx.io?.disconnect();
    await ctx.nr?.close().catch(() => {});
    await ctx.cluster.destroy();
  });
  return ctx;
}

/**
 * For a fault test: a redis-server of its own on a spare port, started before the file's tests and
 * destroyed after, and every unhandled rejection meanwhile collected so the test can assert there were none.
 */
export function useOwnRedis(): { server: OwnRedis; unhandled: unknown[] } {
  const ctx = { unhandled: [] as unknown[] } as { server: OwnRedis; unhandled: unknown[] };
  const onUnhandled = (err: unknown) => ctx.unhandled.push(err);
  before(async () => {
    process.on('unhandledRejection', onUnhandled);
    ctx.server = new OwnRedis(await freePort());
    await ctx.server.start();
  });
  after(async () => {
    process.off('unhandledRejection', onUnhandled);
    await ctx.server.destroy();
  });
  return ctx;
}
